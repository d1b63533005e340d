import type { Db } from './db.ts';

/**
 * Per-account counts for the dashboard's accounts page: posts, copies and their bytes, and what
 * was last published. Three grouped queries however many accounts there are.
 */
export interface AccountCounts {
  posts: Map<string, number>;
  copies: Map<string, { n: number; bytes: number }>;
  feeds: Map<string, { publishedAt: Date; postCount: number; demo: boolean }>;
}

export async function accountCounts(db: Db): Promise<AccountCounts> {
  const [posts, copies, feeds] = await Promise.all([
    db.query<{ account_id: string; n: string }>('SELECT account_id, count(*) AS n FROM posts GROUP BY account_id'),
    db.query<{ account_id: string; n: string; bytes: string }>(
      'SELECT account_id, count(*) AS n, coalesce(sum(bytes), 0) AS bytes FROM media_copies GROUP BY account_id',
    ),
    db.query<{ account_id: string; published_at: Date; post_count: number; demo: boolean }>(
      'SELECT account_id, published_at, post_count, demo FROM feed_publications',
    ),
  ]);
  return {
    posts: new Map(posts.rows.map((r) => [r.account_id, Number(r.n)])),
    copies: new Map(copies.rows.map((r) => [r.account_id, { n: Number(r.n), bytes: Number(r.bytes) }])),
    feeds: new Map(
      feeds.rows.map((r) => [r.account_id, { publishedAt: r.published_at, postCount: r.post_count, demo: r.demo }]),
    ),
  };
}
