/**
 * Keeping within the platform's budget (R-OWN-1) before the platform has to say so.
 *
 * Per account: at most `callsPerHour` calls in any (rolling) hour. This layer only states the
 * contract (CallPacer); the count shared by every worker lives in Redis, which the platform layer
 * knows nothing of, so the implementation is jobs/call-pacer.ts. The
 * platform's budget is about 200 calls per user per hour; the default leaves a margin (180), and
 * the platform's own usage headers and limits stay the last word (see slowdownMs and the job
 * layer). A call that would go over is not sent: the caller learns how long until the
 * oldest call leaves the hour, and the job layer waits that out OUTSIDE the job (it delays the job), never inside it.
 *
 * App-wide: the usage headers (X-App-Usage, X-Business-Use-Case-Usage) report how much of the
 * app's budget is used. Past USAGE_SLOWDOWN_PERCENT the workers space their jobs out
 * (slowdownMs), more the closer usage gets to 100%.
 */
export interface CallPacer {
  /**
   * One call of this account is about to be sent. Resolves to 0 when it may go (the call is
   * counted), else to the milliseconds until the account's hour allows it (nothing counted).
   */
  take(accountId: string): Promise<number>;
  readonly callsPerHour: number;
  /**
   * The milliseconds its app is held for (the platform's app-wide limit, code 4, or a slow-down
   * while X-App-Usage is high), 0 when it may call. Per app: one app's hold never holds another's
   * accounts. Optional: a pacer without apps holds nothing app-wide.
   */
  appWait?(): Promise<number>;
}

/** Past this share of any usage figure the workers slow down (R-OWN-1). */
export const USAGE_SLOWDOWN_PERCENT = 80;

/**
 * The pause between job starts app-wide for a usage figure (percent): none below the threshold,
 * then growing linearly to `maxPauseMs` at 100%. At the limit itself the platform's stated wait
 * applies instead (a RateLimitedError carries it).
 */
export function slowdownMs(
  usagePercent: number,
  maxPauseMs: number,
  thresholdPercent = USAGE_SLOWDOWN_PERCENT,
): number {
  if (!(usagePercent >= thresholdPercent)) return 0;
  const share = Math.min(1, (usagePercent - thresholdPercent) / Math.max(1, 100 - thresholdPercent));
  // At the threshold itself a small pause already: the headers say usage is high.
  return Math.round(Math.max(0.05, share) * maxPauseMs);
}
