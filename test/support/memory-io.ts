import { Readable } from 'node:stream';
import type { CliIO } from '../../src/cli/io.ts';
import { recordCaptured } from './capture.ts';

export type MemoryIO = CliIO & { out: () => string; err: () => string };

/** A CliIO in memory: stdin from a string, stdout/stderr kept (and captured for the secrets audit). */
export function memoryIO(opts: { env?: NodeJS.ProcessEnv; stdin?: string; cwd?: string } = {}): MemoryIO {
  let out = '';
  let err = '';
  return {
    stdin: Readable.from([Buffer.from(opts.stdin ?? '')]),
    stdout: {
      write: (s: string) => {
        out += s;
        recordCaptured('cli', s);
      },
    },
    stderr: {
      write: (s: string) => {
        err += s;
        recordCaptured('cli', s);
      },
    },
    env: opts.env ?? {},
    cwd: opts.cwd ?? process.cwd(),
    out: () => out,
    err: () => err,
  };
}
