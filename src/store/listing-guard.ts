import type { Db } from './db.ts';

/**
 * The accounts' listing guard (migrations/014): how many items the last complete listing read,
 * how many listings in a row were stopped as runaways since, and until when the scheduled syncs
 * of the account do not list (R-NET-6). A complete listing's count is written with the sync's record
 * (markSynced's completeListingItems). The policy (the bound, the pause) is src/feeds/listing-bound.ts.
 */
export interface ListingGuard {
  lastCompleteItems: number | null;
  runaways: number;
  pausedUntil: Date | null;
}

const NONE: ListingGuard = { lastCompleteItems: null, runaways: 0, pausedUntil: null };

export async function getListingGuard(db: Db, accountId: string): Promise<ListingGuard> {
  const { rows } = await db.query<ListingGuardColumns>(
    `SELECT listing_items_last_complete, listing_runaways, listing_paused_until FROM accounts WHERE id = $1`,
    [accountId],
  );
  return rows[0] ? listingGuardOf(rows[0]) : NONE;
}

/** The guard's columns of an accounts row. */
export interface ListingGuardColumns {
  listing_items_last_complete: number | null;
  listing_runaways: number;
  listing_paused_until: Date | null;
}

export function listingGuardOf(r: ListingGuardColumns): ListingGuard {
  return {
    lastCompleteItems: r.listing_items_last_complete,
    runaways: r.listing_runaways,
    pausedUntil: r.listing_paused_until,
  };
}

/** A listing was stopped as a runaway: one more in a row, scheduled listings paused until `until`. */
export async function recordRunawayListing(db: Db, accountId: string, until: Date): Promise<void> {
  await db.query(
    `UPDATE accounts SET listing_runaways = listing_runaways + 1, listing_paused_until = $2 WHERE id = $1`,
    [accountId, until],
  );
}
