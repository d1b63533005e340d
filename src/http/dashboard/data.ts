import { listAccounts, type AccountWithExpiry } from '../../store/accounts.ts';
import type { Db } from '../../store/db.ts';

/**
 * What the accounts page shows per account: the account with its token's expiry (listAccounts,
 * never the token) plus counts from posts / media_copies / feed_publications. Three grouped
 * queries however many accounts there are.
 */
export interface AccountOverview extends AccountWithExpiry {
  posts: number;
  copies: number;
  copyBytes: number;
  feed: { publishedAt: Date; postCount: number; demo: boolean } | null;
}

export async function loadAccountOverviews(db: Db, now: Date): Promise<AccountOverview[]> {
  const [accounts, posts, copies, feeds] = await Promise.all([
    listAccounts(db, now),
    db.query<{ account_id: string; n: string }>('SELECT account_id, count(*) AS n FROM posts GROUP BY account_id'),
    db.query<{ account_id: string; n: string; bytes: string }>('SELECT account_id, count(*) AS n, coalesce(sum(bytes), 0) AS bytes FROM media_copies GROUP BY account_id'),
    db.query<{ account_id: string; published_at: Date; post_count: number; demo: boolean }>('SELECT account_id, published_at, post_count, demo FROM feed_publications'),
  ]);
  const postsBy = new Map(posts.rows.map((r) => [r.account_id, Number(r.n)]));
  const copiesBy = new Map(copies.rows.map((r) => [r.account_id, { n: Number(r.n), bytes: Number(r.bytes) }]));
  const feedsBy = new Map(feeds.rows.map((r) => [r.account_id, { publishedAt: r.published_at, postCount: r.post_count, demo: r.demo }]));
  return accounts.map((a) => ({
    ...a,
    posts: postsBy.get(a.id) ?? 0,
    copies: copiesBy.get(a.id)?.n ?? 0,
    copyBytes: copiesBy.get(a.id)?.bytes ?? 0,
    feed: feedsBy.get(a.id) ?? null,
  }));
}

/** 1536 => "1.5 KB"; binary units, one decimal. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}
