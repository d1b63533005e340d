import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountLifecycle } from '../../src/accounts/lifecycle.ts';
import type { FeedDeps } from '../../src/feeds/deps.ts';
import { publishDemoFeedIfNone } from '../../src/feeds/publish.ts';
import { runSyncNow } from '../../src/feeds/sync.ts';
import type { Simulator } from '../../src/simulator/index.ts';
import { createStorage } from '../../src/storage/index.ts';
import { ownStorage } from '../support/storage-owner.ts';
import { DAY, HOUR } from '../../src/util/clock.ts';
import { widgetDocumentSchema, type WidgetDocument } from '../../src/schema/widget-document.ts';
import { publishWidgetDocument, type WidgetDeps } from '../../src/widgets/publish.ts';
import { changeWidget, createWidget, hidePost, removeWidget, unhidePost } from '../../src/widgets/widgets.ts';
import { startS3, S3RVER_CREDENTIALS, type TestS3 } from '../support/s3.ts';
import { importSimAccount } from '../support/accounts.ts';
import { openFeedStage, withWidgets, type FeedStage } from '../support/feed-stage.ts';
import { runCli } from '../support/cli.ts';

/**
 * Widgets (R-WID-1..6) through the real sync path: the simulator over HTTP, PostgreSQL, a local
 * storage folder (and one widget on S3, s3rver). Each feed publication republishes the widgets of
 * its account (FeedDeps.sourceChanged), as the worker and the CLI wire it (src/cli/context.ts).
 */
let stage: FeedStage;
let db: pg.Pool;
let databaseUrl: string;
let sim: Simulator;
let deps: FeedDeps;
let wdeps: WidgetDeps;
let storageDir: string;
let lifecycle: AccountLifecycle;

beforeAll(async () => {
  stage = await openFeedStage('widgets');
  ({ db, databaseUrl, sim, storageDir } = stage);
  // A new storage, made this deployment's as a worker's first start makes it (R-DEL-1).
  await ownStorage(db, stage.deps.storage);
  ({ deps, wdeps, lifecycle } = withWidgets(stage, { viewsBaseUrl: 'http://feeds.example.test' }));
});

afterAll(async () => {
  await stage?.close();
});

/** Connect (or connect again) an account with a fresh token, as `accounts add` stores it. */
async function connect(id: string, username: string): Promise<void> {
  await importSimAccount(db, stage.cipher, sim, { id, username }, 50 * DAY);
  await lifecycle.apply(id, 'connected');
}

/** An account whose posts are `hoursAgo` old (captions given), connected and synced. */
async function syncedAccount(username: string, posts: Array<{ hoursAgo: number; caption: string; kind?: string }>) {
  const now = sim.clock.now().getTime();
  const acc = sim.createAccount({
    username,
    posts: posts.map((p) => ({
      kind: (p.kind ?? 'image') as 'image',
      caption: p.caption,
      timestamp: new Date(now - p.hoursAgo * HOUR),
    })),
  });
  await connect(acc.id, acc.username);
  await sync(acc.id);
  return acc.id;
}

async function sync(accountId: string) {
  const r = await runSyncNow(deps, accountId, { manual: true });
  return r;
}

async function documentOf(id: string): Promise<WidgetDocument> {
  const raw = JSON.parse(await readFile(join(storageDir, 'widgets', `${id}.json`), 'utf8'));
  return widgetDocumentSchema.parse(raw);
}

const exists = (key: string) =>
  stat(join(storageDir, key)).then(
    () => true,
    () => false,
  );

describe('widgets merge their accounts and follow their feeds (R-WID-1..5)', () => {
  let a = '';
  let b = '';
  let widgetId = '';

  it('R-WID-1: a widget of two accounts shows both accounts’ posts, newest first, with their account', async () => {
    a = await syncedAccount('widget.alpha', [
      { hoursAgo: 1, caption: 'alpha one #sale' },
      { hoursAgo: 3, caption: 'alpha two #new' },
      { hoursAgo: 5, caption: 'alpha three' },
    ]);
    b = await syncedAccount('widget.beta', [
      { hoursAgo: 2, caption: 'beta one #SALE' },
      { hoursAgo: 4, caption: 'beta two', kind: 'carousel' },
    ]);
    const { widget, publish } = await createWidget(wdeps, { name: 'Shop', accounts: [a, b], layout: 'masonry' });
    widgetId = widget.id;
    expect(widget.id).toMatch(/^w_[a-z2-7]{10}$/);
    expect(publish.outcome).toBe('written');
    const doc = await documentOf(widgetId);
    expect(doc.posts.map((p) => p.text)).toEqual([
      'alpha one #sale',
      'beta one #SALE',
      'alpha two #new',
      'beta two',
      'alpha three',
    ]);
    expect(doc.posts.map((p) => p.username)).toEqual([
      'widget.alpha',
      'widget.beta',
      'widget.alpha',
      'widget.beta',
      'widget.alpha',
    ]);
    expect(doc.posts[0]!.accountId).toBe(a);
    // Posts exactly as their feed publishes them (sizes and placeholders), raw left out.
    const feed = JSON.parse(await readFile(join(storageDir, 'feeds', `${a}.json`), 'utf8'));
    const { raw: _raw, ...published } = feed.posts[0];
    expect(doc.posts[0]).toEqual({ ...published, accountId: a, username: 'widget.alpha' });
    expect(doc.posts[0]!.thumbnailSizes!.length).toBeGreaterThan(0);
    expect(doc.accounts.map((x) => x.username)).toEqual(['widget.alpha', 'widget.beta']);
    expect(doc).toMatchObject({ version: 1, layout: 'masonry', staleSince: null, demo: false });
    expect(doc.viewsUrl).toBe(`http://feeds.example.test/w/${widgetId}/view`);
    // The static fragment (src/embed/markup.ts) is published beside it.
    const html = await readFile(join(storageDir, 'widgets', `${widgetId}.html`), 'utf8');
    expect(html).toContain(widgetId);
    expect(html).toContain(doc.posts[0]!.thumbnailSizes![0]!.url);
    // Republishing an unchanged widget writes nothing.
    expect((await publishWidgetDocument(wdeps, widgetId)).outcome).toBe('unchanged');
  });

  it('R-WID-5: a new post at the source reaches the widget with the feed’s publication', async () => {
    sim.addPost(b, { kind: 'image', caption: 'beta newest', timestamp: sim.clock.now() });
    sim.clock.advance(HOUR);
    await sync(b);
    expect((await documentOf(widgetId)).posts[0]!.text).toBe('beta newest');
  });

  it('R-WID-3: a hidden post is absent, and stays hidden after a re-sync and after its account connects again', async () => {
    const doc = await documentOf(widgetId);
    const target = doc.posts.find((p) => p.text === 'alpha two #new')!;
    await hidePost(wdeps, widgetId, target.id);
    const ids = () => documentOf(widgetId).then((d) => d.posts.map((p) => p.id));
    expect(await ids()).not.toContain(target.id);
    // The post is edited at the source and synced again: still hidden.
    sim.updatePost(a, target.id, { caption: 'alpha two, edited #new' });
    sim.clock.advance(HOUR);
    await sync(a);
    expect(await ids()).not.toContain(target.id);
    // Connected again (a new token), synced: still hidden.
    await connect(a, 'widget.alpha');
    sim.clock.advance(HOUR);
    await sync(a);
    expect(await ids()).not.toContain(target.id);
    // Removed, connected again and put back in the widget: still hidden (hidden by post id).
    await lifecycle.apply(a, 'removed');
    await connect(a, 'widget.alpha');
    await sync(a);
    await changeWidget(wdeps, widgetId, { accounts: [a, b] });
    const back = await documentOf(widgetId);
    expect(back.posts.some((p) => p.accountId === a)).toBe(true);
    expect(back.posts.map((p) => p.id)).not.toContain(target.id);
    // Unhidden: back in its place.
    await unhidePost(wdeps, widgetId, target.id);
    expect(await ids()).toContain(target.id);
    // An unknown post is refused, naming it.
    await expect(hidePost(wdeps, widgetId, '999')).rejects.toThrow(/no post "999"/);
  });

  it('R-WID-4: filters by post type and by caption hashtag (any of the included, none of the excluded)', async () => {
    await changeWidget(wdeps, widgetId, { options: { filters: { includeTags: ['#Sale', 'new'] } } });
    expect((await documentOf(widgetId)).posts.map((p) => p.text).sort()).toEqual([
      'alpha one #sale',
      'alpha two, edited #new',
      'beta one #SALE',
    ]);
    await changeWidget(wdeps, widgetId, { options: { filters: { excludeTags: ['sale'] } } });
    expect((await documentOf(widgetId)).posts.map((p) => p.text)).toEqual(['alpha two, edited #new']);
    await changeWidget(wdeps, widgetId, {
      options: { filters: { includeTags: [], excludeTags: [], types: ['carousel'] } },
    });
    expect((await documentOf(widgetId)).posts.map((p) => p.text)).toEqual(['beta two']);
    await changeWidget(wdeps, widgetId, { options: { filters: { types: [] }, maxPosts: 2 } });
    const capped = await documentOf(widgetId);
    expect(capped.posts).toHaveLength(2);
    expect(capped.options.limit).toBe(2);
    await expect(changeWidget(wdeps, widgetId, { options: { theme: 'blue' } })).rejects.toThrow(
      'theme must be one of light, dark, auto',
    );
    await changeWidget(wdeps, widgetId, { options: { maxPosts: 60, limit: 12 } });
  });

  it('R-WID-8: a failing source makes the document say since when (staleSince), cleared by a good sync', async () => {
    sim.clock.advance(HOUR);
    const failedAt = sim.clock.now();
    sim.injectFault({ path: '/media', kind: 'status', status: 500, times: 20 });
    try {
      await sync(b).catch(() => undefined);
    } finally {
      sim.clearFaults();
    }
    const stale = await documentOf(widgetId);
    expect(stale.staleSince).not.toBeNull();
    expect(Date.parse(stale.staleSince!)).toBeGreaterThanOrEqual(failedAt.getTime());
    // The last good posts stay.
    expect(stale.posts.some((p) => p.accountId === b)).toBe(true);
    sim.clock.advance(HOUR);
    await sync(b);
    expect((await documentOf(widgetId)).staleSince).toBeNull();
  });

  it('R-WID-5: an account’s removal takes it out of every widget; deleting a widget deletes its objects', async () => {
    await lifecycle.apply(b, 'removed');
    const doc = await documentOf(widgetId);
    expect(doc.accounts.map((x) => x.id)).toEqual([a]);
    expect(doc.posts.every((p) => p.accountId === a)).toBe(true);
    await removeWidget(wdeps, widgetId);
    expect(await exists(`widgets/${widgetId}.json`)).toBe(false);
    expect(await exists(`widgets/${widgetId}.html`)).toBe(false);
  });

  it('R-WID-2: demo feeds: shown once (demo: true) while every account has only the demo; left out beside real posts', async () => {
    const d1 = sim.createAccount({ username: 'widget.demo.one', posts: 2 });
    const d2 = sim.createAccount({ username: 'widget.demo.two', posts: 2 });
    for (const d of [d1, d2]) {
      await connect(d.id, d.username);
      await publishDemoFeedIfNone(deps, d.id);
    }
    const { widget } = await createWidget(wdeps, { name: 'Demo', accounts: [d1.id, d2.id] });
    const demo = await documentOf(widget.id);
    expect(demo.demo).toBe(true);
    expect(demo.posts.length).toBeGreaterThan(0);
    expect(new Set(demo.posts.map((p) => p.id)).size).toBe(demo.posts.length);
    await changeWidget(wdeps, widget.id, { accounts: [d1.id, a] });
    const mixed = await documentOf(widget.id);
    expect(mixed.demo).toBe(false);
    expect(mixed.posts.every((p) => p.accountId === a)).toBe(true);
    await removeWidget(wdeps, widget.id);
  });

  it('R-WID-2: a widget on S3 is published and deleted there too', async () => {
    let s3: TestS3 | undefined;
    try {
      s3 = await startS3('widgets-test');
      const storage = createStorage(
        {
          STORAGE_URL: `s3://${s3.bucket}/fm`,
          S3_ENDPOINT: s3.endpoint,
          S3_REGION: 'us-east-1',
          S3_FORCE_PATH_STYLE: true,
          S3_CHECKSUMS: 'when_required',
          MEDIA_PUBLIC_URL: 'http://cdn.example.test/fm/',
        },
        { credentials: S3RVER_CREDENTIALS, maxAttempts: 1 },
      );
      const s3deps = { ...wdeps, storage };
      await ownStorage(db, storage);
      // The source feed as the S3 path would hold it (copied from the local folder).
      await storage.put(`feeds/${a}.json`, await readFile(join(storageDir, 'feeds', `${a}.json`)), {
        contentType: 'application/json; charset=utf-8',
        cacheControl: 'public, max-age=300',
      });
      const { widget } = await createWidget(s3deps, { name: 'On S3', accounts: [a] });
      expect(widget.documentUrl).toBe(`http://cdn.example.test/fm/widgets/${widget.id}.json`);
      const obj = await storage.get(`widgets/${widget.id}.json`);
      expect(obj?.cacheControl).toBe('public, max-age=300');
      expect(obj?.contentType).toBe('application/json; charset=utf-8');
      const doc = widgetDocumentSchema.parse(JSON.parse(obj!.body.toString('utf8')));
      expect(doc.posts.length).toBeGreaterThan(0);
      expect((await storage.head(`widgets/${widget.id}.html`))?.contentType).toBe('text/html; charset=utf-8');
      await removeWidget(s3deps, widget.id);
      expect(await storage.head(`widgets/${widget.id}.json`)).toBeNull();
    } finally {
      await s3?.close();
    }
  });
});

describe('feedmirror widgets (the CLI, in-process)', () => {
  const env = () => ({
    DATABASE_URL: databaseUrl,
    STORAGE_URL: storageDir,
    MEDIA_PUBLIC_URL: 'http://media.example.test/',
    LOG_LEVEL: 'info',
  });
  const run = (args: string[]) => runCli(['widgets', ...args], env());

  it('R-WID-6: add --json prints the widget (jq-able); list, show, set, hide, unhide, remove; unknown ids are one line', async () => {
    const acc = await syncedAccount('widget.cli', [
      { hoursAgo: 1, caption: 'cli one' },
      { hoursAgo: 2, caption: 'cli two' },
    ]);
    const added = await run([
      'add',
      '--name',
      'CLI shop',
      '--account',
      acc,
      '--layout',
      'carousel',
      '--limit',
      '6',
      '--json',
    ]);
    expect(added.code, added.err).toBe(0);
    const w = JSON.parse(added.out);
    expect(w).toMatchObject({ name: 'CLI shop', layout: 'carousel', accounts: [acc], options: { limit: 6 } });
    expect(w.embed).toBe(
      `<div data-feedmirror-widget="${w.id}"></div>\n<script defer src="http://media.example.test/widget/feedmirror-widget.js"></script>`,
    );
    expect(w.documentUrl).toBe(`http://media.example.test/widgets/${w.id}.json`);

    const listed = JSON.parse((await run(['list', '--json'])).out) as Array<{ id: string }>;
    expect(listed.map((x) => x.id)).toContain(w.id);

    const shown = JSON.parse((await run(['show', w.id, '--json'])).out);
    expect(shown.posts.map((p: { text: string }) => p.text)).toEqual(['cli one', 'cli two']);
    const human = await run(['show', w.id]);
    expect(human.out).toContain(w.embed);

    const set = await run(['set', w.id, '--layout', 'list', '--no-header', '--theme', 'dark', '--json']);
    expect(set.code, set.err).toBe(0);
    expect(JSON.parse(set.out)).toMatchObject({ layout: 'list', options: { header: false, theme: 'dark' } });
    expect((await documentOf(w.id)).layout).toBe('list');

    const postId = shown.posts[0].id as string;
    expect((await run(['hide', w.id, postId])).code).toBe(0);
    expect((await documentOf(w.id)).posts.map((p) => p.id)).not.toContain(postId);
    expect((await run(['unhide', w.id, postId])).code).toBe(0);

    // Refusals: one line on stderr, non-zero.
    const noAccount = await run(['add', '--name', 'x', '--account', '404404']);
    expect(noAccount.code).toBe(1);
    expect(noAccount.err).toBe('no account "404404" (feedmirror accounts list shows them)\n');
    const noWidget = await run(['show', 'w_aaaaaaaaaa']);
    expect(noWidget.code).toBe(1);
    expect(noWidget.err.trim().split('\n')).toHaveLength(1);
    const noPost = await run(['hide', w.id, '123']);
    expect(noPost.code).toBe(1);
    expect(noPost.err).toMatch(/^no post "123" in the feeds of widget w_/);
    const badLayout = await run(['set', w.id, '--layout', 'spiral']);
    expect(badLayout.code).toBe(2);
    expect(badLayout.err).toBe('layout must be one of grid, list, carousel, masonry\n');

    expect((await run(['remove', w.id])).code).toBe(0);
    expect(await exists(`widgets/${w.id}.json`)).toBe(false);
    expect((await run(['remove', w.id])).code).toBe(1);
  });
});
