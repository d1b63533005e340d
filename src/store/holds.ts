import type { Db } from './db.ts';

/**
 * The removal_holds table (migrations/009_removal_holds.sql): a removal from a published feed that
 * waits for a second complete listing or the operator's confirmation (R-OWN-7).
 */
export interface RemovalHold {
  /** When a complete listing first asked for this removal. */
  since: Date;
  /** Media ids it would remove. */
  removing: string[];
  /** Posts in the listing that asked for it. */
  listedPosts: number;
  /** Posts in the published feed it would shrink. */
  publishedPosts: number;
}

export interface StoredRemovalHold extends RemovalHold {
  accountId: string;
  /** The latest complete listing that asked for it again. */
  lastSeenAt: Date;
}

export interface HoldRow {
  account_id: string;
  since: Date;
  last_seen_at: Date;
  removing: string[];
  listed_posts: number;
  published_posts: number;
}

export function toHold(r: HoldRow): StoredRemovalHold {
  return {
    accountId: r.account_id,
    since: r.since,
    lastSeenAt: r.last_seen_at,
    removing: [...r.removing].sort(),
    listedPosts: r.listed_posts,
    publishedPosts: r.published_posts,
  };
}

/** The removal held for an account, or null when none is. */
export async function getRemovalHold(db: Db, accountId: string): Promise<StoredRemovalHold | null> {
  const { rows } = await db.query<HoldRow>('SELECT * FROM removal_holds WHERE account_id = $1', [accountId]);
  return rows[0] ? toHold(rows[0]) : null;
}

/** Every held removal, by account id (one query for lists of accounts). */
export async function listRemovalHolds(db: Db): Promise<Map<string, StoredRemovalHold>> {
  const { rows } = await db.query<HoldRow>('SELECT * FROM removal_holds ORDER BY account_id');
  return new Map(rows.map((r) => [r.account_id, toHold(r)]));
}

/** Record (or replace) an account's held removal; `lastSeenAt` is the listing that asked for it. */
export async function saveRemovalHold(db: Db, accountId: string, hold: RemovalHold, lastSeenAt: Date): Promise<void> {
  await db.query(
    `INSERT INTO removal_holds (account_id, since, last_seen_at, removing, listed_posts, published_posts)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (account_id) DO UPDATE SET since = EXCLUDED.since, last_seen_at = EXCLUDED.last_seen_at,
       removing = EXCLUDED.removing, listed_posts = EXCLUDED.listed_posts, published_posts = EXCLUDED.published_posts`,
    [accountId, hold.since, lastSeenAt, [...hold.removing].sort(), hold.listedPosts, hold.publishedPosts],
  );
}

/** Drop an account's held removal and return it (null when there was none): one statement, one winner. */
export async function takeRemovalHold(db: Db, accountId: string): Promise<StoredRemovalHold | null> {
  const { rows } = await db.query<HoldRow>('DELETE FROM removal_holds WHERE account_id = $1 RETURNING *', [accountId]);
  return rows[0] ? toHold(rows[0]) : null;
}
