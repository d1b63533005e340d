import type { ErrorKind, LocalFailure } from '../util/error-kinds.ts';

/**
 * Typed storage errors. Messages name the endpoint, bucket or folder, never credentials. Storage
 * is this deployment's, so its failures are never an account's (R-HLT-5).
 */
export class StorageError extends Error {
  /** True when retrying later may succeed (network, 5xx, storage down). */
  readonly retryable: boolean;
  readonly errorKind: ErrorKind = 'storage';
  readonly localFailure: LocalFailure = { what: 'storage', unreachable: false };
  constructor(message: string, opts: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, { cause: opts.cause });
    this.name = 'StorageError';
    this.retryable = opts.retryable ?? false;
  }
}

/** The storage cannot be reached or answered 5xx: retry later. */
export class StorageUnavailableError extends StorageError {
  override readonly localFailure: LocalFailure = { what: 'storage', unreachable: true };
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, { retryable: true, cause: opts.cause });
    this.name = 'StorageUnavailableError';
  }
}

/** A key, id or name that is not allowed (path traversal, odd characters): a bug, never retried. */
export class InvalidKeyError extends StorageError {
  constructor(
    readonly part: string,
    readonly value: string,
    reason: string,
  ) {
    super(`invalid storage ${part} ${JSON.stringify(value.slice(0, 200))}: ${reason}`);
    this.name = 'InvalidKeyError';
  }
}
