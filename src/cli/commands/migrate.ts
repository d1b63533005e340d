import type { Command } from 'commander';
import { EXIT } from '../io.ts';
import { printJson, withContext, withExamples, type Cli } from '../command.ts';

/** `feedmirror migrate`: apply the database migrations (safe from several processes at once). */
export function register(program: Command, cli: Cli): void {
  const cmd = program
    .command('migrate')
    .description('apply database migrations (safe from several processes at once)')
    .option('--json', 'print what was applied as JSON')
    .action(async (opts: { json?: boolean }) => {
      const { io } = cli;
      const code = await withContext(io, async (ctx) => {
        const { migrate } = await import('../../store/migrate.ts');
        const { applied, current } = await migrate(ctx.db, { logger: ctx.logger });
        if (opts.json) printJson(io, { applied, current });
        else
          io.stdout.write(
            applied.length
              ? `applied ${applied.join(', ')}; database at ${current}\n`
              : `database already at ${current}\n`,
          );
        return EXIT.ok;
      });
      cli.setExit(code);
    });
  withExamples(cmd, 'DATABASE_URL=postgres://feedmirror@db/feedmirror feedmirror migrate');
}
