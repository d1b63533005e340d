import pg from 'pg';
import { toAccount, type Account, type AccountRow } from './accounts.ts';
import type { Db } from './db.ts';
import { toHold, type HoldRow, type StoredRemovalHold } from './holds.ts';
import { listingGuardOf, type ListingGuard, type ListingGuardColumns } from './listing-guard.ts';
import {
  copySourcesOf,
  toFeedPublication,
  type CopySourceRow,
  type FeedPublication,
  type FeedPublicationRow,
} from './posts.ts';
import { SEALED_TOKEN_COLUMNS, type SealedTokenRow } from './tokens.ts';

/**
 * Everything a sync reads before it lists, in one round trip: the account (its listing guard
 * included), its token (still sealed: a sync that skips the account never decrypts it), its
 * published feed, its held removal, the ids of its stored posts and the sources of its recorded
 * copies (less those whose objects were found missing from storage: the sync copies them
 * again). A round trip to PostgreSQL costs the worker CPU of its own (the socket write, the
 * parse, the promise), of the order of the whole comparison of a small listing, so a query per
 * item would make the round trips most of an unchanged hourly sync (docs/benchmarks.md, "The cost
 * of an unchanged sync"; test/integration/sync-queries.test.ts counts them).
 *
 * One text of six statements, sent with the simple query protocol: parameters would need the
 * extended protocol, which takes one statement per round trip. The account id is the only value
 * and goes in as a quoted literal (pg.escapeLiteral). Nothing is prepared by name (R-SCL-2), so a
 * transaction pooler in front of PostgreSQL sees six plain statements.
 */
export interface SyncContext {
  account: Account | null;
  guard: ListingGuard;
  token: SealedTokenRow | null;
  publication: FeedPublication | null;
  hold: StoredRemovalHold | null;
  /** Every stored post's media id, sorted. */
  storedPostIds: string[];
  /** Each recorded copy's source by copySourceKey; a copy marked missing from storage is left out (not copied). */
  copySources: Map<string, string>;
}

const NO_GUARD: ListingGuard = { lastCompleteItems: null, runaways: 0, pausedUntil: null };

export async function readSyncContext(db: Db, accountId: string): Promise<SyncContext> {
  const id = pg.escapeLiteral(accountId);
  const results = (await db.query(
    [
      `SELECT * FROM accounts WHERE id = ${id}`,
      `SELECT ${SEALED_TOKEN_COLUMNS} FROM tokens WHERE account_id = ${id}`,
      `SELECT * FROM feed_publications WHERE account_id = ${id}`,
      `SELECT * FROM removal_holds WHERE account_id = ${id}`,
      `SELECT media_id FROM posts WHERE account_id = ${id} ORDER BY media_id`,
      // A copy whose objects are missing from storage (missing-copies.ts) counts as not copied (R-HLT-4).
      `SELECT c.media_id, c.slot, c.source_id FROM media_copies c WHERE c.account_id = ${id}
          AND NOT EXISTS (SELECT 1 FROM missing_copies m
                           WHERE m.account_id = c.account_id AND m.media_id = c.media_id AND m.slot = c.slot)`,
    ].join(';\n'),
  )) as unknown as pg.QueryResult[];
  const [accounts, tokens, publications, holds, posts, copies] = results.map((r): unknown[] => r.rows) as [
    Array<AccountRow & ListingGuardColumns>,
    SealedTokenRow[],
    FeedPublicationRow[],
    HoldRow[],
    Array<{ media_id: string }>,
    CopySourceRow[],
  ];
  const account = accounts[0];
  return {
    account: account ? toAccount(account) : null,
    guard: account ? listingGuardOf(account) : NO_GUARD,
    token: tokens[0] ?? null,
    publication: publications[0] ? toFeedPublication(publications[0]) : null,
    hold: holds[0] ? toHold(holds[0]) : null,
    storedPostIds: posts.map((r) => r.media_id),
    copySources: copySourcesOf(copies),
  };
}
