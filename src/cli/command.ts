import { Argument, InvalidArgumentError, type Command } from 'commander';
import { idSchema } from '../util/ids.ts';
import type { CliIO } from './io.ts';
import type { AppContext } from './context.ts';
import type { LogRole } from './log-setup.ts';

/**
 * What a command module gets when it registers itself on the program: the IO to write to and a
 * way to report its exit code. A module adds its command with `program.command(name)` (so it
 * inherits the program's output and error settings), describes its options, adds an example,
 * and in its action imports what it needs lazily: `feedmirror x --help` and `feedmirror validate`
 * then load neither BullMQ nor pg nor sharp.
 */
export interface Cli {
  io: CliIO;
  /** The exit code of the action that ran (0 when never called). */
  setExit(code: number): void;
}

export type RegisterCommand = (program: Command, cli: Cli) => void;

/** Every command's help ends with at least one example. */
export function withExamples(cmd: Command, ...lines: string[]): Command {
  const title = lines.length > 1 ? 'Examples' : 'Example';
  return cmd.addHelpText('after', `\n${title}:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`);
}

/**
 * Run `fn` with an application context built from the command's environment, closing it after.
 * Its logs are a command's: human lines on a terminal (./log-setup.ts).
 */
export function withContext<T>(io: CliIO, fn: (ctx: AppContext) => Promise<T>): Promise<T> {
  return withRoleContext('command', io, fn);
}

/** withContext for worker and serve: JSON logs on a terminal too, for their supervisor's collector. */
export function withServiceContext<T>(io: CliIO, fn: (ctx: AppContext) => Promise<T>): Promise<T> {
  return withRoleContext('service', io, fn);
}

async function withRoleContext<T>(role: LogRole, io: CliIO, fn: (ctx: AppContext) => Promise<T>): Promise<T> {
  const { AppContext } = await import('./context.ts');
  const ctx = new AppContext(io.env, { logTo: { role, log: io.log } });
  try {
    return await fn(ctx);
  } finally {
    await ctx.close();
  }
}

/** Print a value as one JSON document on stdout (what `--json` gives). */
export function printJson(io: CliIO, value: unknown): void {
  io.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

/** The `<account-id>` argument, checked like every id from outside (never a path): a usage error otherwise. */
export function accountIdArgument(): Argument {
  return new Argument('<account-id>', "the account's platform id (see `feedmirror accounts list`)").argParser(
    (raw: string) => {
      const id = accountId.safeParse(raw);
      if (!id.success) throw new InvalidArgumentError(id.error.issues[0]?.message ?? 'invalid account id');
      return id.data;
    },
  );
}
const accountId = idSchema('account id');

/** A commander option parser: an integer within [min, max], a usage error otherwise. */
export function intIn(min: number, max: number): (raw: string) => number {
  return (raw) => {
    const n = Number(raw);
    if (!/^\d+$/.test(raw.trim()) || !Number.isInteger(n) || n < min || n > max)
      throw new InvalidArgumentError(`must be a whole number from ${min} to ${max}`);
    return n;
  };
}
