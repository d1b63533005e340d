/**
 * A service feedmirror needs (Redis, PostgreSQL, storage, SMTP, the platform) cannot be reached.
 * The message names the service and where it was looked for (host:port, never credentials) and
 * what to check; the CLI prints it as one line and exits 3.
 */
export class ServiceUnavailableError extends Error {
  override readonly name = 'ServiceUnavailableError';
  readonly unavailable = true;
  constructor(
    readonly service: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Network error codes that mean "nothing answers there (now)". */
export const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
]);

/** The error code of a connection failure, looking through AggregateError (happy eyeballs) and causes. */
export function connectionErrorCode(err: unknown): string | undefined {
  for (let e = err as { code?: unknown; errors?: unknown[]; cause?: unknown } | undefined, i = 0; e && i < 5; i++) {
    if (typeof e.code === 'string') return e.code;
    const inner = Array.isArray(e.errors) ? (e.errors[0] as typeof e) : undefined;
    e = inner ?? (e.cause as typeof e);
  }
  return undefined;
}
