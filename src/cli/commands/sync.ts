import type { Command } from 'commander';
import { EXIT, type CliIO } from '../io.ts';
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
    if (!opts.wait) {
      const { JOBS, enqueue, manualJobId } = await import('../../../jobs/catalogue.ts');
      const job = await enqueue(
        await ctx.readyQueues(),
        JOBS.feedSync,
        { accountId: id },
        { jobId: manualJobId('sync', id, ctx.clock) },
      );
      if (opts.json) printJson(io, { accountId: id, queued: true, jobId: job.id ?? null });
      else io.stdout.write(`sync of ${id} queued (job ${job.id}); a running \`feedmirror worker\` picks it up\n`);
      return EXIT.ok;
    }
    const { runSyncNow } = await import('../../feeds/sync.ts');
    // Storage first: a bucket that cannot be reached fails here, not after every image.
    await ctx.ensureStorage();
    const deps = await ctx.feedDeps();
    const r = await runSyncNow(deps, id, {
      onProgress: opts.json
        ? undefined
        : (p) =>
            io.stdout.write(
              `pages read ${p.pages}, posts ${p.posts}, images copied ${p.imagesCopied}/${p.imagesToCopy}\n`,
            ),
    });
    if (r.sync.outcome !== 'synced') {
      if (opts.json) printJson(io, { accountId: id, outcome: r.sync.outcome, reason: r.sync.reason });
      io.stderr.write(`sync of ${id} ${r.sync.outcome}: ${r.sync.reason}\n`);
      return EXIT.failed;
    }
    // The widget script beside the feeds, as a worker publishes it when it starts: a site can embed
    // the feed right after this command, with no worker ever run (idempotent: unchanged, no write).
    const { publishWidget } = await import('../../widget/index.ts');
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
        leftOut: s.dropped.length,
        imagesCopied: r.copied,
        imagesReused: r.reused,
        linksRenewed: r.renewed + s.renewedVideos,
        failedCopies: r.failedCopies,
        feed: r.publish?.outcome ?? 'not published',
        widget: { url: widget.url, written: widget.written },
        ...(s.error ? { error: s.error } : {}),
      });
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
    return ok ? EXIT.ok : EXIT.failed;
  });
}
