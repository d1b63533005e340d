import { redactText } from '../util/redact.ts';
import { DatabaseUnavailableError } from '../store/errors.ts';
import { StorageUnavailableError } from '../storage/errors.ts';

/** Network error codes that mean "the service is not there (now)": retrying later may work. */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
]);

export interface Failure {
  /** One line, no secrets, no stack. */
  message: string;
  /** Only printed at LOG_LEVEL=debug. */
  stack?: string;
  /** A service the command needs is unreachable (exit 3), rather than the command failing (exit 1). */
  unavailable: boolean;
}

/** Credentials in a connection string (`scheme://user:password@host`) never reach the terminal. */
export function stripCredentials(text: string): string {
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi, '$1');
}

/** What the last line of defence prints for an error no command handled itself. */
export function describeFailure(err: unknown): Failure {
  const e = err instanceof Error ? err : new Error(String(err));
  const code = (e as NodeJS.ErrnoException).code;
  const unavailable =
    e instanceof DatabaseUnavailableError ||
    e instanceof StorageUnavailableError ||
    (e as { unavailable?: boolean }).unavailable === true ||
    (typeof code === 'string' && UNREACHABLE.has(code));
  // A configuration error lists every variable at fault (names only, never values) on one line.
  const firstLine = isConfigError(e)
    ? `invalid configuration: ${e.problems.join('; ')}`
    : (e.message || e.name || 'failed').split('\n')[0]!;
  return {
    message: stripCredentials(redactText(firstLine)),
    ...(e.stack ? { stack: stripCredentials(redactText(e.stack)) } : {}),
    unavailable,
  };
}

/** src/config.ts's ConfigError, recognised without loading the config module (zod, node-cron). */
function isConfigError(e: Error): e is Error & { problems: string[] } {
  return e.name === 'ConfigError' && Array.isArray((e as { problems?: unknown }).problems);
}
