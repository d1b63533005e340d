import { daysLeft } from '../util/clock.ts';

export { daysLeft };

/**
 * When expiry alerts go out (R-TOK-9: the first when fewer than 14 days of validity remain,
 * computed from the stored expiry), most distant first.
 */
export const ALERT_THRESHOLDS_DAYS = [14, 7, 3, 1] as const;

/**
 * The alert due now: the smallest threshold T with daysLeft < T (fewer than 14 days left => 14,
 * fewer than 7 => 7, ...), or null when more than 14 days remain. Deduplicated per token life by
 * alerts_sent, a daily sweep thus sends one email at 14, 7, 3 and 1 and none in between. When the
 * worker was down and thresholds were skipped, only the most urgent one due is sent, never a
 * burst of stale ones: the operator needs the current figure, not a history.
 * An expired token is not this function's business (the sweep handles it first).
 */
export function dueThreshold(expiresAt: Date, now: Date): number | null {
  const left = daysLeft(expiresAt, now);
  let due: number | null = null;
  for (const t of ALERT_THRESHOLDS_DAYS) if (left < t) due = t;
  return due;
}
