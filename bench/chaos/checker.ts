import { HOUR } from '../../src/util/clock.ts';

/**
 * The chaos soak's independent checker. It decides every invariant from what the outside world
 * shows: the published feeds and status documents (read from the storage as a site reads them),
 * the platform's truth (the simulator: which posts exist, since when), the outbox folder, the
 * webhook sink and the processes' output. It never reads feedmirror's tables or queues.
 *
 * The run feeds it observations (`observeFeed`, `observeStatus`, ...) and the facts it made
 * happen (`sourcePost`, `disturb`, ...); it counts checks and records violations with the
 * account, the simulated time, the faults active then and the evidence.
 */

export const INVARIANTS = [
  'no-post-lost',
  'fresh-within-2h',
  'images-answer',
  'copies-sound',
  'alerts-timely-and-bounded',
  'health-honest',
  'recovery-bounded',
  'no-secret-leaked',
  'resources-bounded',
] as const;
export type Invariant = (typeof INVARIANTS)[number];

export interface Violation {
  invariant: Invariant;
  account: string | null;
  /** Simulated time, ISO. */
  at: string;
  activeFaults: string[];
  evidence: string;
}

/** Within this long after the account was last disturbed, a change at the source must show. */
export const FRESHNESS_MS = 2 * HOUR;
/** A revocation is alerted within this long (of simulated time). */
export const ALERT_WITHIN_MS = HOUR;
/** Health may say `needs_owner` this long for a well account (a check's step of slack included). */
export const HEALTH_FAIL_GRACE_MS = HOUR;
/** At-least-once delivery: more copies of one alert than this for one episode is a flood. */
export const MAX_ALERT_COPIES = 3;

interface SourcePost {
  createdAt: number;
  deletedAt: number | null;
}

export interface AccountTruth {
  id: string;
  username: string;
  /** The account is in feedmirror (added, not removed). */
  connected: boolean;
  removedAt: number | null;
  /** Token revoked or password changed, and not yet reconnected: since when. */
  brokenSince: number | null;
  /** Until when it counts as disturbed (faults touching it): Infinity while one is active. */
  disturbedUntil: number;
  posts: Map<string, SourcePost>;
  /** The post ids of its last published feed (null: none seen yet). */
  lastFeed: Set<string> | null;
}

export class Checker {
  readonly checks: Record<Invariant, number> = Object.fromEntries(INVARIANTS.map((i) => [i, 0])) as Record<
    Invariant,
    number
  >;
  readonly violations: Violation[] = [];
  readonly accounts = new Map<string, AccountTruth>();
  /** Violations already reported per (invariant, account, key): one record each, not one per check. */
  private readonly reported = new Set<string>();

  constructor(private readonly activeFaults: () => string[]) {}

  account(id: string, username: string, at: number): AccountTruth {
    let a = this.accounts.get(id);
    if (!a) {
      a = {
        id,
        username,
        connected: true,
        removedAt: null,
        brokenSince: null,
        disturbedUntil: at,
        posts: new Map(),
        lastFeed: null,
      };
      this.accounts.set(id, a);
    }
    return a;
  }

  sourcePost(accountId: string, postId: string, at: number): void {
    this.accounts.get(accountId)?.posts.set(postId, { createdAt: at, deletedAt: null });
  }

  sourceDelete(accountId: string, postId: string, at: number): void {
    const p = this.accounts.get(accountId)?.posts.get(postId);
    if (p) p.deletedAt = at;
  }

  violate(invariant: Invariant, account: string | null, at: number, evidence: string, key = evidence): void {
    const k = `${invariant}|${account ?? ''}|${key}`;
    if (this.reported.has(k)) return;
    this.reported.add(k);
    this.violations.push({
      invariant,
      account,
      at: new Date(at).toISOString(),
      activeFaults: this.activeFaults(),
      evidence,
    });
  }

  /**
   * One published feed as read now (null: none published). `sourceIds`: the posts the platform
   * holds now. Invariants 1 (no post lost) and 2 (fresh within 2 h of the last disturbance).
   */
  observeFeed(a: AccountTruth, feedIds: Set<string> | null, sourceIds: Set<string>, now: number): void {
    if (!a.connected) {
      a.lastFeed = null;
      return;
    }
    if (feedIds) {
      this.checks['no-post-lost']++;
      for (const id of a.lastFeed ?? [])
        if (!feedIds.has(id) && sourceIds.has(id))
          this.violate(
            'no-post-lost',
            a.id,
            now,
            `post ${id} left the published feed while it still exists at the source`,
            id,
          );
    }
    if (a.brokenSince === null) {
      this.checks['fresh-within-2h']++;
      const calmSince = a.disturbedUntil;
      for (const [id, p] of a.posts) {
        const due = Math.max(p.createdAt, calmSince) + FRESHNESS_MS;
        if (p.deletedAt === null && now >= due && !(feedIds?.has(id) ?? false))
          this.violate(
            'fresh-within-2h',
            a.id,
            now,
            `post ${id} at the source since ${new Date(p.createdAt).toISOString()} is not in the feed ${Math.round((now - Math.max(p.createdAt, calmSince)) / 60_000)} min after the account was last disturbed`,
            `in:${id}`,
          );
        if (p.deletedAt !== null && now >= Math.max(p.deletedAt, calmSince) + FRESHNESS_MS && feedIds?.has(id))
          this.violate(
            'fresh-within-2h',
            a.id,
            now,
            `post ${id} deleted at the source at ${new Date(p.deletedAt).toISOString()} is still in the feed`,
            `out:${id}`,
          );
      }
    }
    if (feedIds) a.lastFeed = feedIds;
  }

  /** Whether the feed shows exactly the source's posts older than `settleMs` (for recovery times). */
  current(a: AccountTruth, feedIds: Set<string> | null, now: number, settleMs: number): boolean {
    if (!a.connected) return true;
    for (const [id, p] of a.posts) {
      if (p.deletedAt === null && p.createdAt <= now - settleMs && !feedIds?.has(id)) return false;
      if (p.deletedAt !== null && p.deletedAt <= now - settleMs && feedIds?.has(id)) return false;
    }
    return true;
  }

  /** Invariant 3: an image URL of a published feed answered `status`. */
  observeImage(a: AccountTruth, url: string, status: number, contentType: string | null, now: number): void {
    this.checks['images-answer']++;
    if (status !== 200)
      this.violate('images-answer', a.id, now, `image ${url} of the published feed answered HTTP ${status}`, url);
    // Invariant 4: what was copied is an image (never an error page kept as a copy).
    this.checks['copies-sound']++;
    if (status === 200 && !(contentType ?? '').startsWith('image/'))
      this.violate('copies-sound', a.id, now, `image ${url} is stored as ${contentType ?? 'no type'}`, `type:${url}`);
  }

  /** Invariant 4: a copy was fetched from the image host on a link already dead (the request log). */
  observeDeadLinkFetch(a: AccountTruth | null, url: string, status: number, at: number): void {
    this.checks['copies-sound']++;
    if (status >= 200 && status < 300)
      this.violate('copies-sound', a?.id ?? null, at, `a link past its expiry was answered ${status}: ${url}`, url);
  }

  /** Invariant 5: an alert (email or webhook) about an account arrived; `episode` is the revocation it answers. */
  observeAlertCount(a: AccountTruth, channel: string, count: number, now: number): void {
    this.checks['alerts-timely-and-bounded']++;
    if (count > MAX_ALERT_COPIES)
      this.violate(
        'alerts-timely-and-bounded',
        a.id,
        now,
        `${count} ${channel} for one revocation (at-least-once explains at most ${MAX_ALERT_COPIES})`,
        `flood:${channel}:${a.brokenSince ?? 'x'}`,
      );
  }

  /** Invariant 5: a revocation at `since` had no alert by `now`. */
  observeAlertMissing(a: AccountTruth, channel: string, since: number, now: number): void {
    this.checks['alerts-timely-and-bounded']++;
    if (now - since > ALERT_WITHIN_MS)
      this.violate(
        'alerts-timely-and-bounded',
        a.id,
        now,
        `no ${channel} ${Math.round((now - since) / 60_000)} min after the token was revoked`,
        `missing:${channel}:${since}`,
      );
  }

  /** Invariant 6: the public status document's state against the truth. */
  observeHealth(a: AccountTruth, state: string | null, feedCurrent: boolean, now: number, maskedUntil = 0): void {
    if (!a.connected || state === null) return;
    this.checks['health-honest']++;
    if (state === 'connected' && a.brokenSince !== null && now - Math.max(a.brokenSince, maskedUntil) > ALERT_WITHIN_MS)
      this.violate(
        'health-honest',
        a.id,
        now,
        `status says connected ${Math.round((now - a.brokenSince) / 60_000)} min after the token was revoked`,
        `ok-broken:${a.brokenSince}`,
      );
    if (
      state === 'needs_owner' &&
      a.brokenSince === null &&
      feedCurrent &&
      now - a.disturbedUntil > HEALTH_FAIL_GRACE_MS
    )
      this.violate(
        'health-honest',
        a.id,
        now,
        `status says needs_owner for a well account, ${Math.round((now - a.disturbedUntil) / 60_000)} min after its last disturbance`,
        `fail-well:${a.disturbedUntil}`,
      );
  }

  /** Invariant 8: `text` (a log, an email, a webhook, a published file) holds none of `secrets`. */
  observeText(where: string, text: string, secrets: Iterable<string>, now: number): void {
    this.checks['no-secret-leaked']++;
    for (const s of secrets)
      if (s.length >= 8 && text.includes(s))
        this.violate(
          'no-secret-leaked',
          null,
          now,
          `a secret (${s.slice(0, 3)}…, ${s.length} chars) appears in ${where}`,
          `${where}:${s}`,
        );
  }

  /** Invariant 7: recovery after a fault ended (or a failure to recover before the run ended). */
  observeRecovery(kind: string, ms: number | null, boundMs: number, endedAt: number, now: number): void {
    this.checks['recovery-bounded']++;
    if (ms === null || ms > boundMs)
      this.violate(
        'recovery-bounded',
        null,
        now,
        ms === null
          ? `after ${kind} ended at ${new Date(endedAt).toISOString()} the accounts were not all current by the end of the run`
          : `after ${kind} the accounts took ${Math.round(ms / 60_000)} min to be current again (bound ${Math.round(boundMs / 60_000)} min)`,
        `${kind}:${endedAt}`,
      );
  }

  /** Invariant 9: a resource per account against its first sample, given how much the feeds grew. */
  observeResource(name: string, first: number, value: number, feedGrowth: number, now: number): void {
    this.checks['resources-bounded']++;
    // Twice the feeds' growth, plus a fixed slack for warm-up (caches, JIT, connection pools).
    const bound = first * Math.max(1, feedGrowth) * 2 + 64 * 1024 * 1024;
    if (value > bound)
      this.violate(
        'resources-bounded',
        null,
        now,
        `${name} grew from ${first} to ${value} bytes while the feeds grew ${feedGrowth.toFixed(2)}x`,
        name,
      );
  }

  summary(): Record<Invariant, { checks: number; violations: number }> {
    return Object.fromEntries(
      INVARIANTS.map((i) => [
        i,
        { checks: this.checks[i], violations: this.violations.filter((v) => v.invariant === i).length },
      ]),
    ) as Record<Invariant, { checks: number; violations: number }>;
  }
}
