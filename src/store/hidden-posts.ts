import type { Db } from './db.ts';

/**
 * The feed_hidden_posts table (migrations/019_feed_hidden_posts.sql): posts the operator hid from
 * their account's published feed. A row says nothing about the post's own row or its copies,
 * which stay as they are.
 */
export interface HiddenPost {
  accountId: string;
  postId: string;
  hiddenAt: Date;
}

/** Record the hide; false when the post was hidden already (its first hiding time stays). */
export async function hideFeedPost(db: Db, accountId: string, postId: string, at: Date): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO feed_hidden_posts (account_id, post_id, hidden_at) VALUES ($1, $2, $3)
     ON CONFLICT (account_id, post_id) DO NOTHING`,
    [accountId, postId, at],
  );
  return (rowCount ?? 0) > 0;
}

/** Forget the hide; false when the post was not hidden. */
export async function unhideFeedPost(db: Db, accountId: string, postId: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM feed_hidden_posts WHERE account_id = $1 AND post_id = $2', [
    accountId,
    postId,
  ]);
  return (rowCount ?? 0) > 0;
}

/** The ids of an account's hidden posts. */
export async function hiddenFeedPostIds(db: Db, accountId: string): Promise<Set<string>> {
  const { rows } = await db.query<{ post_id: string }>('SELECT post_id FROM feed_hidden_posts WHERE account_id = $1', [
    accountId,
  ]);
  return new Set(rows.map((r) => r.post_id));
}

/** The hidden posts of these accounts, most recently hidden first. */
export async function listHiddenFeedPosts(db: Db, accountIds: readonly string[]): Promise<HiddenPost[]> {
  const { rows } = await db.query<{ account_id: string; post_id: string; hidden_at: Date }>(
    `SELECT account_id, post_id, hidden_at FROM feed_hidden_posts WHERE account_id = ANY($1::text[])
      ORDER BY hidden_at DESC, account_id, post_id`,
    [[...accountIds]],
  );
  return rows.map((r) => ({ accountId: r.account_id, postId: r.post_id, hiddenAt: r.hidden_at }));
}
