import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountLifecycle } from '../../src/accounts/lifecycle.ts';
import type { FeedDeps } from '../../src/feeds/deps.ts';
import { FeedHideError, hidePostFromFeed, unhidePostFromFeed } from '../../src/feeds/hide.ts';
import { feedToPublish } from '../../src/feeds/publish.ts';
import { runSyncNow } from '../../src/feeds/sync.ts';
import type { Feed } from '../../src/schema/v1.ts';
import type { Simulator } from '../../src/simulator/index.ts';
import { getAccount } from '../../src/store/accounts.ts';
import { getFeedPublication, listMediaCopies, listPostIds } from '../../src/store/posts.ts';
import { DAY, HOUR } from '../../src/util/clock.ts';
import { widgetDocumentSchema } from '../../src/schema/widget-document.ts';
import type { WidgetDeps } from '../../src/widgets/publish.ts';
import { changeWidget, createWidget } from '../../src/widgets/widgets.ts';
import { importSimAccount } from '../support/accounts.ts';
import { openFeedStage, withWidgets, type FeedStage } from '../support/feed-stage.ts';
import { runCli } from '../support/cli.ts';

/**
 * R-OWN-17 through the real sync path (the simulator over HTTP, PostgreSQL, a local storage folder):
 * a post hidden from its account's feed leaves feeds/<id>.json and every widget of the account, its
 * stored post and its copies (rows and objects) untouched; it stays hidden through re-syncs, a
 * change of its caption and a reconnect; unhiding puts it back from the same copies. R-OWN-6 holds:
 * nothing else leaves the feed. The CLI (`feeds hide|unhide|hidden`) in-process.
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
  stage = await openFeedStage('feedhide');
  ({ db, databaseUrl, sim, storageDir } = stage);
  ({ deps, wdeps, lifecycle } = withWidgets(stage));
});

afterAll(async () => {
  await stage?.close();
});

async function connect(id: string, username: string): Promise<void> {
  await importSimAccount(db, stage.cipher, sim, { id, username }, 50 * DAY);
  await lifecycle.apply(id, 'connected');
}

async function feedOf(accountId: string): Promise<Feed> {
  return JSON.parse(await readFile(join(storageDir, 'feeds', `${accountId}.json`), 'utf8')) as Feed;
}

async function widgetPostIds(widgetId: string): Promise<string[]> {
  const raw = JSON.parse(await readFile(join(storageDir, 'widgets', `${widgetId}.json`), 'utf8'));
  return widgetDocumentSchema.parse(raw).posts.map((p) => p.id);
}

/** Every object stored under media/<account>/<post>/ (the post's copies, variants, manifests). */
async function objectsOf(accountId: string, postId: string): Promise<string[]> {
  return (await readdir(join(storageDir, 'media', accountId, postId))).sort();
}

describe('hiding a post from its account’s feed (R-OWN-17)', () => {
  let account = '';
  let widgetId = '';
  let ids: string[] = [];
  let hidden = '';
  let copies: string[] = [];

  it('a hidden post leaves the feed and every widget; its stored post and copies stay; nothing else leaves (R-OWN-6)', async () => {
    const now = sim.clock.now().getTime();
    const acc = sim.createAccount({
      username: 'hide.shop',
      posts: [1, 2, 3, 4].map((h) => ({
        kind: 'image' as const,
        caption: `post ${h} #shop`,
        timestamp: new Date(now - h * HOUR),
      })),
    });
    account = acc.id;
    await connect(account, acc.username);
    expect((await runSyncNow(deps, account, { manual: true })).sync).toMatchObject({
      outcome: 'synced',
      complete: true,
    });
    ids = (await feedOf(account)).posts.map((p) => p.id);
    expect(ids).toHaveLength(4);
    widgetId = (await createWidget(wdeps, { name: 'Shop', accounts: [account] })).widget.id;
    expect(await widgetPostIds(widgetId)).toEqual(ids);

    hidden = ids[1]!;
    copies = await objectsOf(account, hidden);
    expect(copies.length).toBeGreaterThan(0);
    const copyRows = (await listMediaCopies(db, account)).filter((c) => c.mediaId === hidden).length;
    const out = await hidePostFromFeed(deps, account, hidden);
    expect(out).toMatchObject({ changed: true, publish: { outcome: 'written', postCount: 3 } });
    // Published feed and widget without it; the others exactly as before.
    expect((await feedOf(account)).posts.map((p) => p.id)).toEqual(ids.filter((id) => id !== hidden));
    expect(await widgetPostIds(widgetId)).toEqual(ids.filter((id) => id !== hidden));
    // Nothing deleted: the post's row, its copy rows and its objects are all still there.
    expect(await listPostIds(db, account)).toContain(hidden);
    expect((await listMediaCopies(db, account)).filter((c) => c.mediaId === hidden)).toHaveLength(copyRows);
    expect(await objectsOf(account, hidden)).toEqual(copies);
    expect(Object.keys((await getFeedPublication(db, account))!.postHashes ?? {})).not.toContain(hidden);
    // What verify compares the stored feed with is the same feed (no false "stale feed").
    const pub = await getFeedPublication(db, account);
    expect((await feedToPublish(deps, (await getAccount(db, account))!, pub, sim.clock.now())).hash).toBe(
      pub!.feedHash,
    );
    // Hiding it again changes nothing.
    expect((await hidePostFromFeed(deps, account, hidden)).changed).toBe(false);
  });

  it('stays hidden through re-syncs, a changed caption, a reconnect, and the removal and return of its account', async () => {
    sim.updatePost(account, hidden, { caption: 'an edited caption #shop' });
    sim.clock.advance(2 * HOUR);
    expect((await runSyncNow(deps, account, { manual: true })).sync).toMatchObject({
      outcome: 'synced',
      complete: true,
    });
    expect((await feedOf(account)).posts.map((p) => p.id)).not.toContain(hidden);
    await lifecycle.apply(account, 'owner_must_act');
    await connect(account, 'hide.shop');
    expect((await runSyncNow(deps, account, { manual: true })).sync).toMatchObject({
      outcome: 'synced',
      complete: true,
    });
    expect((await feedOf(account)).posts.map((p) => p.id)).toEqual(ids.filter((id) => id !== hidden));
    expect(await widgetPostIds(widgetId)).not.toContain(hidden);
    expect(await listPostIds(db, account)).toContain(hidden);
    expect(await objectsOf(account, hidden)).toEqual(copies);
    // Removed, then connected again: its feed is taken over and the hide still holds.
    await lifecycle.apply(account, 'removed');
    await connect(account, 'hide.shop');
    expect((await runSyncNow(deps, account, { manual: true })).sync).toMatchObject({
      outcome: 'synced',
      complete: true,
    });
    expect((await feedOf(account)).posts.map((p) => p.id)).toEqual(ids.filter((id) => id !== hidden));
    expect(await listPostIds(db, account)).toContain(hidden);
    // The removal took the account out of its widget (R-WID-5): put it back; the post stays out.
    await changeWidget(wdeps, widgetId, { accounts: [account] });
    expect(await widgetPostIds(widgetId)).toEqual(ids.filter((id) => id !== hidden));
  });

  it('unhiding puts it back in the feed and the widget from the copies it has', async () => {
    const out = await unhidePostFromFeed(deps, account, hidden);
    expect(out).toMatchObject({ changed: true, publish: { outcome: 'written', postCount: 4 } });
    const feed = await feedOf(account);
    expect(feed.posts.map((p) => p.id)).toEqual(ids);
    const back = feed.posts.find((p) => p.id === hidden)!;
    expect(back.text).toBe('an edited caption #shop');
    // Its cover is the copy that stayed.
    expect(copies.some((f) => back.thumbnailUrl!.endsWith(`/${f}`))).toBe(true);
    expect(await widgetPostIds(widgetId)).toEqual(ids);
    // Unhiding a post that is not hidden, or hiding one the account does not have: refused.
    await expect(unhidePostFromFeed(deps, account, hidden)).rejects.toThrow(FeedHideError);
    await expect(hidePostFromFeed(deps, account, '17999999999999999')).rejects.toThrow(/has no post 17999999999999999/);
  });

  it('the CLI: feeds hide, hidden, unhide; a wrong post is one line and exit 1, a malformed one exit 2', async () => {
    const env = {
      DATABASE_URL: databaseUrl,
      STORAGE_URL: storageDir,
      MEDIA_PUBLIC_URL: 'http://media.example.test/',
      TOKEN_ENCRYPTION_KEY: stage.key,
    };
    const run = (args: string[]) => runCli(['feeds', ...args], env);
    const post = ids[0]!;
    const hid = await run(['hide', account, post]);
    expect(hid.code, hid.err).toBe(0);
    expect(hid.out).toBe(`hid ${post} from the feed of account ${account}; feed written, 3 posts\n`);
    expect((await feedOf(account)).posts.map((p) => p.id)).not.toContain(post);
    const listed = await run(['hidden', account, '--json']);
    expect(JSON.parse(listed.out)).toEqual([{ postId: post, hiddenAt: expect.any(String) }]);
    const shown = await run(['unhide', account, post, '--json']);
    expect(shown.code, shown.err).toBe(0);
    expect(JSON.parse(shown.out)).toMatchObject({ postId: post, hidden: false, feed: 'written', posts: 4 });
    expect((await run(['hidden', account])).out).toBe(`no post is hidden from the feed of account ${account}\n`);
    const missing = await run(['hide', account, '17999999999999999']);
    expect(missing.code).toBe(1);
    expect(missing.err).toBe(
      `account ${account} has no post 17999999999999999 (feedmirror feeds get ${account} lists its posts)\n`,
    );
    const malformed = await run(['hide', account, '../x']);
    expect(malformed.code).toBe(2);
    expect(malformed.err.trim().split('\n')).toHaveLength(1);
  });
});
