import { HOUR } from '../util/clock.ts';
import { stableIdHash } from '../util/ids.ts';

/**
 * How often a scheduled sync makes sure the published feed object is still in storage (one HEAD),
 * so that a feed deleted behind feedmirror's back (a lifecycle rule, a cleanup script) is
 * published again. A HEAD on every hourly sync would be one storage request per account and hour,
 * through the AWS SDK a large share of what an unchanged sync costs the worker, to catch a fault
 * nobody causes on purpose: once in FEED_CHECK_INTERVAL_MS is enough. An operator's sync
 * (`feedmirror sync`, the dashboard's button) and `feedmirror verify` always look.
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
  // Any spread will do, as long as it does not change.
  const shift = (stableIdHash(accountId) * 1000) % intervalMs;
  const window = (t: number) => Math.floor((t + shift) / intervalMs);
  return window(now.getTime()) !== window(previousSyncAt.getTime());
}
