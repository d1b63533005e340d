import type { Command } from 'commander';
import { EXIT } from '../io.ts';
import { reportFailure } from '../failure.ts';
import { printJson, withExamples, type Cli } from '../command.ts';

/** `feedmirror doctor [--create] [--json]`: is everything in place? One line per check. */
export function register(program: Command, cli: Cli): void {
  const cmd = program
    .command('doctor')
    .description(
      'check configuration, PostgreSQL, Redis, storage, SMTP and the platform, one line each with what to do; exit 1 when a check fails',
    )
    .option(
      '--create',
      "create the database when it does not exist, and write the storage's deployment marker when it has none (it says this storage is this deployment's: deletes are allowed in it)",
    )
    .option('--json', 'print the checks as JSON')
    .action(async (opts: { create?: boolean; json?: boolean }) => {
      const { io } = cli;
      const { runDoctor, doctorFailed, formatCheck } = await import('../doctor.ts');
      const results = await runDoctor(io.env, { create: opts.create ?? false });
      const failed = doctorFailed(results);
      if (opts.json) {
        printJson(io, { ok: !failed, checks: results });
        if (failed)
          reportFailure(
            io,
            'failed',
            `some checks failed: ${results
              .filter((r) => r.status === 'fail')
              .map((r) => r.name)
              .join(', ')}`,
          );
      } else {
        for (const r of results) io.stdout.write(formatCheck(r) + '\n');
        const warnings = results.filter((r) => r.status === 'warn').length;
        io.stdout.write(
          failed
            ? `some checks failed\n`
            : `ready${warnings ? ` (${warnings} warning${warnings > 1 ? 's' : ''})` : ''}\n`,
        );
      }
      cli.setExit(failed ? EXIT.failed : EXIT.ok);
    });
  withExamples(
    cmd,
    'set -a; . ./.env; set +a; feedmirror doctor',
    'feedmirror doctor --create --json | jq \'.checks[] | select(.status != "ok")\'',
  );
}
