import { seededRandom } from '../feeds.ts';
import { HOUR, MINUTE } from '../../src/util/clock.ts';

/**
 * The chaos soak's seeded plan: which faults start when, on whom, for how long, and what the
 * accounts' owners post, edit and delete. Everything random in a run comes from here, drawn from
 * one seed, so the same seed replays the same plan (the history file records it too).
 */

/** The soak's seeded random source: the same mulberry32 the realistic feeds draw from. */
export const prng: (seed: number) => () => number = seededRandom;

export type Random = () => number;
export const pick = <T>(r: Random, list: readonly T[]): T => list[Math.floor(r() * list.length)] as T;
export const between = (r: Random, lo: number, hi: number): number => lo + r() * (hi - lo);

/** Where a fault strikes: the platform, feedmirror's own ground, or an operator's hand. */
export type FaultLayer = 'platform' | 'ground' | 'operator';

export interface FaultKindSpec {
  layer: FaultLayer;
  /** Per account (one account chosen) or the whole system. */
  scope: 'account' | 'system';
  /** Duration range in simulated ms; 0..0 is an instant action. */
  minMs: number;
  maxMs: number;
  /** Relative frequency. */
  weight: number;
}

export const FAULT_KINDS = {
  'platform-5xx': { layer: 'platform', scope: 'system', minMs: 10 * MINUTE, maxMs: 90 * MINUTE, weight: 3 },
  'platform-timeout': { layer: 'platform', scope: 'account', minMs: 10 * MINUTE, maxMs: 60 * MINUTE, weight: 2 },
  'app-rate-limit': { layer: 'platform', scope: 'system', minMs: 10 * MINUTE, maxMs: 60 * MINUTE, weight: 2 },
  'account-rate-limit': { layer: 'platform', scope: 'account', minMs: 10 * MINUTE, maxMs: 90 * MINUTE, weight: 2 },
  'empty-listing': { layer: 'platform', scope: 'account', minMs: 30 * MINUTE, maxMs: 3 * HOUR, weight: 3 },
  'links-without-oe': { layer: 'platform', scope: 'account', minMs: 1 * HOUR, maxMs: 6 * HOUR, weight: 2 },
  'malformed-items': { layer: 'platform', scope: 'account', minMs: 30 * MINUTE, maxMs: 3 * HOUR, weight: 2 },
  'endless-paging': { layer: 'platform', scope: 'account', minMs: 30 * MINUTE, maxMs: 2 * HOUR, weight: 2 },
  'token-revoked': { layer: 'platform', scope: 'account', minMs: 2 * HOUR, maxMs: 6 * HOUR, weight: 2 },
  'password-changed': { layer: 'platform', scope: 'account', minMs: 2 * HOUR, maxMs: 6 * HOUR, weight: 1 },
  'image-host-down': { layer: 'platform', scope: 'system', minMs: 30 * MINUTE, maxMs: 1 * HOUR, weight: 2 },
  'links-die-early': { layer: 'platform', scope: 'account', minMs: 30 * MINUTE, maxMs: 2 * HOUR, weight: 2 },
  'redis-flush': { layer: 'ground', scope: 'system', minMs: 0, maxMs: 0, weight: 2 },
  'redis-restart': { layer: 'ground', scope: 'system', minMs: 5 * MINUTE, maxMs: 20 * MINUTE, weight: 1 },
  'postgres-restart': { layer: 'ground', scope: 'system', minMs: 5 * MINUTE, maxMs: 20 * MINUTE, weight: 1 },
  'worker-killed': { layer: 'ground', scope: 'system', minMs: 5 * MINUTE, maxMs: 30 * MINUTE, weight: 2 },
  'storage-down': { layer: 'ground', scope: 'system', minMs: 10 * MINUTE, maxMs: 45 * MINUTE, weight: 2 },
  'objects-deleted': { layer: 'ground', scope: 'account', minMs: 30 * MINUTE, maxMs: 90 * MINUTE, weight: 1 },
  'clock-skew': { layer: 'ground', scope: 'system', minMs: 1 * HOUR, maxMs: 4 * HOUR, weight: 1 },
  'account-added': { layer: 'operator', scope: 'system', minMs: 0, maxMs: 0, weight: 1 },
  'account-removed': { layer: 'operator', scope: 'account', minMs: 0, maxMs: 0, weight: 1 },
  'verify-repair': { layer: 'operator', scope: 'system', minMs: 0, maxMs: 0, weight: 1 },
  'key-rotation': { layer: 'operator', scope: 'system', minMs: 0, maxMs: 0, weight: 1 },
  'restart-all': { layer: 'operator', scope: 'system', minMs: 0, maxMs: 0, weight: 1 },
} as const satisfies Record<string, FaultKindSpec>;

export type FaultKind = keyof typeof FAULT_KINDS;
export const FAULT_KIND_NAMES = Object.keys(FAULT_KINDS) as FaultKind[];

export interface PlannedFault {
  id: number;
  kind: FaultKind;
  /** Simulated ms since the run's start. */
  startMs: number;
  endMs: number;
  /** The account index (into the plan's accounts) for per-account faults. */
  account?: number;
  /** A number of the fault's own, for choices made when it starts (which posts, which worker). */
  salt: number;
}

export type OwnerAction = 'post' | 'edit' | 'delete';
export interface PlannedOwnerEvent {
  atMs: number;
  account: number;
  action: OwnerAction;
  salt: number;
}

export interface Plan {
  seed: number;
  days: number;
  accounts: number;
  /** Posts of each account at the start (1..100, truncated geometric). */
  startPosts: number[];
  faults: PlannedFault[];
  owners: PlannedOwnerEvent[];
}

export interface PlanOptions {
  seed: number;
  days: number;
  accounts: number;
  postsMean: number;
  /** Faults per simulated day (all kinds together). */
  faultsPerDay: number;
  /** The first stretch is calm (the first sync of every account); faults start after it. */
  calmMs: number;
}

/** A truncated geometric draw over 1..100 with about this mean, as real feeds spread. */
function postsOf(r: Random, mean: number): number {
  const p = 1 / mean;
  const n = 1 + Math.floor(Math.log(1 - r()) / Math.log(1 - p));
  return Math.min(100, Math.max(1, n));
}

export function makePlan(o: PlanOptions): Plan {
  const r = prng(o.seed);
  const totalMs = o.days * 24 * HOUR;
  const startPosts = Array.from({ length: o.accounts }, () => postsOf(r, o.postsMean));
  const weights = FAULT_KIND_NAMES.map((k) => FAULT_KINDS[k].weight);
  const sum = weights.reduce((a, b) => a + b, 0);
  const count = Math.max(FAULT_KIND_NAMES.length, Math.round(o.faultsPerDay * o.days));
  const faults: PlannedFault[] = [];
  for (let i = 0; i < count; i++) {
    // Every kind at least once (the first round goes through the list), then by weight.
    let kind: FaultKind;
    if (i < FAULT_KIND_NAMES.length) kind = FAULT_KIND_NAMES[i] as FaultKind;
    else {
      let x = r() * sum;
      kind = FAULT_KIND_NAMES[FAULT_KIND_NAMES.length - 1] as FaultKind;
      for (let k = 0; k < weights.length; k++) {
        x -= weights[k] as number;
        if (x < 0) {
          kind = FAULT_KIND_NAMES[k] as FaultKind;
          break;
        }
      }
    }
    const spec: FaultKindSpec = FAULT_KINDS[kind];
    const duration = Math.round(between(r, spec.minMs, spec.maxMs));
    // Faults end at least three hours before the run does, so recovery is measured for every one.
    const latest = Math.max(o.calmMs, totalMs - duration - 3 * HOUR);
    const startMs = Math.round(between(r, o.calmMs, latest));
    faults.push({
      id: 0,
      kind,
      startMs,
      endMs: startMs + duration,
      ...(spec.scope === 'account' ? { account: Math.floor(r() * o.accounts) } : {}),
      salt: Math.floor(r() * 2 ** 31),
    });
  }
  faults.sort((a, b) => a.startMs - b.startMs);
  faults.forEach((f, i) => (f.id = i + 1));

  // Owners: about one new post every two days, an edit every four, a deletion every eight.
  const owners: PlannedOwnerEvent[] = [];
  const rates: Array<[OwnerAction, number]> = [
    ['post', 0.5],
    ['edit', 0.25],
    ['delete', 0.125],
  ];
  for (let a = 0; a < o.accounts; a++)
    for (const [action, perDay] of rates) {
      let t = o.calmMs;
      for (;;) {
        t += Math.round((-Math.log(1 - r()) / perDay) * 24 * HOUR);
        if (t >= totalMs - 2 * HOUR) break;
        owners.push({ atMs: t, account: a, action, salt: Math.floor(r() * 2 ** 31) });
      }
    }
  owners.sort((x, y) => x.atMs - y.atMs || x.account - y.account);
  return { seed: o.seed, days: o.days, accounts: o.accounts, startPosts, faults, owners };
}
