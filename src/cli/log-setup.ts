import type { Config } from '../config.ts';
import { createLogger, type Logger } from '../util/logger.ts';
import { humanLogStream } from '../util/log-lines.ts';

/**
 * Which logs a process writes, and how. A command run by a person (`feedmirror sync … --wait`,
 * `verify`) writes to a terminal whose reader wants its output, not the machinery: short human
 * lines, warnings and worse. The worker and the server run under systemd or in a container, where
 * a collector reads JSON: they keep JSON at info. LOG_FORMAT and LOG_LEVEL override either.
 */
export type LogRole = 'command' | 'service';
export type LogFormat = 'json' | 'human';

export interface LogChoice {
  format: LogFormat;
  level: NonNullable<Config['LOG_LEVEL']>;
}

export function logChoice(
  config: Pick<Config, 'LOG_LEVEL' | 'LOG_FORMAT'>,
  where: { role: LogRole; terminal: boolean },
): LogChoice {
  const format = config.LOG_FORMAT ?? (where.role === 'command' && where.terminal ? 'human' : 'json');
  const level = config.LOG_LEVEL ?? (where.role === 'command' && format === 'human' ? 'warn' : 'info');
  return { format, level };
}

/** Where a process's logs go: `io.log` of the CLI (the process's standard error), if any. */
export interface LogTarget {
  role: LogRole;
  log?: { write(s: string): unknown; isTTY?: boolean } | undefined;
}

/**
 * The logger of a process: human lines written to `target.log`, or JSON on file descriptor 2
 * (synchronous: a line is out before the process exits). Both pass the same redaction.
 */
export function loggerFor(config: Pick<Config, 'LOG_LEVEL' | 'LOG_FORMAT'>, target: LogTarget): Logger {
  const choice = logChoice(config, { role: target.role, terminal: target.log?.isTTY === true });
  if (choice.format === 'human')
    return createLogger({ level: choice.level, destination: humanLogStream(target.log ?? process.stderr) });
  return createLogger({ level: choice.level });
}
