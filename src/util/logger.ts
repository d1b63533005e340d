import { pino, type Logger, type DestinationStream } from 'pino';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { redactText, redactValue } from './redact.ts';
import { activeTraceIds } from './tracing.ts';

export type { Logger };

/**
 * Structured logs (pino). Every string and object passes the redaction helper, so a URL logged
 * by mistake loses its query string and a secret-named field is replaced (R-TOK-11, R-LNK-7).
 */
export function createLogger(opts: { level?: string; name?: string; destination?: DestinationStream } = {}): Logger {
  const options = {
    name: opts.name ?? 'feedmirror',
    level: opts.level ?? process.env.LOG_LEVEL ?? 'info',
    base: {}, // no pid or hostname on each line: only the name
    formatters: {
      log(object: Record<string, unknown>) {
        return redactValue(object) as Record<string, unknown>;
      },
    },
    // The trace and span a line was written in, when tracing is on (src/util/tracing.ts).
    mixin: activeTraceIds,
    hooks: {
      logMethod(this: Logger, args: unknown[], method: (...a: unknown[]) => void) {
        method.apply(
          this,
          args.map((a) => (typeof a === 'string' ? redactText(a) : a)),
        );
      },
    },
    serializers: {
      err: (e: unknown) => redactValue(pino.stdSerializers.err(e as Error)),
    },
  };
  const capture = captureStream();
  if (capture) {
    // Under the test suite every log line is also kept for the secrets audit (test/audit).
    const streams = [{ stream: capture }, ...(opts.destination ? [{ stream: opts.destination }] : [])];
    return pino(
      { ...options, level: options.level },
      pino.multistream(streams.map((s) => ({ ...s, level: 'trace' as const }))),
    );
  }
  // Logs go to standard error (fd 2): standard output carries only a command's own output, so
  // `feedmirror accounts list --json | jq` works at any LOG_LEVEL.
  return pino(options, opts.destination ?? pino.destination({ dest: 2, sync: true }));
}

let captureDestination: DestinationStream | undefined;
function captureStream(): DestinationStream | undefined {
  const dir = process.env.FEEDMIRROR_CAPTURE_DIR;
  if (!dir) return undefined;
  if (!captureDestination) {
    mkdirSync(dir, { recursive: true });
    captureDestination = pino.destination({ dest: join(dir, `log.${process.pid}.txt`), sync: true });
  }
  return captureDestination;
}

/** A logger that writes nothing; for pure unit tests. */
export const silentLogger: Logger = pino({ level: 'silent' });
