import { main } from '../../src/cli/main.ts';
import { memoryIO } from './memory-io.ts';

export interface CliRun {
  code: number;
  out: string;
  err: string;
}

/**
 * `feedmirror <args>` in this process (src/cli/main.ts) with `env` as its whole environment: its
 * exit code and what it wrote to stdout and stderr (both captured for the secrets audit). Shared
 * by every test that drives the CLI without spawning it.
 */
export async function runCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  opts: { stdin?: string; cwd?: string } = {},
): Promise<CliRun> {
  const io = memoryIO({ env, ...opts });
  const code = await main(args, io);
  return { code, out: io.out(), err: io.err() };
}
