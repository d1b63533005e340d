/**
 * What kind of error an account's recorded error is: stored with every recorded error (sync,
 * refresh, status reason, token events) so the dashboard and the CLI explain it by kind instead of
 * re-reading the message. src/accounts/error-kind.ts classifies errors into these.
 */
export const ERROR_KINDS = [
  // Only the owner can help (R-TOK-10, R-OWN-4, R-TOK-13, R-TOK-14, R-TOK-12).
  'token_expired',
  'password_changed',
  'app_removed',
  'checkpoint',
  'token_invalid',
  'developer_role',
  'personal_account',
  'missing_permission',
  // feedmirror waits and retries on its own.
  'rate_limit',
  'token_too_young',
  'link_expired',
  'network',
  'platform',
  // The platform's paging did not end (R-NET-6): stopped, nothing pruned, the next listings wait longer.
  'listing_runaway',
  // Ours to fix: storage settings, space, permissions.
  'storage',
  // One item the platform sent could not be used (skipped; the rest is published).
  'bad_item',
  // Anything else (a database hiccup, a bug): the message says more.
  'internal',
] as const;
export type ErrorKind = (typeof ERROR_KINDS)[number];

export function isErrorKind(v: unknown): v is ErrorKind {
  return typeof v === 'string' && (ERROR_KINDS as readonly string[]).includes(v);
}
