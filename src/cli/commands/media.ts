import type { Command } from 'commander';
import { EXIT, type CliIO } from '../io.ts';
import { printJson, withContext, withExamples, type Cli } from '../command.ts';
import { ID_PATTERN } from '../../util/ids.ts';

/**
 * `feedmirror media rebuild [--account <id>]`: queue the re-encoding of existing copies with the
 * current MEDIA_VARIANT_WIDTHS and MEDIA_VARIANT_FORMATS (and placeholders for copies made before
 * them). Runs on the workers, through the queue; nothing re-encodes unless this is asked for.
 */
export function register(program: Command, cli: Cli): void {
  const media = program.command('media').description('mirrored images: re-encode existing copies');
  withExamples(media, 'feedmirror media rebuild --account 17841400000000001');
  const rebuild = media
    .command('rebuild')
    .description(
      'queue a re-encoding of the copies (every account, or one) with the current variant widths and formats; workers run it, then republish the feeds',
    )
    .option('--account <id>', 'only this account')
    .option('--json', 'print the queued jobs as JSON')
    .action(async (opts: { account?: string; json?: boolean }) => cli.setExit(await rebuildCommand(opts, cli.io)));
  withExamples(
    rebuild,
    'MEDIA_VARIANT_FORMATS=webp,avif feedmirror media rebuild',
    'feedmirror media rebuild --account 17841400000000001 --json',
  );
}

async function rebuildCommand(opts: { account?: string; json?: boolean }, io: CliIO): Promise<number> {
  if (opts.account !== undefined && !ID_PATTERN.test(opts.account)) {
    io.stderr.write('--account: account id must be 1-128 characters of A-Z a-z 0-9 _ -\n');
    return EXIT.usage;
  }
  return withContext(io, async (ctx) => {
    const { getAccount, listAccounts } = await import('../../store/accounts.ts');
    const { enqueue, JOBS } = await import('../../../jobs/catalogue.ts');
    const db = await ctx.migratedDb();
    let ids: string[];
    if (opts.account !== undefined) {
      if (!(await getAccount(db, opts.account))) {
        io.stderr.write(`no account with id ${opts.account}\n`);
        return EXIT.failed;
      }
      ids = [opts.account];
    } else {
      ids = (await listAccounts(db, ctx.clock.now())).map((a) => a.id);
    }
    const stamp = ctx.clock.now().getTime();
    const jobs: Array<{ accountId: string; jobId: string }> = [];
    for (const accountId of ids) {
      const job = await enqueue(
        ctx.queues,
        JOBS.mediaRebuild,
        { accountId },
        { jobId: `media-rebuild-${accountId}-${stamp}` },
      );
      jobs.push({ accountId, jobId: String(job.id) });
    }
    const settings = `widths ${ctx.config.MEDIA_VARIANT_WIDTHS.join(',')}, formats ${ctx.config.MEDIA_VARIANT_FORMATS.join(',')}`;
    if (opts.json)
      printJson(io, {
        queued: jobs,
        widths: ctx.config.MEDIA_VARIANT_WIDTHS,
        formats: ctx.config.MEDIA_VARIANT_FORMATS,
      });
    else {
      io.stdout.write(
        `queued a media rebuild for ${jobs.length} account${jobs.length === 1 ? '' : 's'} (${settings}); workers run it and republish each feed\n`,
      );
      for (const j of jobs) io.stdout.write(`  ${j.accountId}: job ${j.jobId}\n`);
    }
    return EXIT.ok;
  });
}
