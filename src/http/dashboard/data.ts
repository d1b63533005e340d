import { listAccounts, type AccountWithExpiry } from '../../store/accounts.ts';
import type { Db } from '../../store/db.ts';
import { accountCounts } from '../../store/overview.ts';
import { listRemovalHolds, type StoredRemovalHold } from '../../store/holds.ts';

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
  /** A removal from the feed waiting for a second listing or the operator (R-OWN-7). */
  removalHold: StoredRemovalHold | null;
}

export async function loadAccountOverviews(db: Db, now: Date): Promise<AccountOverview[]> {
  const [accounts, counts, holds] = await Promise.all([listAccounts(db, now), accountCounts(db), listRemovalHolds(db)]);
  const { posts: postsBy, copies: copiesBy, feeds: feedsBy } = counts;
  return accounts.map((a) => ({
    ...a,
    posts: postsBy.get(a.id) ?? 0,
    copies: copiesBy.get(a.id)?.n ?? 0,
    copyBytes: copiesBy.get(a.id)?.bytes ?? 0,
    feed: feedsBy.get(a.id) ?? null,
    removalHold: holds.get(a.id) ?? null,
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
