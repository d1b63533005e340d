import { Readable } from 'node:stream';
import type { CliIO } from '../../src/cli/io.ts';
import { recordCaptured } from './capture.ts';

/** A CliIO in memory: stdin from a string, stdout/stderr kept (and captured for the secrets audit). */
export function memoryIO(env: NodeJS.ProcessEnv, stdin = ''): CliIO & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdin: Readable.from([Buffer.from(stdin)]),
    stdout: { write: (s: string) => ((out += s), recordCaptured('cli', s)) },
    stderr: { write: (s: string) => ((err += s), recordCaptured('cli', s)) },
    env,
    cwd: process.cwd(),
    out: () => out,
    err: () => err,
  };
}
