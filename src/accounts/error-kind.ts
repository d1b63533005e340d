import {
  InsufficientDeveloperRoleError,
  MalformedResponseError,
  MissingScopeError,
  PersonalAccountError,
  PlatformError,
  RateLimitedError,
  RunawayListingError,
  TokenInvalidError,
  TokenTooYoungError,
  TransientError,
} from '../platform/errors.ts';
import { DownloadError, LinkExpiredError, MirrorError } from '../mirror/errors.ts';
import { StorageError, StorageUnavailableError } from '../storage/errors.ts';
import { EncryptionKeyError, TokenDecryptError, isDatabaseFailure } from '../store/errors.ts';
import type { ErrorKind } from '../util/error-kinds.ts';
import { ServiceUnavailableError, UNREACHABLE_CODES, connectionErrorCode } from '../util/unavailable.ts';

/** Code 190 subcodes (R-OWN-4: any 190 means the owner must log in again; the subcode says why). */
const TOKEN_SUBCODE_KINDS: Record<number, ErrorKind> = {
  458: 'app_removed',
  459: 'checkpoint',
  460: 'password_changed',
  463: 'token_expired',
  467: 'token_invalid',
};

/** The kind of an error, from its class (never from its message). */
export function errorKind(err: unknown): ErrorKind {
  if (err instanceof TokenInvalidError)
    return (err.subcode !== undefined && TOKEN_SUBCODE_KINDS[err.subcode]) || 'token_invalid';
  if (err instanceof InsufficientDeveloperRoleError) return 'developer_role';
  if (err instanceof PersonalAccountError) return 'personal_account';
  if (err instanceof MissingScopeError) return 'missing_permission';
  if (err instanceof RateLimitedError) return 'rate_limit';
  if (err instanceof TokenTooYoungError) return 'token_too_young';
  if (err instanceof TransientError) return 'network';
  if (err instanceof RunawayListingError) return 'listing_runaway';
  if (err instanceof MalformedResponseError || err instanceof PlatformError) return 'platform';
  if (err instanceof LinkExpiredError) return 'link_expired';
  if (err instanceof StorageError) return 'storage';
  if (err instanceof DownloadError) return 'network';
  // A too large, undecodable or foreign-host image: that one image is at fault.
  if (err instanceof MirrorError) return 'bad_item';
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|UND_ERR_)/.test(code))
    return 'network';
  return 'internal';
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
  // The platform and the image host answered (or did not): theirs, even over a network error.
  if (err instanceof PlatformError || err instanceof MirrorError) return null;
  if (err instanceof ServiceUnavailableError) {
    const what = err.service === 'platform' ? null : err.service;
    if (what === null) return null;
    return { what: isKnownService(what) ? what : 'a service', unreachable: true };
  }
  if (err instanceof StorageError) return { what: 'storage', unreachable: err instanceof StorageUnavailableError };
  if (err instanceof TokenDecryptError || err instanceof EncryptionKeyError)
    return { what: 'encryption key', unreachable: false };
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
