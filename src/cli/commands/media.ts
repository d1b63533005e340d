import type { Command } from 'commander';
import { reportFailure } from '../failure.ts';
import { EXIT, type CliIO } from '../io.ts';
import { printJson, withContext, withExamples, type Cli } from '../command.ts';
import { ID_PATTERN } from '../../util/ids.ts';

/**
 * `feedmirror media sweep [--account <id>] [--force]`: the media sweep (src/feeds/media-sweep.ts)
 * here and now, through the deletion guard; --force goes past its cap (R-DEL-4).
 *
 * `feedmirror media rebuild [--account <id>]`: queue the re-encoding of existing copies with the
 * MEDIA_VARIANT_WIDTHS and MEDIA_VARIANT_FORMATS the workers run with (and placeholders for copies
 * made before them). Runs on the workers, through the queue; nothing re-encodes unless this is
 * asked for. The workers re-encode with their own settings, so the command reads those (each
 * worker records them in PostgreSQL) and refuses with one line when this environment sets other
 * values or the workers disagree (R-SET-1).
 */
export function register(program: Command, cli: Cli): void {
  const media = program
    .command('media')
    .description('mirrored images: re-encode existing copies, sweep the copies of deleted posts');
  withExamples(media, 'feedmirror media rebuild --account 17841400000000001', 'feedmirror media sweep --force');
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
  const sweep = media
    .command('sweep')
    .description(
      "delete the copies of posts that no longer exist (the worker's daily media sweep, here and now), through the deletion guard; --force deletes what its cap held",
    )
    .option('--account <id>', 'only this account')
    .option(
      '--force',
      "delete even when more than DELETE_CAP_OBJECTS and DELETE_CAP_SHARE of an account's objects would go at once (never in a storage without this deployment's marker, never a name feedmirror does not write)",
    )
    .option('--json', 'print the outcome as JSON')
    .action(async (opts: SweepOptions) => cli.setExit(await sweepCommand(opts, cli.io)));
  withExamples(
    sweep,
    'feedmirror media sweep --account 17841400000000001',
    'feedmirror media sweep --account 17841400000000001 --force   # after a removal the cap held',
  );
}

interface SweepOptions {
  account?: string;
  force?: boolean;
  json?: boolean;
}

/** `feedmirror media sweep [--account <id>] [--force] [--json]`: the media sweep, in this process. */
async function sweepCommand(opts: SweepOptions, io: CliIO): Promise<number> {
  if (opts.account !== undefined && !ID_PATTERN.test(opts.account)) {
    reportFailure(io, 'usage', '--account: account id must be 1-128 characters of A-Z a-z 0-9 _ -');
    return EXIT.usage;
  }
  return withContext(io, async (ctx) => {
    const { getAccount } = await import('../../store/accounts.ts');
    const { runMediaSweep } = await import('../../feeds/media-sweep.ts');
    await ctx.ensureStorage();
    const db = await ctx.migratedDb();
    if (opts.account !== undefined && !(await getAccount(db, opts.account))) {
      reportFailure(io, 'not_found', `no account with id ${opts.account}`);
      return EXIT.failed;
    }
    const r = await runMediaSweep(
      { db, storage: ctx.storage, clock: ctx.clock, logger: ctx.logger, deleteCap: ctx.deleteCap },
      { ...(opts.account !== undefined ? { accountId: opts.account } : {}), ...(opts.force ? { force: true } : {}) },
    );
    if (opts.json) printJson(io, r);
    else
      io.stdout.write(
        `swept ${r.accounts} account${r.accounts === 1 ? '' : 's'}: the copies of ${r.removedMedia} deleted post${r.removedMedia === 1 ? '' : 's'} removed` +
          (r.held > 0 ? `; ${r.held} object(s) held by the cap (run again with --force once you have looked)` : '') +
          `${r.refused > 0 ? `; ${r.refused} object(s) refused (${r.storageRefused ?? 'the log says why'})` : ''}\n`,
      );
    if (r.held > 0 || r.refused > 0) {
      reportFailure(
        io,
        'failed',
        `media sweep: ${r.held + r.refused} object(s) of deleted posts were not deleted${r.held > 0 ? ' (held by the cap: --force)' : ''}`,
      );
      return EXIT.failed;
    }
    return EXIT.ok;
  });
}

async function rebuildCommand(opts: { account?: string; json?: boolean }, io: CliIO): Promise<number> {
  if (opts.account !== undefined && !ID_PATTERN.test(opts.account)) {
    io.stderr.write('--account: account id must be 1-128 characters of A-Z a-z 0-9 _ -\n');
    return EXIT.usage;
  }
  return withContext(io, async (ctx) => {
    const { getAccount, listAccounts } = await import('../../store/accounts.ts');
    const { JOBS } = await import('../../../jobs/catalogue.ts');
    const { enqueue } = await import('../../../jobs/enqueue.ts');
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
