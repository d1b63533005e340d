import { parseArgs } from 'node:util';
import { z } from 'zod';
import { EXIT, type CliIO } from '../io.ts';
import { AppContext } from '../context.ts';
import { runSyncNow } from '../../feeds/sync.ts';
import { JOBS, enqueue, manualJobId } from '../../../jobs/catalogue.ts';
import { idSchema } from '../../util/ids.ts';

const USAGE = 'usage: feedmirror sync <account-id> [--wait]\n  --wait  run the sync here and now (read, copy, publish), printing progress and a summary\n  without --wait the sync is queued for the workers\n';
const accountIdSchema = idSchema('account id');

export async function syncCommand(argv: string[], io: CliIO, ctxFactory = () => new AppContext(io.env)): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: { wait: { type: 'boolean' } }, allowPositionals: true });
  const id = accountIdSchema.safeParse(positionals[0]);
  if (positionals.length !== 1 || !id.success) {
    io.stderr.write(id.success || positionals.length !== 1 ? USAGE : `${id.error.issues[0]?.message}\n${USAGE}`);
    return EXIT.usage;
  }
  const ctx = ctxFactory();
  try {
    if (!values.wait) {
      const job = await enqueue(ctx.queues, JOBS.feedSync, { accountId: id.data }, { jobId: manualJobId('sync', id.data, ctx.clock) });
      io.stdout.write(`sync of ${id.data} queued (job ${job.id}); a running \`feedmirror worker\` picks it up\n`);
      return EXIT.ok;
    }
    const deps = await ctx.feedDeps();
    const r = await runSyncNow(deps, id.data, {
      onProgress: (p) => io.stdout.write(`pages read ${p.pages}, posts ${p.posts}, images copied ${p.imagesCopied}/${p.imagesToCopy}\n`),
    });
    if (r.sync.outcome !== 'synced') {
      io.stderr.write(`sync of ${id.data} ${r.sync.outcome}: ${r.sync.reason}\n`);
      return EXIT.failed;
    }
    const s = r.sync;
    io.stdout.write(
      `summary: ${s.complete ? 'complete' : 'INCOMPLETE (nothing pruned)'} listing, ${s.pages} pages, ${s.calls} API calls; ` +
        `${s.posts} posts (${s.newPosts} new, ${s.changedPosts} changed, ${s.pruned.length} pruned, ${s.dropped.length} left out); ` +
        `images copied ${r.copied}, reused ${r.reused}, links renewed ${r.renewed + s.renewedVideos}, failed ${r.failedCopies.length}; ` +
        `feed ${r.publish?.outcome ?? 'not published'}\n`,
    );
    for (const f of r.failedCopies) io.stdout.write(`  could not copy ${f.mediaId}/${f.slot}: ${f.error}\n`);
    if (s.error) io.stdout.write(`  listing stopped early: ${s.error}\n`);
    return s.complete && r.failedCopies.length === 0 ? EXIT.ok : EXIT.failed;
  } finally {
    await ctx.close();
  }
}
