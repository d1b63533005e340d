import type { AccountWithExpiry } from '../store/accounts.ts';
import { redactText } from '../util/redact.ts';

/**
 * How the last sync itself ended, in one line: "complete", "listing incomplete: …", "sync
 * failed: …", or "N items skipped: …". It describes that run only: whether the account is well
 * (copies, withheld posts, the feed, the token) is its health (src/accounts/health.ts), which is
 * what says "ok" (R-HLT-1). The dashboard and `accounts list --json` show both.
 */
export function syncSummary(
  a: Pick<AccountWithExpiry, 'lastSyncAt' | 'lastSyncError' | 'lastSyncErrorKind' | 'skippedItems' | 'skippedReasons'> &
    Partial<Pick<AccountWithExpiry, 'lastSyncOutcome'>>,
): { state: 'never' | 'complete' | 'incomplete' | 'failed' | 'skipped'; text: string } {
  if (!a.lastSyncAt) return { state: 'never', text: 'not synced yet' };
  if (a.lastSyncError)
    return {
      state: a.lastSyncOutcome === 'incomplete' ? 'incomplete' : 'failed',
      text: `${a.lastSyncOutcome === 'incomplete' ? 'listing incomplete' : 'sync failed'}: ${a.lastSyncErrorKind ? `${a.lastSyncErrorKind.replace(/_/g, ' ')}: ` : ''}${redactText(a.lastSyncError).slice(0, 300)}`,
    };
  if (a.skippedItems > 0) {
    const reasons = a.skippedReasons
      .slice(0, 3)
      .map((s) => `${s.id}: ${s.reason}`)
      .join('; ');
    return {
      state: 'skipped',
      text: `${a.skippedItems} item${a.skippedItems === 1 ? '' : 's'} skipped: ${redactText(reasons).slice(0, 400)}`,
    };
  }
  return { state: 'complete', text: 'complete' };
}
