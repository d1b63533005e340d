import type { AccountWithExpiry } from '../store/accounts.ts';
import { redactText } from '../util/redact.ts';

/**
 * How the last sync ended, in one line: "ok", "sync failed: …", or "N items skipped: …". Never
 * "ok" after a sync that failed or left items out. The dashboard and `accounts list` show it.
 */
export function syncSummary(
  a: Pick<AccountWithExpiry, 'lastSyncAt' | 'lastSyncError' | 'lastSyncErrorKind' | 'skippedItems' | 'skippedReasons'>,
): { state: 'never' | 'ok' | 'failed' | 'skipped'; text: string } {
  if (!a.lastSyncAt) return { state: 'never', text: 'not synced yet' };
  if (a.lastSyncError)
    return {
      state: 'failed',
      text: `sync failed: ${a.lastSyncErrorKind ? `${a.lastSyncErrorKind.replace(/_/g, ' ')}: ` : ''}${redactText(a.lastSyncError).slice(0, 300)}`,
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
  return { state: 'ok', text: 'ok' };
}
