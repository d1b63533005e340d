import { listAccounts, type AccountWithExpiry } from '../../store/accounts.ts';
import type { Db } from '../../store/db.ts';
import { accountCounts } from '../../store/overview.ts';
import { listRemovalHolds, type StoredRemovalHold } from '../../store/holds.ts';
import { healthById, VERDICTS, type AccountHealth, type HealthPolicy } from '../../accounts/health.ts';

/**
 * What the accounts page shows per account: the account with its token's expiry (listAccounts,
 * never the token) plus counts from posts / media_copies / feed_publications, its removal hold,
 * and health (its newest reconnect link among the health's facts): a fixed number of grouped
 * queries however many accounts.
 */
export interface AccountOverview extends AccountWithExpiry {
  posts: number;
  copies: number;
  copyBytes: number;
  feed: { publishedAt: Date; postCount: number; demo: boolean } | null;
  /** A removal from the feed waiting for a second listing or the operator (R-OWN-7). */
  removalHold: StoredRemovalHold | null;
  /** The account's health (R-HLT-1): the same verdict `accounts list`, /metrics and doctor show. */
  health: AccountHealth;
}

/** Every account with its counts and health, failing accounts first (then by username). */
export async function loadAccountOverviews(db: Db, policy: HealthPolicy): Promise<AccountOverview[]> {
  const [accounts, counts, holds, health] = await Promise.all([
    listAccounts(db, policy.now),
    accountCounts(db),
    listRemovalHolds(db),
    healthById(db, policy),
  ]);
  const { posts: postsBy, copies: copiesBy, feeds: feedsBy } = counts;
  const rank = (h: AccountHealth) => -VERDICTS.indexOf(h.verdict);
  return accounts
    .map((a) => ({
      ...a,
      posts: postsBy.get(a.id) ?? 0,
      copies: copiesBy.get(a.id)?.n ?? 0,
      copyBytes: copiesBy.get(a.id)?.bytes ?? 0,
      feed: feedsBy.get(a.id) ?? null,
      removalHold: holds.get(a.id) ?? null,
      // An account removed between the two reads has no health: it is gone from the next page.
      health: health.get(a.id) ?? { verdict: 'fail' as const, reasons: [] },
    }))
    .sort((a, b) => rank(a.health) - rank(b.health)); // stable: username order within a verdict
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
