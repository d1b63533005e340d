import type { RefreshOutcome } from './token-refresh.ts';

/** A refresh outcome as it comes back from a job (dates as ISO strings) or from a direct call. */
type Dated<T> = { [K in keyof T]: T[K] extends Date ? Date | string : T[K] };

const iso = (d: Date | string) => (typeof d === 'string' ? d : d.toISOString());

/** What an operator reads about a refresh (the CLI's `refresh` and the dashboard's "Refresh now"). */
export function describeRefreshOutcome(o: Dated<RefreshOutcome>): string {
  switch (o.outcome) {
    case 'refreshed':
      return `refreshed; the token is now valid until ${iso(o.expiresAt)}`;
    case 'not-due':
      return `not refreshed: the platform refreshes tokens only once they are 24 hours old; possible from ${iso(o.dueAt)}`;
    case 'backoff':
      return `not refreshed: the last attempt failed; next attempt after ${iso(o.nextAttemptAt)}`;
    case 'reauth-required':
      return `the account needs its owner to log in again: ${o.reason}`;
    case 'failed':
      return `refresh failed; the stored token is kept (valid until ${iso(o.expiresAt)}): ${o.reason}`;
    case 'skipped':
      return `not refreshed: ${o.reason}`;
  }
}

/**
 * How the dashboard shows a refresh's outcome: done, information (a token not due yet is the
 * platform's rule, R-TOK-5, and nothing is wrong), or an error.
 */
export function refreshFlashKind(o: Pick<RefreshOutcome, 'outcome'>): 'ok' | 'info' | 'error' {
  if (o.outcome === 'refreshed') return 'ok';
  return o.outcome === 'not-due' ? 'info' : 'error';
}
