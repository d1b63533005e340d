import type { Command } from 'commander';
import { reportFailure } from '../failure.ts';
import { EXIT, type CliIO } from '../io.ts';
import { ID_PATTERN } from '../../util/ids.ts';
import { accountIdArgument, printJson, withContext, withExamples, type Cli } from '../command.ts';

/**
 * `feedmirror feeds get <id>`: print the published feed (feeds/<id>.json) from the storage.
 * `feedmirror feeds confirm-removal <id>`: carry out a held removal now (R-OWN-7).
 * `feedmirror feeds hide|unhide <id> <post>`, `feeds hidden <id>`: a post left out of its
 * account's published feed (and every widget) by the operator, its post and copies kept (R-OWN-17).
 */
export function register(program: Command, cli: Cli): void {
  const feeds = program
    .command('feeds')
    .description('read published feeds; confirm a held removal; hide a post from its feed or show it again');
  withExamples(feeds, 'feedmirror feeds get 17841400000000001');
  const get = feeds
    .command('get')
    .description('print the published feed (feeds/<account-id>.json) as stored')
    .addArgument(accountIdArgument())
    .option('--json', 'print it as one compact JSON line (it is JSON either way)')
    .option(
      '--raw-links',
      "put back each post's raw as the platform sent it, signed media links included (the published raw leaves them out)",
    )
    .option('--post <media-id>', "with --raw-links: print only that post's stored platform item")
    .action(async (id: string, opts: GetOptions) => cli.setExit(await getFeed(id, opts, cli.io)));
  withExamples(
    get,
    'feedmirror feeds get 17841400000000001 | jq .posts[0]',
    'feedmirror feeds get 17841400000000001 | feedmirror validate -',
    'feedmirror feeds get 17841400000000001 --raw-links --post 17900000000000001',
  );
  const confirm = feeds
    .command('confirm-removal')
    .description(
      'remove now the posts a held listing no longer has (a listing that would remove more than half of a feed waits for a second one an hour later, or for this), and publish the feed without them',
    )
    .addArgument(accountIdArgument())
    .option('--json', 'print the outcome as JSON')
    .action(async (id: string, opts: { json?: boolean }) => cli.setExit(await confirmRemoval(id, opts, cli.io)));
  withExamples(
    confirm,
    'feedmirror feeds confirm-removal 17841400000000001',
    'feedmirror feeds confirm-removal 17841400000000001 --json',
  );
  const hide = feeds
    .command('hide')
    .description(
      "leave a post out of its account's published feed, and so out of every site and widget reading it; the post stays stored, synced and copied (nothing is deleted), and stays hidden through re-syncs and reconnects until `feeds unhide`",
    )
    .addArgument(accountIdArgument())
    .argument('<post-id>', 'the post id (see `feedmirror feeds get <account-id>`)')
    .option('--json', 'print the outcome as JSON')
    .action(async (id: string, postId: string, opts: { json?: boolean }) =>
      cli.setExit(await hideCommand(id, postId, true, opts, cli.io)),
    );
  withExamples(hide, 'feedmirror feeds hide 17841400000000001 17900000000000001');
  const unhide = feeds
    .command('unhide')
    .description('put a hidden post back in its feed (published again at once from its stored copies)')
    .addArgument(accountIdArgument())
    .argument('<post-id>', 'the hidden post id (see `feedmirror feeds hidden <account-id>`)')
    .option('--json', 'print the outcome as JSON')
    .action(async (id: string, postId: string, opts: { json?: boolean }) =>
      cli.setExit(await hideCommand(id, postId, false, opts, cli.io)),
    );
  withExamples(unhide, 'feedmirror feeds unhide 17841400000000001 17900000000000001');
  const hidden = feeds
    .command('hidden')
    .description("list the posts hidden from an account's feed")
    .addArgument(accountIdArgument())
    .option('--json', 'print them as JSON')
    .action(async (id: string, opts: { json?: boolean }) => cli.setExit(await hiddenCommand(id, opts, cli.io)));
  withExamples(hidden, 'feedmirror feeds hidden 17841400000000001');
}

async function hideCommand(
  id: string,
  postId: string,
  hide: boolean,
  opts: { json?: boolean },
  io: CliIO,
): Promise<number> {
  if (!ID_PATTERN.test(postId)) {
    io.stderr.write(`invalid post id ${JSON.stringify(postId)}: 1-128 characters of A-Z a-z 0-9 _ -\n`);
    return EXIT.usage;
  }
  return withContext(io, async (ctx) => {
    const { FeedHideError, hidePostFromFeed, unhidePostFromFeed } = await import('../../feeds/hide.ts');
    await ctx.ensureStorage();
    const deps = await ctx.feedDeps();
    let done;
    try {
      done = hide ? await hidePostFromFeed(deps, id, postId) : await unhidePostFromFeed(deps, id, postId);
    } catch (err) {
      if (!(err instanceof FeedHideError)) throw err;
      reportFailure(io, err.kind === 'usage' ? 'usage' : 'not_found', err.message);
      return err.kind === 'usage' ? EXIT.usage : EXIT.failed;
    }
    const feed = done.publish.outcome === 'written' || done.publish.outcome === 'unchanged' ? done.publish : null;
    if (opts.json) {
      printJson(io, {
        accountId: id,
        postId,
        hidden: hide,
        changed: done.changed,
        feed: done.publish.outcome,
        ...(feed ? { posts: feed.postCount } : {}),
      });
      return EXIT.ok;
    }
    const what = hide
      ? done.changed
        ? `hid ${postId} from the feed of account ${id}`
        : `${postId} was already hidden from the feed of account ${id}`
      : `${postId} is back in the feed of account ${id}`;
    io.stdout.write(`${what}; feed ${done.publish.outcome}${feed ? `, ${feed.postCount} posts` : ''}\n`);
    return EXIT.ok;
  });
}

async function hiddenCommand(id: string, opts: { json?: boolean }, io: CliIO): Promise<number> {
  return withContext(io, async (ctx) => {
    const { listHiddenFeedPosts } = await import('../../store/hidden-posts.ts');
    const rows = await listHiddenFeedPosts(await ctx.migratedDb(), [id]);
    if (opts.json) {
      printJson(
        io,
        rows.map((r) => ({ postId: r.postId, hiddenAt: r.hiddenAt.toISOString() })),
      );
      return EXIT.ok;
    }
    if (rows.length === 0) io.stdout.write(`no post is hidden from the feed of account ${id}\n`);
    for (const r of rows) io.stdout.write(`${r.postId}\thidden ${r.hiddenAt.toISOString()}\n`);
    return EXIT.ok;
  });
}

async function confirmRemoval(id: string, opts: { json?: boolean }, io: CliIO): Promise<number> {
  return withContext(io, async (ctx) => {
    const { confirmHeldRemoval } = await import('../../feeds/removal.ts');
    await ctx.ensureStorage();
    const done = await confirmHeldRemoval(await ctx.feedDeps(), id);
    if (!done) {
      const message = `no removal is held for account ${id}: nothing to confirm (see \`feedmirror accounts list\`)`;
      reportFailure(io, 'not_found', message);
      return EXIT.failed;
    }
    const feed = done.publish.outcome === 'written' || done.publish.outcome === 'unchanged' ? done.publish : null;
    if (opts.json) {
      printJson(io, {
        accountId: id,
        removed: done.removed,
        heldSince: done.hold.since.toISOString(),
        feed: done.publish.outcome,
        ...(feed ? { posts: feed.postCount } : {}),
      });
      return EXIT.ok;
    }
    io.stdout.write(
      `removed ${done.removed.length} posts of account ${id} (held since ${done.hold.since.toISOString()}); ` +
        `feed ${done.publish.outcome}${feed ? `, ${feed.postCount} posts` : ''}\n`,
    );
    return EXIT.ok;
  });
}

interface GetOptions {
  json?: boolean;
  rawLinks?: boolean;
  post?: string;
}

async function getFeed(id: string, opts: GetOptions, io: CliIO): Promise<number> {
  if (opts.post !== undefined && !opts.rawLinks) {
    io.stderr.write('--post needs --raw-links (it prints one stored platform item)\n');
    return EXIT.usage;
  }
  if (opts.rawLinks) return getWithRawLinks(id, opts, io);
  return withContext(io, async (ctx) => {
    const { readPublishedFeed } = await import('../../feeds/publish.ts');
    const obj = await readPublishedFeed(await ctx.ensureStorage(), id);
    if (!obj) {
      reportFailure(io, 'not_found', `no feed published for account ${id} yet; run \`feedmirror sync ${id} --wait\``);
      return EXIT.failed;
    }
    const text = obj.body.toString('utf8');
    io.stdout.write((opts.json ? JSON.stringify(JSON.parse(text)) : text.trimEnd()) + '\n');
    return EXIT.ok;
  });
}

/**
 * R-CNV-10 kept for the operator: the store holds each post's raw as the platform sent it (its
 * signed media_url/thumbnail_url included); the published feed drops those links because they
 * die within days (R-LNK-2). This prints the published feed with the stored raw put back, or one
 * stored item. The links it prints expire at their `oe`; they carry no token.
 */
async function getWithRawLinks(id: string, opts: GetOptions, io: CliIO): Promise<number> {
  return withContext(io, async (ctx) => {
    const { readPublishedFeed } = await import('../../feeds/publish.ts');
    const { getPost, listPosts } = await import('../../store/posts.ts');
    const db = await ctx.migratedDb();
    const print = (value: unknown) =>
      io.stdout.write((opts.json ? JSON.stringify(value) : JSON.stringify(value, null, 2)) + '\n');
    if (opts.post !== undefined) {
      const stored = await getPost(db, id, opts.post);
      if (!stored) {
        reportFailure(io, 'not_found', `account ${id} has no stored post ${opts.post}`);
        return EXIT.failed;
      }
      print(stored.post.raw ?? null);
      return EXIT.ok;
    }
    const obj = await readPublishedFeed(ctx.storage, id);
    if (!obj) {
      reportFailure(io, 'not_found', `no feed published for account ${id} yet; run \`feedmirror sync ${id} --wait\``);
      return EXIT.failed;
    }
    const feed = JSON.parse(obj.body.toString('utf8')) as { posts?: Array<Record<string, unknown>> };
    const raws = new Map((await listPosts(db, id)).map((p) => [p.mediaId, p.post.raw]));
    for (const post of feed.posts ?? []) {
      const raw = raws.get(String(post.id));
      if (raw !== undefined) post.raw = raw;
    }
    print(feed);
    return EXIT.ok;
  });
}
