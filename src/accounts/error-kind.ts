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
import { StorageError } from '../storage/errors.ts';
import type { ErrorKind } from '../util/error-kinds.ts';

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
