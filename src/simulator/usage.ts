import { HOUR } from '../util/clock.ts';

/**
 * The usage headers every graph answer carries (R-OWN-1): `X-App-Usage` and
 * `X-Business-Use-Case-Usage`, in percent of a budget of about 200 calls per user per hour.
 * With limits set (SimulatorOptions.limits), the simulator also throttles as the platform does:
 * a user past its calls per hour gets code 17, the app past its calls per hour code 4, each with
 * the time until the window lets a call through again in `estimated_time_to_regain_access`.
 */
export const CALLS_PER_USER_HOUR = 200;

export interface UsageLimits {
  /** Calls per user (account) per window; past it, code 17. */
  callsPerUserHour?: number;
  /** Calls of the whole app per window; past it, code 4. Also the base of X-App-Usage. */
  appCallsPerHour?: number;
  /** The sliding window (default one hour). */
  windowMs?: number;
}

export interface Throttle {
  code: 4 | 17;
  regainMinutes: number;
}

/** Times of calls in a sliding window, oldest first, with O(1) amortised eviction. */
class Window {
  private times: number[] = [];
  private head = 0;
  evict(since: number): void {
    while (this.head < this.times.length && (this.times[this.head] as number) <= since) this.head++;
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times = this.times.slice(this.head);
      this.head = 0;
    }
  }
  push(at: number): void {
    this.times.push(at);
  }
  get size(): number {
    return this.times.length - this.head;
  }
  get oldest(): number | undefined {
    return this.times[this.head];
  }
}

export class UsageMeter {
  private readonly app = new Window();
  private readonly users = new Map<string, Window>();
  private readonly windowMs: number;

  constructor(
    private readonly now: () => number,
    private readonly limits: UsageLimits = {},
  ) {
    this.windowMs = limits.windowMs ?? HOUR;
  }

  private user(accountId: string): Window {
    let w = this.users.get(accountId);
    if (!w) {
      w = new Window();
      this.users.set(accountId, w);
    }
    w.evict(this.now() - this.windowMs);
    if (w.size === 0) {
      // Forget idle users: a long run with many accounts keeps only the active ones.
      this.users.delete(accountId);
      const fresh = new Window();
      this.users.set(accountId, fresh);
      return fresh;
    }
    return w;
  }

  private evict(): void {
    this.app.evict(this.now() - this.windowMs);
  }

  /** The limit this call meets, if any (checked before it is counted; a refused call is not counted). */
  check(accountId: string | undefined): Throttle | undefined {
    this.evict();
    const now = this.now();
    const regain = (oldest: number | undefined) => Math.max(0.01, ((oldest ?? now) + this.windowMs - now) / 60_000);
    if (this.limits.appCallsPerHour !== undefined && this.app.size >= this.limits.appCallsPerHour)
      return { code: 4, regainMinutes: regain(this.app.oldest) };
    if (accountId && this.limits.callsPerUserHour !== undefined) {
      const w = this.user(accountId);
      if (w.size >= this.limits.callsPerUserHour) return { code: 17, regainMinutes: regain(w.oldest) };
    }
    return undefined;
  }

  count(accountId: string | undefined): void {
    const at = this.now();
    this.app.push(at);
    if (accountId) this.user(accountId).push(at);
  }

  headers(accountId: string | undefined, regainMinutes = 0): Record<string, string> {
    this.evict();
    const pct = (n: number, budget: number) => Math.min(100, Math.round((100 * n) / budget));
    const activeUsers = Math.max(1, this.users.size);
    const appBudget = this.limits.appCallsPerHour ?? CALLS_PER_USER_HOUR * activeUsers;
    const appCalls = pct(this.app.size, appBudget);
    const out: Record<string, string> = {
      'x-app-usage': JSON.stringify({
        call_count: appCalls,
        total_cputime: Math.floor(appCalls * 0.3),
        total_time: Math.floor(appCalls * 0.6),
      }),
    };
    const buc: Record<string, unknown> = {};
    if (accountId) {
      // When throttled, the figures are at the limit and the estimate says how long to wait.
      const calls =
        regainMinutes > 0 ? 100 : pct(this.user(accountId).size, this.limits.callsPerUserHour ?? CALLS_PER_USER_HOUR);
      buc[accountId] = [
        {
          type: 'instagram',
          call_count: calls,
          total_cputime: Math.floor(calls * 0.3),
          total_time: Math.floor(calls * 0.6),
          estimated_time_to_regain_access: regainMinutes,
        },
      ];
    }
    out['x-business-use-case-usage'] = JSON.stringify(buc);
    return out;
  }
}
