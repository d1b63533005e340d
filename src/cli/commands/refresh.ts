import type { Command } from 'commander';
import { EXIT, type CliIO } from '../io.ts';
import { reportFailure } from '../failure.ts';
import type { RefreshOutcome } from '../../accounts/token-refresh.ts';
import { accountIdArgument, withContext, withExamples, type Cli } from '../command.ts';

/** `feedmirror refresh <id>`: refresh one account's token now (never before it is 24 hours old). */
export function register(program: Command, cli: Cli): void {
  const cmd = program
    .command('refresh')
    .description("refresh one account's token now (the platform allows it once the token is 24 hours old)")
    .addArgument(accountIdArgument())
    .option('--json', 'print the outcome as JSON')
    .action(async (id: string, opts: { json?: boolean }) => cli.setExit(await refresh(id, opts, cli.io)));
  withExamples(cmd, 'feedmirror refresh 17841400000000001', 'feedmirror refresh 17841400000000001 --json');
}

async function refresh(id: string, opts: { json?: boolean }, io: CliIO): Promise<number> {
  return withContext(io, async (ctx) => {
    const { refreshAccountToken } = await import('../../accounts/token-refresh.ts');
    // A refresh that finds the owner must log in again stops the account's jobs: Redis must answer.
    await ctx.ensureRedis();
    const db = await ctx.migratedDb();
    // `force`: refresh now even before 30 days, but never before 24 hours (R-TOK-5).
    const outcome = await refreshAccountToken(
      {
        db,
        cipher: ctx.cipher,
        platform: ctx.platform,
        apps: ctx.apps,
        clock: ctx.clock,
        logger: ctx.logger,
        refreshAfterMs: ctx.refreshAfterMs,
        // R-TOK-10: stops the schedules and alerts when the owner must act.
        lifecycle: ctx.lifecycle,
      },
      { accountId: id, force: true },
    );
    const { describeRefreshOutcome } = await import('../../accounts/refresh-words.ts');
    if (opts.json) {
      io.stdout.write(JSON.stringify(outcome) + '\n');
      // The human line once on stderr; the JSON gains {"error":{kind, message}} (failure.ts).
      if (outcome.outcome !== 'refreshed')
        reportFailure(io, refreshFailureKind(outcome), describeRefreshOutcome(outcome));
    } else io.stdout.write(describeRefreshOutcome(outcome) + '\n');
    return outcome.outcome === 'refreshed' ? EXIT.ok : EXIT.failed;
  });
}

/** The JSON error kind of a refresh that did not refresh. */
function refreshFailureKind(o: RefreshOutcome): string {
  if (o.outcome === 'skipped') return /not found/.test(o.reason) ? 'not_found' : 'skipped';
  return o.outcome.replace(/-/g, '_');
}
