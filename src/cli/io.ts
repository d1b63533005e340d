import type { Readable } from 'node:stream';

/** What a command may touch of the outside world; tests pass their own. */
export interface CliIO {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
  stdin: Readable;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

/** A command: its arguments (after the subcommand name) in, an exit code out. */
export type Command = (argv: string[], io: CliIO) => Promise<number>;

export function processIO(): CliIO {
  return { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env, cwd: process.cwd() };
}

/** Exit codes shared by all commands. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** Read all of stdin (or any stream) as text. */
export async function readAll(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}
