import { ServiceUnavailableError, UNREACHABLE_CODES, connectionErrorCode } from './unavailable.ts';

/**
 * Error kinds, in one place: the vocabulary, and the two questions every place that records an
 * error asks of it (what kind is it, and is it this deployment's failure rather than the
 * account's?). The vocabulary lives in src/util because the store records it and may import
 * nothing above util; for the same reason the classification never imports an error class: each
 * error class of ours says its own kind and whose failure it is (`errorKind` and `localFailure`
 * fields: src/platform/errors.ts, src/mirror/errors.ts, src/storage/errors.ts,
 * src/store/errors.ts), and what comes from outside (pg, ioredis, Node) is recognised by its shape.
 *
 * The kind is stored with every recorded error (sync, refresh, status reason, token events) so
 * the dashboard and the CLI explain it by kind instead of re-reading the message.
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
  // The operator's app, not the account: its secret refused, or the app restricted by the platform.
  'app_secret_refused',
  'app_restricted',
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

/**
 * What of this deployment failed, when an error is ours rather than the account's: a service it
 * needs (Redis, PostgreSQL, storage, SMTP) or a setting (a stored secret no configured key opens,
 * the configuration). `unreachable`: the service is not there now (the CLI exits 3); otherwise it
 * refused or is misconfigured (exit 1).
 */
export interface LocalFailure {
  what: 'Redis' | 'PostgreSQL' | 'storage' | 'SMTP' | 'encryption key' | 'configuration' | 'a service';
  unreachable: boolean;
}

/** What an error class of ours declares of itself. */
interface Declared {
  errorKind?: unknown;
  localFailure?: LocalFailure | null;
}

/** The kind of an error, from what its class declares (never from its message). */
export function errorKind(err: unknown): ErrorKind {
  const declared = (err as Declared | null)?.errorKind;
  if (isErrorKind(declared)) return declared;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|UND_ERR_)/.test(code))
    return 'network';
  return 'internal';
}

/** ioredis's own errors (and redis-errors', which it throws): Redis failing, never a statement of ours. */
const REDIS_ERRORS = new Set([
  'MaxRetriesPerRequestError',
  'ClusterAllFailedError',
  'RedisError',
  'ReplyError',
  'AbortError',
  'InterruptError',
  'ParserError',
]);
const REDIS_GONE =
  /^(Connection is closed\.?|Stream isn't writeable|None of startup nodes is available|Failed to refresh slots cache)/;

/**
 * Whose failure an error is, decided here for every place that records one against an account
 * (a sync's outcome, a failed copy, a failed token renewal): only what the platform answered or
 * the account's own data caused is the account's, and changes its health (R-HLT-5). A failure
 * of this deployment (Redis, PostgreSQL or storage unreachable or refusing, a token that no
 * configured key opens, a configuration error) is recorded against no account: the command or
 * job fails naming what is wrong, and every account's health stays as it was. null: the account's
 * (the platform's errors, the image host's, a malformed item, and anything unrecognised, which a
 * bug met on one account's data is).
 */
export function localFailure(err: unknown): LocalFailure | null {
  if (!(err instanceof Error)) return null;
  // Our own error classes say it themselves: the platform's and the image host's answers (even a
  // network error on the way to them) are the account's; storage, PostgreSQL and the key are ours.
  if ('localFailure' in err) return (err as Declared).localFailure ?? null;
  if (err instanceof ServiceUnavailableError) {
    const what = err.service === 'platform' ? null : err.service;
    if (what === null) return null;
    return { what: isKnownService(what) ? what : 'a service', unreachable: true };
  }
  if (err.name === 'ConfigError') return { what: 'configuration', unreachable: false };
  if (REDIS_ERRORS.has(err.name) || REDIS_GONE.test(err.message))
    return { what: 'Redis', unreachable: err.name !== 'ReplyError' };
  if (isDatabaseFailure(err)) return { what: 'PostgreSQL', unreachable: true };
  // A bare connection error reaching this far is a service of ours: the platform's and the image
  // host's come wrapped in their own errors (above).
  const code = connectionErrorCode(err);
  if (code !== undefined && UNREACHABLE_CODES.has(code)) return { what: 'a service', unreachable: true };
  return null;
}

/** Whether an error is this deployment's, not the account's (see localFailure). */
export function isLocalFailure(err: unknown): boolean {
  return localFailure(err) !== null;
}

const isKnownService = (s: string): s is LocalFailure['what'] => ['Redis', 'PostgreSQL', 'storage', 'SMTP'].includes(s);

/**
 * SQLSTATE classes that say PostgreSQL itself cannot do the work now, whatever the statement:
 * connection exception (08), invalid authorization (28), no such database (3D), insufficient
 * resources (53: disk full, too many connections), operator intervention (57: shutdown, starting
 * up), system error (58), transaction rollback (40: serialization failure, deadlock), and a
 * read-only transaction (25006, a replica). Any other code (a constraint, a data exception) is
 * about what the statement wrote, not about the database being there.
 */
const UNAVAILABLE_SQLSTATE = /^(08|28|3D|53|57|58|40)|^25006$/;
/** Errors of the pg driver and pool that carry no SQLSTATE: the connection went away or never came. */
const DRIVER_CONNECTION =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Cannot use a pool after calling end|Client was closed and is not queryable/i;

/**
 * Whether an error of the pg driver is PostgreSQL failing us (unreachable, refusing, out of
 * resources), as opposed to a statement failing on what it wrote. The store's own errors
 * (DatabaseUnavailableError, MigrationError) declare it themselves.
 */
function isDatabaseFailure(err: Error): boolean {
  const e = err as Error & { code?: unknown; severity?: unknown };
  // pg's DatabaseError: a five-character SQLSTATE and a severity.
  if (typeof e.code === 'string' && typeof e.severity === 'string' && /^[0-9A-Z]{5}$/.test(e.code))
    return UNAVAILABLE_SQLSTATE.test(e.code);
  return DRIVER_CONNECTION.test(e.message);
}
