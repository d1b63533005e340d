import { HOUR } from '../util/clock.ts';

/**
 * How often a scheduled sync makes sure the published feed object is still in storage (one HEAD),
 * so that a feed deleted behind feedmirror's back (a lifecycle rule, a cleanup script) is
 * published again. Every hourly sync used to HEAD it: at 100,000 accounts that is 28 requests a
 * second to storage and, through the AWS SDK, a sixth of the worker's CPU for an unchanged sync.
 * Once in FEED_CHECK_INTERVAL_MS is enough for a fault nobody causes on purpose; an operator's
 * sync (`feedmirror sync`, the dashboard's button) and `feedmirror verify` always look.
 */
export const FEED_CHECK_INTERVAL_MS = 6 * HOUR;

/**
 * Whether this sync should HEAD the feed: when the account's previous sync ran in another window
 * of FEED_CHECK_INTERVAL_MS (or never ran). The windows are shifted per account by a hash of its
 * id, so the checks of accounts that sync at the same minute fall in different hours rather than
 * all at once. Stateless: every worker process decides the same from the account's row.
 */
export function feedCheckDue(
  accountId: string,
  previousSyncAt: Date | null,
  now: Date,
  intervalMs = FEED_CHECK_INTERVAL_MS,
): boolean {
  if (!previousSyncAt) return true;
  const shift = stableShift(accountId, intervalMs);
  const window = (t: number) => Math.floor((t + shift) / intervalMs);
  return window(now.getTime()) !== window(previousSyncAt.getTime());
}

/** FNV-1a of the id, in [0, intervalMs): any spread will do, as long as it does not change. */
function stableShift(accountId: string, intervalMs: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < accountId.length; i++) {
    h ^= accountId.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return (h * 1000) % intervalMs;
}
