import type { Command } from 'commander';
import { reportFailure } from '../failure.ts';
import { EXIT, type CliIO } from '../io.ts';
import { printJson, withContext, withExamples, type Cli } from '../command.ts';
import { ID_PATTERN } from '../../util/ids.ts';

/**
 * `feedmirror media rebuild [--account <id>]`: queue the re-encoding of existing copies with the
 * MEDIA_VARIANT_WIDTHS and MEDIA_VARIANT_FORMATS the workers run with (and placeholders for copies
 * made before them). Runs on the workers, through the queue; nothing re-encodes unless this is
 * asked for. The workers re-encode with their own settings, so the command reads those (each
 * worker records them in PostgreSQL) and refuses with one line when this environment sets other
 * values or the workers disagree (R-SET-1).
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
  rebuild.addHelpText(
    'after',
    "\nThe workers re-encode with their own MEDIA_VARIANT_WIDTHS and MEDIA_VARIANT_FORMATS: change them in the\nworkers' environment and restart the workers first. The command uses the settings the running workers\nreport, and refuses when this environment sets other values.\n",
  );
  withExamples(
    rebuild,
    'feedmirror media rebuild   # after restarting the workers with MEDIA_VARIANT_FORMATS=webp,avif',
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
        reportFailure(io, 'not_found', `no account with id ${opts.account}`);
        return EXIT.failed;
      }
      ids = [opts.account];
    } else {
      ids = (await listAccounts(db, ctx.clock.now())).map((a) => a.id);
    }
    const { liveWorkers, agreedSettings } = await import('../../store/worker-settings.ts');
    const theirs = agreedSettings(await liveWorkers(db), (s) => ({
      MEDIA_VARIANT_WIDTHS: s.MEDIA_VARIANT_WIDTHS,
      MEDIA_VARIANT_FORMATS: s.MEDIA_VARIANT_FORMATS,
    }));
    const mine = {
      MEDIA_VARIANT_WIDTHS: ctx.config.MEDIA_VARIANT_WIDTHS,
      MEDIA_VARIANT_FORMATS: ctx.config.MEDIA_VARIANT_FORMATS as string[],
    };
    const show = (v: typeof mine) =>
      `widths ${v.MEDIA_VARIANT_WIDTHS.join(',')}, formats ${v.MEDIA_VARIANT_FORMATS.join(',')}`;
    if ('disagree' in theirs) {
      io.stderr.write(
        `media rebuild: the running workers re-encode with different settings (${theirs.disagree.map((g) => `${g.workers} with ${show(g.value)}`).join('; ')}): give every worker the same MEDIA_VARIANT_WIDTHS and MEDIA_VARIANT_FORMATS, restart them, then run it again\n`,
      );
      return EXIT.failed;
    }
    let use = mine;
    let whose: string;
    if ('agreed' in theirs) {
      // Set here and different from the workers': refuse, since the workers would not use it.
      const differ = (['MEDIA_VARIANT_WIDTHS', 'MEDIA_VARIANT_FORMATS'] as const).filter(
        (k) => io.env[k] !== undefined && io.env[k] !== '' && mine[k].join(',') !== theirs.agreed[k].join(','),
      );
      if (differ.length) {
        io.stderr.write(
          `media rebuild: the running workers re-encode with ${differ.map((k) => `${k}=${theirs.agreed[k].join(',')}`).join(' ')}, not ${differ.map((k) => `${k}=${mine[k].join(',')}`).join(' ')} as set here: set it in the workers' environment and restart them, then run media rebuild again\n`,
        );
        return EXIT.failed;
      }
      use = theirs.agreed;
      whose = `the settings of the ${theirs.workers === 1 ? 'running worker' : `${theirs.workers} running workers`}`;
    } else {
      whose = 'no worker is running: the one that takes a job re-encodes with these settings or refuses the job';
    }
    const stamp = ctx.clock.now().getTime();
    const jobs: Array<{ accountId: string; jobId: string }> = [];
    for (const accountId of ids) {
      const job = await enqueue(
        ctx.queues,
        JOBS.mediaRebuild,
        { accountId, widths: use.MEDIA_VARIANT_WIDTHS, formats: use.MEDIA_VARIANT_FORMATS as Array<'webp' | 'avif'> },
        { jobId: `media-rebuild-${accountId}-${stamp}` },
      );
      jobs.push({ accountId, jobId: String(job.id) });
    }
    const settings = `${show(use)}: ${whose}`;
    if (opts.json)
      printJson(io, {
        queued: jobs,
        widths: use.MEDIA_VARIANT_WIDTHS,
        formats: use.MEDIA_VARIANT_FORMATS,
        workers: 'agreed' in theirs ? theirs.workers : 0,
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
