import { HOUR, type Clock } from '../util/clock.ts';

/**
 * The usage headers every graph answer carries (R-OWN-1): `X-App-Usage` and
 * `X-Business-Use-Case-Usage`, in percent of a budget of about 200 calls per user per hour
 * (DESIGN.md). The simulator only reports usage; it throttles only through injected faults.
 */
export const CALLS_PER_USER_HOUR = 200;

export class UsageMeter {
  private calls: Array<{ at: number; accountId?: string }> = [];

  constructor(private readonly clock: Clock) {}

  count(accountId: string | undefined): void {
    this.calls.push({ at: this.clock.now().getTime(), accountId });
  }

  private recent(): Array<{ at: number; accountId?: string }> {
    const since = this.clock.now().getTime() - HOUR;
    this.calls = this.calls.filter((c) => c.at > since);
    return this.calls;
  }

  headers(accountId: string | undefined, regainMinutes = 0): Record<string, string> {
    const recent = this.recent();
    const users = new Set(recent.map((c) => c.accountId).filter(Boolean)).size;
    const pct = (n: number, budget: number) => Math.min(100, Math.round((100 * n) / budget));
    const appCalls = pct(recent.length, CALLS_PER_USER_HOUR * Math.max(1, users));
    const out: Record<string, string> = {
      'x-app-usage': JSON.stringify({ call_count: appCalls, total_cputime: Math.floor(appCalls * 0.3), total_time: Math.floor(appCalls * 0.6) }),
    };
    const buc: Record<string, unknown> = {};
    if (accountId) {
      // When throttled, the figures are at the limit and the estimate says how long to wait.
      const calls = regainMinutes > 0 ? 100 : pct(recent.filter((c) => c.accountId === accountId).length, CALLS_PER_USER_HOUR);
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
