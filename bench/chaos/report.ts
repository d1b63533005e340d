import type { Checker, Invariant, Violation } from './checker.ts';
import type { FaultKind, Plan } from './schedule.ts';

/**
 * The chaos soak's report: the JSON `npm run bench -- --chaos --json` prints (field names as the
 * soak's specification gives them) and its few lines for a person.
 */
export interface RecoveryFigures {
  count: number;
  /** Simulated minutes from the fault's end until every account was current again. */
  p50Minutes: number | null;
  p99Minutes: number | null;
  worstMinutes: number | null;
  /** Recoveries that did not happen before the run ended. */
  notRecovered: number;
}

export interface ChaosReport {
  seed: number;
  simulatedDays: number;
  accounts: number;
  faults: Partial<Record<FaultKind, number>>;
  invariants: Record<Invariant, { checks: number; violations: number }>;
  violations: Violation[];
  recovery: Partial<Record<FaultKind, RecoveryFigures>>;
  resources: Record<string, { first: number; last: number }>;
  wallSeconds: number;
  history: string;
}

function quantile(sorted: number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number;
}

export function buildReport(o: {
  plan: Plan;
  faults: Partial<Record<FaultKind, number>>;
  checker: Checker;
  recoveries: Array<{ kind: FaultKind; ms: number | null }>;
  resources: Record<string, { first: number; last: number }>;
  wallSeconds: number;
  historyFile: string;
}): ChaosReport {
  const recovery: Partial<Record<FaultKind, RecoveryFigures>> = {};
  for (const kind of new Set(o.recoveries.map((r) => r.kind))) {
    const all = o.recoveries.filter((r) => r.kind === kind);
    const ms = all
      .map((r) => r.ms)
      .filter((m): m is number => m !== null)
      .sort((a, b) => a - b);
    const min = (v: number | null) => (v === null ? null : Math.round(v / 60_000));
    recovery[kind] = {
      count: all.length,
      p50Minutes: min(quantile(ms, 0.5)),
      p99Minutes: min(quantile(ms, 0.99)),
      worstMinutes: min(ms.length ? (ms[ms.length - 1] as number) : null),
      notRecovered: all.length - ms.length,
    };
  }
  return {
    seed: o.plan.seed,
    simulatedDays: o.plan.days,
    accounts: o.plan.accounts,
    faults: o.faults,
    invariants: o.checker.summary(),
    violations: o.checker.violations,
    recovery,
    resources: o.resources,
    wallSeconds: Math.round(o.wallSeconds),
    history: o.historyFile,
  };
}

/** The report for a person: the totals, then each violation on a line. */
export function formatReport(r: ChaosReport): string {
  const lines = [
    `chaos soak: seed ${r.seed}, ${r.simulatedDays} simulated days, ${r.accounts} accounts, ${r.wallSeconds} s of wall time`,
    `faults injected: ${Object.entries(r.faults)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
    'invariants:',
    ...Object.entries(r.invariants).map(
      ([k, v]) => `  ${k.padEnd(26)} ${String(v.checks).padStart(7)} checks  ${v.violations} violations`,
    ),
    'recovery (simulated minutes, p50/p99/worst):',
    ...Object.entries(r.recovery).map(
      ([k, v]) =>
        `  ${k.padEnd(20)} ${v.p50Minutes ?? '-'}/${v.p99Minutes ?? '-'}/${v.worstMinutes ?? '-'}${v.notRecovered ? ` (${v.notRecovered} not recovered)` : ''}`,
    ),
    ...r.violations.map(
      (v) => `VIOLATION ${v.invariant} ${v.account ?? '-'} at ${v.at} [${v.activeFaults.join(' ')}]: ${v.evidence}`,
    ),
    `history: ${r.history}`,
  ];
  return `${lines.join('\n')}\n`;
}
