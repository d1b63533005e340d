import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { CallPacer } from '../src/platform/pacing.ts';
import { HOUR } from '../src/util/clock.ts';

/**
 * The per-account call pacer (R-OWN-1) behind src/platform/pacing.ts's CallPacer:
 * rate-limiter-flexible's fixed window, in Redis so every worker counts the same calls (in memory
 * without Redis, for a single process and the unit tests). It lives with the jobs because it
 * shares state through Redis; the platform client only sees the interface.
 */
export interface PacerOptions {
  /** Calls per account per window (default window: one hour). */
  callsPerHour: number;
  /** Redis for a count shared by every worker; a client factory, so nothing connects until a call is paced. */
  redis?: () => Redis;
  /** Key prefix in Redis (REDIS_PREFIX). */
  prefix: string;
  /** The window; an hour except in tests. */
  windowMs?: number;
}

export class AccountCallPacer implements CallPacer {
  readonly callsPerHour: number;
  private limiter?: RateLimiterAbstract;

  constructor(private readonly opts: PacerOptions) {
    if (!(opts.callsPerHour >= 1)) throw new Error('pacer: callsPerHour must be >= 1');
    this.callsPerHour = opts.callsPerHour;
  }

  private get rl(): RateLimiterAbstract {
    if (!this.limiter) {
      const windowMs = this.opts.windowMs ?? HOUR;
      const base = { keyPrefix: `${this.opts.prefix}:platform-pace`, points: this.opts.callsPerHour, duration: Math.max(1, Math.ceil(windowMs / 1000)) };
      this.limiter = this.opts.redis ? new RateLimiterRedis({ ...base, storeClient: this.opts.redis() }) : new RateLimiterMemory(base);
    }
    return this.limiter;
  }

  async take(accountId: string): Promise<number> {
    try {
      await this.rl.consume(accountId, 1);
      return 0;
    } catch (e) {
      // A refusal is a RateLimiterRes (a count, not an error): its msBeforeNext is the wait.
      if (e instanceof RateLimiterRes) return Math.max(1, e.msBeforeNext);
      throw e;
    }
  }
}
