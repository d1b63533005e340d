import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { processIO, EXIT, type CliIO } from './io.ts';
import type { Cli } from './command.ts';
import { commandModules } from './commands/index.ts';
import { describeFailure, jsonFailureOf, jsonMode, stateFailure, wantsJson } from './failure.ts';

/**
 * The feedmirror command line, on commander. Each command is a module of ./commands that
 * registers itself (see ./commands/index.ts); help and errors go through the CliIO and come back
 * as exit codes, so tests run the CLI in-process and nothing calls process.exit.
 */
export function buildProgram(cli: Cli): Command {
  const { io } = cli;
  const program = new Command('feedmirror')
    .description('Keep photo-platform accounts connected and mirror their feeds (schema v1) into object storage.')
    .version(packageVersion(), '-V, --version')
    // The program's own options (-V, --version) only before a command: after it they are the
    // command's (`platform compare --version v26.0` names an API version, not feedmirror's).
    .enablePositionalOptions()
    // Set before any command is added: subcommands made with .command() inherit these.
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
    })
    .showHelpAfterError()
    .helpCommand('help [command]', 'show the help of a command');
  program.addHelpText(
    'after',
    '\nExit codes: 0 done, 1 failed, 2 wrong usage, 3 a service it needs is unreachable.\n' +
      'Every command answers --help; read commands take --json; logs go to stderr.\n\nExample:\n  $ feedmirror accounts list --json\n',
  );
  for (const register of commandModules) register(program, cli);
  return program;
}

export async function main(argv: string[], io: CliIO = processIO()): Promise<number> {
  if (!wantsJson(argv)) return run(argv, io);
  // --json: one JSON document on stdout, an error object when the command fails (failure.ts).
  const json = jsonMode(io);
  const code = await run(argv, json.io);
  json.finish(code);
  return code;
}

async function run(argv: string[], io: CliIO): Promise<number> {
  let code: number = EXIT.ok;
  const program = buildProgram({ io, setExit: (c) => (code = c) });
  if (argv.length === 0) {
    program.outputHelp({ error: true });
    return EXIT.usage;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and --version end with exit code 0; every parsing error is a usage error.
      if (err.exitCode !== 0) stateFailure(io, { kind: 'usage', message: err.message.replace(/^error: /, '') });
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    // Last line of defence: one line naming what failed (and where), never a stack trace or a secret.
    const failure = describeFailure(err);
    io.stderr.write(`feedmirror ${commandName(program, argv)}: ${failure.message}\n`);
    stateFailure(io, jsonFailureOf(err, failure));
    if (io.env.LOG_LEVEL === 'debug' && failure.stack) io.stderr.write(failure.stack + '\n');
    return failure.unavailable ? EXIT.unavailable : EXIT.failed;
  }
}

/** `accounts add` for `accounts add --json`: the command path, without arguments or options. */
function commandName(program: Command, argv: string[]): string {
  const words: string[] = [];
  let cmd: Command | undefined = program;
  for (const a of argv) {
    cmd = cmd.commands.find((c) => c.name() === a);
    if (!cmd) break;
    words.push(a);
  }
  return words.join(' ');
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
  return pkg.version ?? 'unknown';
}
