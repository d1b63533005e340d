import { DAY, HOUR } from '../util/clock.ts';
import type { ListingGuard } from '../store/listing-guard.ts';

/**
 * R-NET-6: how far an account's listing may page, and how long its scheduled syncs wait after a
 * listing had to be stopped.
 *
 * The bound is on items read while the platform still offers a next page: twice what the last
 * complete listing read plus 100 (an account does not double in an hour; 100 covers a small
 * account's burst), doubled for every runaway in a row since (an account that really grew that
 * fast gets there within a few attempts), never past the ceiling (LISTING_MAX_ITEMS), which is
 * also the bound of an account never listed completely.
 *
 * The pause: two hours after the first runaway, then four, eight, sixteen, then a day at most,
 * so a platform that never ends its paging costs a few pages a day, not an hourly budget every
 * hour. A complete listing ends it; an operator's sync never waits for it.
 */
export const DEFAULT_LISTING_MAX_ITEMS = 5_000;

export function listingItemBound(guard: Pick<ListingGuard, 'lastCompleteItems' | 'runaways'>, ceiling: number): number {
  if (guard.lastCompleteItems === null) return ceiling;
  const grown = (2 * guard.lastCompleteItems + 100) * 2 ** Math.min(guard.runaways, 20);
  return Math.min(ceiling, grown);
}

/** The pause after the `runaways`-th runaway listing in a row (1 = the first). */
export function runawayPauseMs(runaways: number): number {
  return Math.min(DAY, HOUR * 2 ** Math.max(1, Math.min(runaways, 10)));
}
