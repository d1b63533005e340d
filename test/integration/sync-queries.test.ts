import { mkdtempSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FeedDeps } from '../../src/feeds/deps.ts';
import { syncAccount } from '../../src/feeds/sync.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { upsertAccount } from '../../src/store/accounts.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import {
  copySourceKey,
  getPostForCopy,
  getPosts,
  listCopySources,
  saveMediaCopy,
  upsertPosts,
} from '../../src/store/posts.ts';
import { demoFeed } from '../../src/demo/demo-feed.ts';
import { DAY, HOUR } from '../../src/util/clock.ts';
import { convertItems } from '../../src/convert/convert-item.ts';
import { contentHash } from '../../src/util/content-hash.ts';
import { earliestExpiry } from '../../src/platform/links.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { freshDatabase } from '../support/services.ts';
import { importSimAccount } from '../support/accounts.ts';
import { noSleep, simPlatformClient } from '../support/sim-platform.ts';

/**
 * A sync reads the database a fixed number of times, however many posts the account has: it used
 * to make one query per post (to find its videos) and one per image slot (to compare with the
 * recorded copies), which at 10,000 accounts was most of the worker's CPU per sync (README,
 * Benchmarks). And the store functions that replaced those loops answer what the loops did.
 */
let db: pg.Pool;
let drop: () => Promise<void>;
let sim: Simulator;
const cipher = TokenCipher.fromEnv(randomBytes(32).toString('base64'));

/** The pool, counting every query: on the pool itself and on clients it hands out. */
function counting(pool: pg.Pool): { db: pg.Pool; count: () => number } {
  let n = 0;
  const countQueries = <T extends { query: (...a: never[]) => unknown }>(target: T): T =>
    new Proxy(target, {
      get(t, k, r) {
        if (k === 'query') return (...a: never[]) => (n++, t.query(...a));
        if (k === 'connect') return async () => countQueries(await (t as unknown as pg.Pool).connect());
        const v = Reflect.get(t, k, r) as unknown;
        return typeof v === 'function' ? v.bind(t) : v;
      },
    });
  return { db: countQueries(pool), count: () => n };
}

beforeAll(async () => {
  const fresh = await freshDatabase('syncqueries');
  drop = fresh.drop;
  db = createPool(fresh.url, { max: 3 });
  await migrate(db);
  sim = await startSimulator();
});

afterAll(async () => {
  await sim?.close();
  await db?.end();
  await drop?.();
});

describe('store: what a copy and a sync read', () => {
  const at = new Date(Date.UTC(2026, 5, 1));
  const post = (id: string) => ({ ...demoFeed(at).posts[0]!, id });
  const copy = (mediaId: string, slot: string, sourceId: string) => ({
    accountId: 'acc-s',
    mediaId,
    slot,
    sourceId,
    key: `media/acc-s/${mediaId}/${slot}-x.jpg`,
    width: 10,
    height: 10,
    bytes: 1,
    contentType: 'image/jpeg',
    variants: [],
    placeholder: null,
    copiedAt: at,
  });

  beforeAll(async () => {
    await upsertAccount(db, { id: 'acc-s', username: 'store.shop' }, at);
    await upsertPosts(
      db,
      'acc-s',
      ['m1', 'm2', 'm3'].map((id) => ({ mediaId: id, post: post(id), contentHash: `h-${id}`, earliestOe: null })),
      at,
    );
    await saveMediaCopy(db, copy('m1', 'cover', 'src-a'));
    await saveMediaCopy(db, copy('m1', 'slide-1', 'src-b'));
  });

  it('getPostForCopy: the post and the source its slot was copied from; null source for a slot never copied; null for a post not stored', async () => {
    const cover = await getPostForCopy(db, 'acc-s', 'm1', 'cover');
    expect(cover?.stored.post.id).toBe('m1');
    expect(cover?.copiedSourceId).toBe('src-a');
    expect((await getPostForCopy(db, 'acc-s', 'm1', 'slide-1'))?.copiedSourceId).toBe('src-b');
    // Another slot's copy is not this slot's.
    expect((await getPostForCopy(db, 'acc-s', 'm1', 'slide-2'))?.copiedSourceId).toBeNull();
    expect((await getPostForCopy(db, 'acc-s', 'm2', 'cover'))?.copiedSourceId).toBeNull();
    expect(await getPostForCopy(db, 'acc-s', 'gone', 'cover')).toBeNull();
    expect(await getPostForCopy(db, 'other-account', 'm1', 'cover')).toBeNull();
  });

  it('listCopySources: every recorded copy of the account by media and slot; getPosts: the posts asked for that exist', async () => {
    const sources = await listCopySources(db, 'acc-s');
    expect([...sources]).toEqual(
      expect.arrayContaining([
        [copySourceKey('m1', 'cover'), 'src-a'],
        [copySourceKey('m1', 'slide-1'), 'src-b'],
      ]),
    );
    expect(sources.size).toBe(2);
    expect((await listCopySources(db, 'other-account')).size).toBe(0);
    expect((await getPosts(db, 'acc-s', ['m3', 'm1', 'missing'])).map((p) => p.mediaId).sort()).toEqual(['m1', 'm3']);
    expect(await getPosts(db, 'acc-s', [])).toEqual([]);
  });
});

describe('upsertPosts: an unchanged listing writes no post', () => {
  const at = new Date(Date.UTC(2026, 5, 1));
  const later = new Date(at.getTime() + HOUR);
  const oe = (d: Date) => Math.floor(d.getTime() / 1000).toString(16);
  /** The same photo post, its link signed with `sig` and valid until `until`. */
  const listed = (sig: string, until: Date, caption = 'unchanged') => {
    const item = {
      id: 'up1',
      caption,
      media_type: 'IMAGE',
      media_url: `https://cdn.example.test/v/up1.jpg?oe=${oe(until)}&sig=${sig}`,
      permalink: 'https://www.example.test/p/up1/',
      timestamp: '2026-05-30T10:00:00+0000',
    };
    const post = convertItems([item]).posts[0]!;
    return { mediaId: 'up1', post, contentHash: contentHash(post), earliestOe: earliestExpiry(item) ?? null };
  };
  const stored = async () =>
    (
      await db.query<{ url: string; last_seen_at: Date; earliest_oe: Date }>(
        `SELECT last_seen_at, earliest_oe FROM posts WHERE account_id = 'acc-u' AND media_id = 'up1'`,
      )
    ).rows[0]!;
  const url = async () => (await getPosts(db, 'acc-u', ['up1']))[0]!.post.media[0]!.url;

  it('same content and links that live no longer: only last_seen moves (the stored links stay); later links or new content are written', async () => {
    await upsertAccount(db, { id: 'acc-u', username: 'upsert.shop' }, at);
    const until = new Date(at.getTime() + 3 * DAY);
    expect(await upsertPosts(db, 'acc-u', [listed('aaa', until)], at)).toEqual(
      new Map([['up1', { change: 'new', earliestOe: until }]]),
    );
    // Listed again, re-signed with the same oe, then with an earlier one: the row keeps its links.
    for (const [sig, oeAt] of [
      ['bbb', until],
      ['ccc', new Date(until.getTime() - DAY)],
    ] as const) {
      expect(await upsertPosts(db, 'acc-u', [listed(sig, oeAt)], later)).toEqual(
        new Map([['up1', { change: 'unchanged', earliestOe: until }]]),
      );
      expect(await url()).toContain('sig=aaa');
      expect((await stored()).last_seen_at).toEqual(later);
    }
    // Links that live longer are written.
    const longer = new Date(until.getTime() + DAY);
    expect(await upsertPosts(db, 'acc-u', [listed('ddd', longer)], later)).toEqual(
      new Map([['up1', { change: 'unchanged', earliestOe: longer }]]),
    );
    expect(await url()).toContain('sig=ddd');
    // New content is written, whatever its links.
    expect(await upsertPosts(db, 'acc-u', [listed('eee', until, 'edited')], later)).toEqual(
      new Map([['up1', { change: 'changed', earliestOe: until }]]),
    );
    expect((await getPosts(db, 'acc-u', ['up1']))[0]!.post.text).toBe('edited');
  });
});

describe('a sync reads the database a fixed number of times, not once per post or image', () => {
  it('first and unchanged syncs of a 10-post and a 40-post account (videos and carousels among them) make the same number of queries: five for a first one, three for an unchanged one', async () => {
    const platform = simPlatformClient(sim, { maxRetries: 1, sleep: noSleep });
    const storage = new LocalStorage(mkdtempSync(join(tmpdir(), 'fm-syncqueries-')));
    const queries = async (posts: number) => {
      const acc = sim.createAccount({ posts });
      await importSimAccount(db, cipher, sim, acc);
      const c = counting(db);
      const deps: FeedDeps = {
        db: c.db,
        cipher,
        platform,
        storage,
        limits: { allowedHosts: [sim.imageHost], maxBytes: 1e7, maxPixels: 1e8, timeoutMs: 5_000, variantWidths: [] },
        clock: sim.clock,
        logger: silentLogger,
      };
      const first = await syncAccount(deps, acc.id);
      const afterFirst = c.count();
      const second = await syncAccount(deps, acc.id);
      if (first.outcome !== 'synced' || second.outcome !== 'synced')
        throw new Error(`sync did not run: ${first.outcome}, ${second.outcome}`);
      return { first: afterFirst, second: c.count() - afterFirst, posts: first.posts, copies: first.copies.length };
    };
    const small = await queries(10);
    const large = await queries(40);
    // The larger account really has more to compare (the loops this guards ran per post and per image).
    expect(large.posts).toBeGreaterThan(3 * small.posts);
    expect(large.copies).toBeGreaterThan(3 * small.copies);
    expect(large.first).toBe(small.first);
    expect(large.second).toBe(small.second);
    // A first sync: its context, the demo feed's publication (R-SCH-11; used as written, not read
    // back), the posts (last-seen update and insert) and its record.
    expect(small.first).toBe(5);
    // An unchanged hourly sync: what it reads before listing in one round trip (its context),
    // the posts' last-seen update, and its record. Each round trip is a few hundred microseconds
    // of the worker's CPU, and 100,000 accounts make 28 of these syncs a second.
    expect(small.second).toBe(3);
  });
});
