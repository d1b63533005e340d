import type { Readable } from 'node:stream';

/** What a command may touch of the outside world; tests pass their own. */
export interface CliIO {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
  stdin: Readable;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /**
   * Where log lines go when they are human lines, and whether that is a terminal (which picks
   * the format: src/cli/log-setup.ts). The process's standard error; unset (tests), logs are JSON
   * on file descriptor 2 as for a pipe. Kept apart from `stderr`, which carries a command's own
   * messages (--json mode reads its last line as the failure).
   */
  log?: { write(s: string): unknown; isTTY?: boolean };
}

/** A command: its arguments (after the subcommand name) in, an exit code out. */
export type Command = (argv: string[], io: CliIO) => Promise<number>;

export function processIO(): CliIO {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    cwd: process.cwd(),
    log: process.stderr,
  };
}

/** Exit codes shared by all commands. */
export const EXIT = { ok: 0, failed: 1, usage: 2, unavailable: 3 } as const;

/** Standard input held more than a command accepts. */
export class InputTooLargeError extends Error {
  override readonly name = 'InputTooLargeError';
  constructor(readonly maxBytes: number) {
    super(`standard input is larger than ${maxBytes} bytes`);
  }
}

/**
 * Read all of stdin (or any stream) as text. With `maxBytes`, reading stops (and throws
 * InputTooLargeError) as soon as more arrived: a command never buffers an endless pipe.
 */
export async function readAll(stream: Readable, opts: { maxBytes?: number } = {}): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of stream) {
    const b = typeof c === 'string' ? Buffer.from(c) : (c as Buffer);
    size += b.length;
    if (opts.maxBytes !== undefined && size > opts.maxBytes) {
      stream.destroy();
      throw new InputTooLargeError(opts.maxBytes);
    }
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString('utf8');
}
