import { redactText } from '../util/redact.ts';
import { DatabaseUnavailableError } from '../store/errors.ts';
import { StorageUnavailableError } from '../storage/errors.ts';
import { errorKind as errorKindOf, localFailure } from '../util/error-kinds.ts';
import type { CliIO } from './io.ts';

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
  const local = localFailure(e);
  const unavailable =
    e instanceof DatabaseUnavailableError ||
    e instanceof StorageUnavailableError ||
    (e as { unavailable?: boolean }).unavailable === true ||
    (typeof code === 'string' && UNREACHABLE.has(code)) ||
    local?.unreachable === true;
  const line = (e.message || e.name || 'failed').split('\n')[0]!;
  // A configuration error lists every variable at fault (names only, never values) on one line.
  // ioredis's own errors do not say they are Redis's ("Reached the max retries per request
  // limit"): the line names it.
  const firstLine = isConfigError(e)
    ? `invalid configuration: ${e.problems.join('; ')}`
    : local?.what === 'Redis' && !(e as { unavailable?: boolean }).unavailable
      ? `Redis failed while the command ran (${line.replace(/\s*Refer to .*$/, '')}); is it running? check REDIS_URL`
      : line;
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

// ---- failures in --json mode ------------------------------------------------------------------

/**
 * What a failed command's JSON says: `{"error":{"kind":…,"message":…}}` on stdout. Kinds:
 * `usage` (exit 2), `unavailable` (a service is unreachable, exit 3), `not_found` (no such
 * account, endpoint, feed or post), `configuration`, an account error kind (`rate_limit`,
 * `token_expired`, `storage`, … from src/util/error-kinds.ts), or `failed`.
 */
export interface JsonFailure {
  kind: string;
  message: string;
}

const stated = new WeakMap<object, JsonFailure>();

/**
 * A command that fails on its own (no such account, …): the human line once on stderr, and in
 * --json mode the kind and the same message in the JSON error on stdout (see jsonMode).
 */
export function reportFailure(io: CliIO, kind: string, message: string): void {
  stated.set(io, { kind, message });
  io.stderr.write(`${message}\n`);
}

/** The kind and message of an error no command handled (main's last line of defence). */
export function jsonFailureOf(err: unknown, failure: Failure): JsonFailure {
  const e = err instanceof Error ? err : undefined;
  const local = localFailure(err);
  const kind = failure.unavailable
    ? 'unavailable'
    : (e && isConfigError(e)) || local?.what === 'encryption key' || local?.what === 'configuration'
      ? 'configuration'
      : errorKindOf(err);
  return { kind, message: failure.message };
}

/** Remember the failure main printed for a thrown error or a usage error. */
export function stateFailure(io: CliIO, f: JsonFailure): void {
  stated.set(io, f);
}

/** Whether the command line asks for JSON (`--json` before any `--`). */
export function wantsJson(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).includes('--json');
}

const EXIT_KINDS: Record<number, string> = { 1: 'failed', 2: 'usage', 3: 'unavailable' };

/**
 * --json mode, for every command in one place: standard output is held until the command ends.
 * On success it goes out as written. On failure stdout carries one JSON document with an
 * `error` object: the command's own JSON gains it (a failed refresh keeps its outcome), or it is
 * the whole document when the command printed nothing. The human line goes to stderr once, as
 * without --json.
 */
export function jsonMode(io: CliIO): { io: CliIO; finish(code: number): void } {
  let held = '';
  let lastLine: string | undefined;
  const wrapped: CliIO = {
    ...io,
    stdout: { write: (s: string) => ((held += s), true) },
    stderr: {
      write: (s: string) => {
        const lines = String(s)
          .split('\n')
          .filter((l) => l.trim() !== '' && !l.startsWith('{"level"'));
        if (lines.length > 0) lastLine = lines.at(-1);
        return io.stderr.write(s);
      },
    },
  };
  return {
    io: wrapped,
    finish(code) {
      if (code === 0) {
        if (held) io.stdout.write(held);
        return;
      }
      const own = stated.get(wrapped);
      const error: JsonFailure = {
        kind: own?.kind ?? EXIT_KINDS[code] ?? 'failed',
        message: own?.message ?? lastLine ?? `exit code ${code}`,
      };
      let doc: unknown;
      try {
        doc = held.trim() ? JSON.parse(held) : {};
      } catch {
        io.stdout.write(held); // not one JSON document (should not happen): left as written
        return;
      }
      if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) doc = { result: doc };
      const obj = doc as Record<string, unknown>;
      const previous = obj.error;
      if (previous && typeof previous === 'object' && 'kind' in previous) {
        io.stdout.write(`${JSON.stringify(obj, null, 2)}\n`);
        return;
      }
      if (typeof previous === 'string' && !own) error.message = previous;
      const { error: _dropped, ...rest } = obj;
      io.stdout.write(`${JSON.stringify({ error, ...rest }, null, 2)}\n`);
    },
  };
}
