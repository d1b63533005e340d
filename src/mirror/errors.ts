import type { ErrorKind } from '../util/error-kinds.ts';

/**
 * Typed errors of image mirroring. Messages carry URLs only through redactUrl: media links are
 * signed and the query string is the signature (R-LNK-7).
 * `retryable` tells the job layer whether a plain retry may help; LinkExpiredError needs the link
 * renewed first (R-LNK-3), the others (too large, not an image, disallowed host) never heal.
 * The image host's answers are the account's, never this deployment's failure (R-HLT-5).
 */
export class MirrorError extends Error {
  readonly retryable: boolean;
  /** A too large, undecodable or foreign-host image: that one image is at fault. */
  readonly errorKind: ErrorKind = 'bad_item';
  readonly localFailure = null;
  constructor(message: string, opts: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, { cause: opts.cause });
    this.name = 'MirrorError';
    this.retryable = opts.retryable ?? false;
  }
}

/** The URL (or a redirect hop) points outside MEDIA_ALLOWED_HOSTS, or is not http(s). */
export class DisallowedHostError extends MirrorError {
  constructor(message: string) {
    super(message);
    this.name = 'DisallowedHostError';
  }
}

/** The body is larger than MEDIA_MAX_BYTES (announced or streamed). */
export class TooLargeError extends MirrorError {
  constructor(
    message: string,
    readonly maxBytes: number,
    /** The size the host announced (Content-Length), when it did. */
    readonly announcedBytes?: number,
  ) {
    super(message);
    this.name = 'TooLargeError';
  }
}

/** The signed link is past its oe or the host said "URL signature expired": renew it (R-LNK-3, R-MED-8). */
export class LinkExpiredError extends MirrorError {
  override readonly errorKind: ErrorKind = 'link_expired';
  constructor(
    message: string,
    readonly expiredAt?: Date,
  ) {
    super(message);
    this.name = 'LinkExpiredError';
  }
}

/** Non-2xx, network failure, timeout or too many redirects. 5xx, 429, timeouts and network errors are retryable. */
export class DownloadError extends MirrorError {
  override readonly errorKind: ErrorKind = 'network';
  constructor(
    message: string,
    readonly status?: number,
    opts: { retryable?: boolean; cause?: unknown } = {},
  ) {
    super(message, opts);
    this.name = 'DownloadError';
  }
}

/** The bytes are not an image sharp can read, or not a format we mirror. */
export class InvalidImageError extends MirrorError {
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, opts);
    this.name = 'InvalidImageError';
  }
}

/** More pixels than MEDIA_MAX_PIXELS: refused before decoding (decompression bombs). */
export class ImageTooLargeError extends MirrorError {
  constructor(
    message: string,
    readonly pixels: number,
    readonly maxPixels: number,
  ) {
    super(message);
    this.name = 'ImageTooLargeError';
  }
}

/** The bytes are not an MP4 file (no `ftyp` box first), or its header names no video track. */
export class InvalidVideoError extends MirrorError {
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, opts);
    this.name = 'InvalidVideoError';
  }
}
