import { randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import type { CallPacer } from '../src/platform/pacing.ts';
import { HOUR, systemClock, type Clock } from '../src/util/clock.ts';

/**
 * The per-account call pacer (R-OWN-1) behind src/platform/pacing.ts's CallPacer: at most
 * `callsPerHour` calls of an account in ANY hour, not per clock hour.
 *
 * Why not rate-limiter-flexible (which the HTTP throttles use): its windows are fixed, and the
 * platform counts over a rolling hour. A fixed window lets 180 calls go at 10:59 and 180 more at
 * 11:00, 360 in two minutes against a budget of about 200 per hour; the simulator, which counts
 * as the platform does, refuses the second half. The library has no rolling window (its
 * maintainer: "there is no easy way to do that", node-rate-limiter-flexible discussion #126), so
 * this keeps a log of each account's call times in a Redis sorted set, trimmed to the window by
 * one atomic script: every worker sees the same log, and the wait it returns is exact (until the
 * oldest call in the window leaves it). Memory: one entry per call in the last hour, a few per
 * account in steady state (README Benchmarks: Redis bytes per account).
 *
 * Without Redis (a single process, the unit tests) the log is kept in memory. Time comes from the
 * injectable clock, so tests move it instead of sleeping; workers' clocks only need to agree to
 * within seconds for an hour's window.
 */
export interface PacerOptions {
  /** Calls per account in any window (default window: one hour). */
  callsPerHour: number;
  /** Redis for a log shared by every worker; a client factory, so nothing connects until a call is paced. */
  redis?: () => Redis | Cluster;
  /** Key prefix in Redis (REDIS_PREFIX). */
  prefix: string;
  /** The window; an hour except in tests. */
  windowMs?: number;
  clock?: Clock;
  /**
   * The clock an app's hold (the platform's stated wait) is counted on; default the clock above. Workers
   * give the injectable clock, the platform's time, while the per-account log keeps the process clock.
   */
  holdClock?: Clock;
}

/**
 * KEYS[1]: the account's log. ARGV: now (ms), window (ms), limit, a unique member.
 * Returns 0 when the call is logged, else the ms until the oldest call in the window leaves it.
 */
const TAKE_SCRIPT = `
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  redis.call('PEXPIRE', KEYS[1], window)
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(1, tonumber(oldest[2]) + window - now)
`;

/** KEYS[1]: an app's hold. ARGV: ms. Lengthens the hold to ms from now, never shortens it. */
// The hold's end is kept as a time on the pacer's hold clock (ARGV[1]), not as the key's TTL:
// the platform's stated wait is in the platform's time, which the injectable clock stands for
// (a compressed soak moves it; a TTL would hold for real hours). The TTL (ARGV[2]) only cleans up.
const HOLD_SCRIPT = `
local current = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if current < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return tonumber(ARGV[1])
end
return current
`;

type PacingRedis = (Redis | Cluster) & {
  feedmirrorPaceTake(key: string, now: number, windowMs: number, limit: number, member: string): Promise<number>;
  feedmirrorAppHold(key: string, until: number, ttlMs: number): Promise<number>;
};

export class AccountCallPacer implements CallPacer {
  readonly callsPerHour: number;
  private readonly windowMs: number;
  private readonly clock: Clock;
  private readonly holdClock: Clock;
  private client?: PacingRedis;
  /** The in-memory log (no Redis): call times per account, oldest first. */
  private readonly local = new Map<string, number[]>();
  private seq = 0;
  private readonly instance = randomBytes(4).toString('hex');

  constructor(private readonly opts: PacerOptions) {
    if (!(opts.callsPerHour >= 1)) throw new Error('pacer: callsPerHour must be >= 1');
    this.callsPerHour = opts.callsPerHour;
    this.windowMs = opts.windowMs ?? HOUR;
    this.clock = opts.clock ?? systemClock;
    this.holdClock = opts.holdClock ?? this.clock;
  }

  private redis(): PacingRedis | undefined {
    if (!this.opts.redis) return undefined;
    if (!this.client) {
      const client = this.opts.redis() as PacingRedis;
      // defineCommand sends EVALSHA and falls back to EVAL once after a SCRIPT FLUSH or a new server.
      if (typeof client.feedmirrorPaceTake !== 'function')
        client.defineCommand('feedmirrorPaceTake', { numberOfKeys: 1, lua: TAKE_SCRIPT });
      if (typeof client.feedmirrorAppHold !== 'function')
        client.defineCommand('feedmirrorAppHold', { numberOfKeys: 1, lua: HOLD_SCRIPT });
      this.client = client;
    }
    return this.client;
  }

  /** The local holds (no Redis): app -> until (ms). */
  private readonly localHolds = new Map<string, number>();

  private holdKey(app: string): string {
    return `${this.opts.prefix}:platform-app-hold:${app}`;
  }

  /**
   * Hold every call of one app for `ms` (the platform's app-wide limit, code 4, or a slow-down
   * while its X-App-Usage is high): shared by every worker, per app, so one app's trouble never
   * slows the accounts of another. A hold is only ever lengthened.
   */
  async holdApp(app: string, ms: number): Promise<void> {
    if (!(ms > 0)) return;
    const redis = this.redis();
    const until = this.holdClock.now().getTime() + Math.ceil(ms);
    if (redis) {
      await redis.feedmirrorAppHold(this.holdKey(app), until, Math.ceil(ms));
      return;
    }
    if ((this.localHolds.get(app) ?? 0) < until) this.localHolds.set(app, until);
  }

  /** How long the app is still held (0: not held). */
  async appHeldFor(app: string): Promise<number> {
    const redis = this.redis();
    const until = redis ? Number((await redis.get(this.holdKey(app))) ?? 0) : (this.localHolds.get(app) ?? 0);
    return Math.max(0, until - this.holdClock.now().getTime());
  }

  /** This pacer for the accounts of one app: the CallPacer a client of that app is given. */
  forApp(app: string): CallPacer {
    return {
      callsPerHour: this.callsPerHour,
      take: (accountId) => this.take(accountId),
      appWait: () => this.appHeldFor(app),
    };
  }

  async take(accountId: string): Promise<number> {
    const now = this.clock.now().getTime();
    const redis = this.redis();
    if (redis) {
      // The member only has to be unique: two calls in the same millisecond are two entries.
      const member = `${now}:${this.instance}:${this.seq++}`;
      return Number(
        await redis.feedmirrorPaceTake(
          `${this.opts.prefix}:platform-pace:${accountId}`,
          now,
          this.windowMs,
          this.callsPerHour,
          member,
        ),
      );
    }
    const log = (this.local.get(accountId) ?? []).filter((t) => t > now - this.windowMs);
    if (log.length < this.callsPerHour) {
      log.push(now);
      this.local.set(accountId, log);
      return 0;
    }
    this.local.set(accountId, log);
    return Math.max(1, log[0]! + this.windowMs - now);
  }
}
