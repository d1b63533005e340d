import type { Command } from 'commander';
import { EXIT } from '../io.ts';
import { withContext, withExamples, type Cli } from '../command.ts';

/** `feedmirror check-expiry`: the expiry alert sweep, once, now (what the daily cron runs). */
export function register(program: Command, cli: Cli): void {
  const cmd = program
    .command('check-expiry')
    .description('run the expiry alert sweep once, now: emails the operator about tokens close to expiry')
    .option('--json', 'print what was checked and sent as JSON')
    .action(async (opts: { json?: boolean }) => {
      const { io } = cli;
      const code = await withContext(io, async (ctx) => {
        const { runExpirySweep } = await import('../../alerts/sweep.ts');
        // What it needs answers first: Redis (an expired token stops the account's jobs), the
        // mail server; then the database.
        await ctx.ensureRedis();
        await ctx.ensureSmtp();
        await ctx.migratedDb();
        // The worker's daily job runs the same function with the same deps: the emails and the
        // webhook events (token.expiring, account.reauth_required) alike.
        const result = await runExpirySweep({ ...ctx.alertDeps, lifecycle: ctx.lifecycle });
        if (opts.json) io.stdout.write(JSON.stringify(result) + '\n');
        else {
          io.stdout.write(`checked ${result.checked} accounts; ${result.sent.length} alerts sent\n`);
          for (const s of result.sent)
            io.stdout.write(
              `  ${s.kind} alert for ${s.accountId}${s.kind === 'expiry' ? ` (< ${s.thresholdDays} days left)` : ''}\n`,
            );
          for (const f of result.failed) io.stdout.write(`  FAILED for ${f.accountId}: ${f.error}\n`);
        }
        return result.failed.length ? EXIT.failed : EXIT.ok;
      });
      cli.setExit(code);
    });
  withExamples(cmd, 'feedmirror check-expiry', 'feedmirror check-expiry --json | jq .sent');
}
