import type { Db } from './db.ts';

/**
 * The accounts' listing guard (migrations/014): how many items the last complete listing read,
 * how many listings in a row were stopped as runaways since, and until when the scheduled syncs
 * of the account do not list (R-NET-6). The policy (the bound, the pause) is src/feeds/listing-bound.ts.
 */
export interface ListingGuard {
  lastCompleteItems: number | null;
  runaways: number;
  pausedUntil: Date | null;
}

const NONE: ListingGuard = { lastCompleteItems: null, runaways: 0, pausedUntil: null };

export async function getListingGuard(db: Db, accountId: string): Promise<ListingGuard> {
  const { rows } = await db.query<{ items: number | null; runaways: number; paused: Date | null }>(
    `SELECT listing_items_last_complete AS items, listing_runaways AS runaways, listing_paused_until AS paused
       FROM accounts WHERE id = $1`,
    [accountId],
  );
  const r = rows[0];
  return r ? { lastCompleteItems: r.items, runaways: r.runaways, pausedUntil: r.paused } : NONE;
}

/** A listing reached its end: its size is the new base of the bound, and the pause is over. */
export async function recordCompleteListing(db: Db, accountId: string, items: number): Promise<void> {
  await db.query(
    `UPDATE accounts SET listing_items_last_complete = $2, listing_runaways = 0, listing_paused_until = NULL
      WHERE id = $1`,
    [accountId, items],
  );
}

/** A listing was stopped as a runaway: one more in a row, scheduled listings paused until `until`. */
export async function recordRunawayListing(db: Db, accountId: string, until: Date): Promise<void> {
  await db.query(
    `UPDATE accounts SET listing_runaways = listing_runaways + 1, listing_paused_until = $2 WHERE id = $1`,
    [accountId, until],
  );
}
