import type { Command } from 'commander';
import { EXIT, type CliIO } from '../io.ts';
import type { AppContext } from '../context.ts';
import type { RateLimitedError } from '../../platform/errors.ts';
import { describeFailure, reportFailure } from '../failure.ts';
import { accountIdArgument, printJson, withContext, withExamples, type Cli } from '../command.ts';

/** `feedmirror sync <id> [--wait]`: read, copy and publish one account now (or queue it). */
export function register(program: Command, cli: Cli): void {
  const cmd = program
    .command('sync')
    .description("read, copy and publish one account's feed: queued for the workers, or here and now with --wait")
    .addArgument(accountIdArgument())
    .option('--wait', 'run the sync in this process (read, copy, publish), printing progress and a summary')
    .option('--json', 'print the outcome as JSON (no progress lines)')
    .action(async (id: string, opts: SyncOptions) => cli.setExit(await sync(id, opts, cli.io)));
  withExamples(
    cmd,
    'feedmirror sync 17841400000000001 --wait',
    'feedmirror sync 17841400000000001          # queued for `feedmirror worker`',
  );
}

interface SyncOptions {
  wait?: boolean;
  json?: boolean;
}

async function sync(id: string, opts: SyncOptions, io: CliIO): Promise<number> {
  return withContext(io, async (ctx) => {
    // Every service the sync needs answers before anything is read or recorded: Redis (the queue,
    // and the per-account call count every platform call takes, R-OWN-1), storage (with --wait: a
    // bucket that cannot be reached fails here, not after every image), PostgreSQL. One that does
    // not is one line naming it and exit 3; no account's health records it.
    await ctx.ensureRedis();
    if (opts.wait) await ctx.ensureStorage();
    const db = await ctx.migratedDb();
    const { getAccount } = await import('../../store/accounts.ts');
    if (!(await getAccount(db, id))) {
      reportFailure(io, 'not_found', `no account with id ${id}`);
      return EXIT.failed;
    }
    if (!opts.wait) {
      // Recorded in PostgreSQL, then queued: a Redis restart cannot lose it (jobs/sync-requests.ts).
      const { requestSync } = await import('../../../jobs/sync-requests.ts');
      const job = await requestSync({ db, queues: ctx.queues, clock: ctx.clock }, id, 'cli');
      if (opts.json) printJson(io, { accountId: id, queued: true, jobId: job.id ?? null });
      else io.stdout.write(`sync of ${id} queued (job ${job.id}); a running \`feedmirror worker\` picks it up\n`);
      return EXIT.ok;
    }
    const { runSyncNow } = await import('../../feeds/sync.ts');
    const deps = await ctx.feedDeps();
    // R-DEL-1: as a worker's start, so a sync run before any worker claims a new storage.
    await ctx.claimStorage();
    const { RateLimitedError } = await import('../../platform/errors.ts');
    // One line per change: while the listing is read the images to copy are not known yet (a
    // "0/0" line that the next one repeated with the real count).
    let last = '';
    const progress = (p: { pages: number; posts: number; imagesToCopy: number; imagesCopied: number }) => {
      const images = p.imagesToCopy > 0 ? `, images copied ${p.imagesCopied}/${p.imagesToCopy}` : '';
      const line = `pages read ${p.pages}, posts ${p.posts}${images}`;
      if (line !== last) io.stdout.write(`${line}\n`);
      last = line;
    };
    let r;
    try {
      r = await runSyncNow(deps, id, { manual: true, onProgress: opts.json ? undefined : progress });
    } catch (err) {
      if (!(err instanceof RateLimitedError)) throw err;
      return handOver(ctx, io, id, err, opts);
    }
    if (r.sync.outcome !== 'synced') {
      if (opts.json) printJson(io, { accountId: id, outcome: r.sync.outcome, reason: r.sync.reason });
      // Removed since it was looked up above: the same words as every command.
      if (/not found/.test(r.sync.reason)) reportFailure(io, 'not_found', `no account with id ${id}`);
      else
        reportFailure(
          io,
          r.sync.outcome === 'reauth-required' ? 'reauth_required' : 'skipped',
          `sync of ${id} ${r.sync.outcome}: ${r.sync.reason}`,
        );
      return EXIT.failed;
    }
    // The widget script beside the feeds, as a worker publishes it when it starts: a site can embed
    // the feed right after this command, with no worker ever run (idempotent: unchanged, no write).
    const { publishWidget } = await import('../../embed/index.ts');
    const widget = await publishWidget(deps.storage);
    const s = r.sync;
    const ok = s.complete && r.failedCopies.length === 0;
    if (opts.json) {
      printJson(io, {
        accountId: id,
        outcome: ok ? 'synced' : 'incomplete',
        complete: s.complete,
        pages: s.pages,
        calls: s.calls,
        posts: s.posts,
        newPosts: s.newPosts,
        changedPosts: s.changedPosts,
        pruned: s.pruned.length,
        ...(s.held
          ? {
              removalHeld: {
                removing: s.held.removing.length,
                publishedPosts: s.held.publishedPosts,
                since: s.held.since.toISOString(),
              },
            }
          : {}),
        leftOut: s.dropped.length,
        imagesCopied: r.copied,
        imagesReused: r.reused,
        linksRenewed: r.renewed + s.renewedVideos,
        failedCopies: r.failedCopies,
        feed: r.publish?.outcome ?? 'not published',
        widget: { url: widget.url, written: widget.written },
        ...(s.error ? { listingError: s.error } : {}),
      });
      if (!ok)
        reportFailure(
          io,
          'incomplete',
          s.error
            ? `sync of ${id} incomplete: the listing stopped early: ${s.error}`
            : `sync of ${id} incomplete: ${r.failedCopies.length} image(s) could not be copied`,
        );
      return ok ? EXIT.ok : EXIT.failed;
    }
    io.stdout.write(
      `summary: ${s.complete ? 'complete' : 'INCOMPLETE (nothing pruned)'} listing, ${s.pages} pages, ${s.calls} API calls; ` +
        `${s.posts} posts (${s.newPosts} new, ${s.changedPosts} changed, ${s.pruned.length} pruned, ${s.dropped.length} left out); ` +
        `images copied ${r.copied}, reused ${r.reused}, links renewed ${r.renewed + s.renewedVideos}, failed ${r.failedCopies.length}; ` +
        `feed ${r.publish?.outcome ?? 'not published'}; widget script ${widget.written ? 'published' : 'unchanged'}\n`,
    );
    for (const f of r.failedCopies) io.stdout.write(`  could not copy ${f.mediaId}/${f.slot}: ${f.error}\n`);
    if (s.error) io.stdout.write(`  listing stopped early: ${s.error}\n`);
    if (s.held)
      // R-OWN-7: the feed keeps its posts; the operator can confirm now.
      io.stdout.write(
        `  removal held: the listing would remove ${s.held.removing.length} of the ${s.held.publishedPosts} published posts; ` +
          `nothing removed until a complete listing an hour after ${s.held.since.toISOString()} agrees, ` +
          `or \`feedmirror feeds confirm-removal ${id}\`\n`,
      );
    return ok ? EXIT.ok : EXIT.failed;
  });
}

/**
 * The platform said no (R-OWN-1): nothing was pruned or published, and the retry goes to the
 * workers after the stated wait, as a worker's own sync would (jobs/rate-limits.ts). The summary
 * says until when and who retries then; exit 1, since this run did not sync.
 */
async function handOver(
  ctx: AppContext,
  io: CliIO,
  id: string,
  err: RateLimitedError,
  opts: SyncOptions,
): Promise<number> {
  const { handOverRateLimitedSync, rateLimitWaitMs } = await import('../../../jobs/rate-limits.ts');
  const { errorKind } = await import('../../util/error-kinds.ts');
  let retry: { jobId: string; waitMs: number } | undefined;
  let notQueued: string | undefined;
  try {
    retry = await handOverRateLimitedSync(await ctx.readyQueues(), id, err, ctx.clock);
  } catch (e) {
    notQueued = describeFailure(e).message;
  }
  const waitMs = retry?.waitMs ?? rateLimitWaitMs(err);
  const until = new Date(ctx.clock.now().getTime() + waitMs);
  const limited = `rate-limited until ${utcTime(until)} (in ${formatWait(waitMs)}${err.code !== undefined ? `; platform code ${err.code}` : err.paced ? `; this account's ${PACED}` : ''})`;
  const message = retry
    ? `${limited}; the worker retries then (job ${retry.jobId}); nothing was pruned`
    : `${limited}; the retry could not be queued (${notQueued}): run \`feedmirror sync ${id}\` then`;
  if (opts.json)
    printJson(io, {
      error: { kind: errorKind(err), message },
      accountId: id,
      retry: retry
        ? {
            jobId: retry.jobId,
            inSeconds: Math.ceil(waitMs / 1000),
            at: until.toISOString(),
          }
        : null,
    });
  else io.stdout.write(`summary: ${message}\n`);
  if (opts.json) io.stderr.write(`${message}\n`); // the human line, once
  return EXIT.failed;
}

/** What feedmirror's own pacing (R-OWN-1) holds back, in the summary of a paced sync. */
const PACED = 'hourly call budget is spent';

/** 2026-04-01 10:05:03 UTC: a moment as the operator reads it. */
function utcTime(d: Date): string {
  return `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** 3 s, 5 min, 1 h 5 min: a wait as the operator reads it. */
function formatWait(ms: number): string {
  const s = Math.ceil(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.ceil(s / 60);
  return m < 60 ? `${m} min` : `${Math.floor(m / 60)} h${m % 60 ? ` ${m % 60} min` : ''}`;
}
