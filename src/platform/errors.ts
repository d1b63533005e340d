import type { ErrorKind } from '../util/error-kinds.ts';
import { redactText } from '../util/redact.ts';

/**
 * Typed failures of the platform API. Each carries the HTTP status, the platform's error code and
 * subcode, and a message that says what happened and what the operator should do. Messages are
 * passed through the redaction helper: never a token, secret or query string (R-TOK-11, R-LNK-7).
 * No `cause` holding a raw response or URL is ever attached. Each says its error kind; none is
 * ever this deployment's failure (R-HLT-5: the platform answered, or did not, for this account).
 */
export interface PlatformErrorDetails {
  status?: number | undefined;
  code?: number | undefined;
  subcode?: number | undefined;
  /** The endpoint in words ("token exchange", "media list"), never a URL with a query. */
  operation?: string | undefined;
  /** The platform's own message, redacted. */
  platformMessage?: string | undefined;
}

export class PlatformError extends Error {
  readonly status?: number | undefined;
  readonly code?: number | undefined;
  readonly subcode?: number | undefined;
  readonly operation?: string | undefined;
  readonly platformMessage?: string | undefined;
  /** Whether retrying the same call later can succeed. */
  readonly retryable: boolean = false;
  readonly errorKind: ErrorKind = 'platform';
  readonly localFailure = null;
  /**
   * The app (by its feedmirror name) whose client made the call: set by the client that threw it,
   * so the job layer holds that app's calls only and health and alerts name the app to fix.
   */
  app?: string;

  constructor(message: string, details: PlatformErrorDetails = {}) {
    super(redactText(message));
    this.name = new.target.name;
    this.status = details.status;
    this.code = details.code;
    this.subcode = details.subcode;
    this.operation = details.operation;
    this.platformMessage = details.platformMessage === undefined ? undefined : redactText(details.platformMessage);
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      message: this.message,
      status: this.status,
      code: this.code,
      subcode: this.subcode,
      operation: this.operation,
    };
  }
}

/** Subcodes of code 190 seen in the wild (docs/operating.md, Troubleshooting); any 190 means "log in again" (R-OWN-4). */
export const TOKEN_SUBCODES: Record<number, string> = {
  458: 'the owner removed the app from the account',
  459: 'the account hit a security checkpoint',
  460: 'the account password was changed',
  463: 'the token has expired',
  467: 'the token is invalid',
};

/** Code 190 subcodes as error kinds (R-OWN-4: any 190 means the owner must log in again; the subcode says why). */
const TOKEN_SUBCODE_KINDS: Record<number, ErrorKind> = {
  458: 'app_removed',
  459: 'checkpoint',
  460: 'password_changed',
  463: 'token_expired',
  467: 'token_invalid',
};

/** Code 190: the token is dead; only the account owner logging in again fixes it (R-TOK-10, R-OWN-4). */
export class TokenInvalidError extends PlatformError {
  override readonly errorKind: ErrorKind =
    (this.subcode !== undefined && TOKEN_SUBCODE_KINDS[this.subcode]) || 'token_invalid';
  get reason(): string {
    return (this.subcode !== undefined && TOKEN_SUBCODES[this.subcode]) || 'the token was rejected';
  }
}
/** 190/463. */
export class TokenExpiredError extends TokenInvalidError {}
/** 190/460. */
export class PasswordChangedError extends TokenInvalidError {}

/** Development-mode app whose account lacks the tester role (R-TOK-14). */
export class InsufficientDeveloperRoleError extends PlatformError {
  override readonly errorKind: ErrorKind = 'developer_role';
}

/** A personal (non-professional) account was connected (R-TOK-13). */
export class PersonalAccountError extends PlatformError {
  override readonly errorKind: ErrorKind = 'personal_account';
}

/** The scope instagram_business_basic was not granted (R-TOK-5, R-TOK-12). */
export class MissingScopeError extends PlatformError {
  override readonly errorKind: ErrorKind = 'missing_permission';
}

/** Refresh refused because the token is younger than 24 hours (R-TOK-5). Retry later. */
export class TokenTooYoungError extends PlatformError {
  override readonly retryable = true;
  override readonly errorKind: ErrorKind = 'token_too_young';
}

/** HTTP 429 or codes 4, 17, 32, 613 (R-OWN-1). `retryAfterMs` is the platform's estimate, if given. */
export class RateLimitedError extends PlatformError {
  override readonly retryable = true;
  override readonly errorKind: ErrorKind = 'rate_limit';
  readonly retryAfterMs?: number | undefined;
  readonly usage?: Record<string, unknown> | undefined;
  /** True when feedmirror's own pacing held the call back (it was never sent): one account's budget. */
  readonly paced: boolean;
  constructor(
    message: string,
    details: PlatformErrorDetails & {
      retryAfterMs?: number | undefined;
      usage?: Record<string, unknown> | undefined;
      paced?: boolean;
    } = {},
  ) {
    super(message, details);
    this.retryAfterMs = details.retryAfterMs;
    this.usage = details.usage;
    this.paced = details.paced ?? false;
  }

  /**
   * Whether the limit is the whole app's (code 4, or a bare 429 that names none), so every job
   * should wait, or one account's (17, 32, 613, or our own pacing), so only its jobs wait.
   */
  get appWide(): boolean {
    return !this.paced && (this.code === 4 || this.code === undefined);
  }
}

/** 5xx, timeouts, connection resets: retried with jittered backoff a bounded number of times. */
export class TransientError extends PlatformError {
  override readonly retryable = true;
  override readonly errorKind: ErrorKind = 'network';
}

/** The platform answered something that is not what the spec says (bad JSON, wrong types, HTML). */
export class MalformedResponseError extends PlatformError {
  override readonly retryable = true;
}

/**
 * R-NET-6: a listing that kept paging past what the account can hold was stopped by feedmirror:
 * a cursor seen before, pages that bring no post not already read, or more items than the
 * account's bound. Nothing of it may prune; the account's next scheduled listings wait longer.
 */
export class RunawayListingError extends PlatformError {
  override readonly errorKind: ErrorKind = 'listing_runaway';
  constructor(
    message: string,
    readonly stop: 'repeated-cursor' | 'no-new-items' | 'item-bound' | 'page-guard',
    details: PlatformErrorDetails = {},
  ) {
    super(message, details);
  }
}

/**
 * The platform refused the app's secret (code 101 "Error validating client secret"): the app's
 * operator must give feedmirror the app's current secret. Never the account owner's to fix, so
 * it never asks the owner to log in again; it names the app once the client knows it.
 */
export class AppSecretRefusedError extends PlatformError {
  override readonly errorKind: ErrorKind = 'app_secret_refused';
}

/**
 * The platform restricted the app (code 368): no call of any of its accounts is answered until
 * the app's operator fixes it with the platform. The accounts of other apps are not concerned.
 */
export class AppRestrictedError extends PlatformError {
  override readonly errorKind: ErrorKind = 'app_restricted';
}

/** Failures that are the app's, not the account's: recorded against the app. */
export function isAppFault(error: unknown): error is AppSecretRefusedError | AppRestrictedError {
  return error instanceof AppSecretRefusedError || error instanceof AppRestrictedError;
}

/** Any other error object from the platform (a field refused, a bad parameter). */
export class PlatformRequestError extends PlatformError {}
