import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { freshDatabase } from '../support/services.ts';
import { ownStorage } from '../support/storage-owner.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { upsertAccount } from '../../src/store/accounts.ts';
import { upsertPosts } from '../../src/store/posts.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { DEPLOYMENT_MARKER_KEY, feedKey, mediaKey } from '../../src/storage/keys.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { createLogger } from '../../src/util/logger.ts';
import { demoFeed } from '../../src/demo/demo-feed.ts';
import { MEDIA_SWEEP_CONCURRENCY, runMediaSweep } from '../../src/feeds/media-sweep.ts';

/** The periodic sweep removes objects of posts that no longer exist, and nothing else (R-LNK-6). */
describe('media sweep (R-LNK-6)', () => {
  let db: pg.Pool;
  let drop: () => Promise<void>;
  const clock = new ManualClock(Date.UTC(2026, 5, 1));
  const logger = createLogger({ name: 'media-sweep' });

  beforeAll(async () => {
    const d = await freshDatabase('mediasweep');
    drop = d.drop;
    db = createPool(d.url, { logger });
    await migrate(db, { logger });
  });
  afterAll(async () => {
    await db.end();
    await drop();
  });

  /** A copy's name as the copy writes it: `<slot>-<16 hex>.jpg` (R-DEL-2). */
  const copyName = (n: number) => `cover-${n.toString(16).padStart(16, '0')}.jpg`;
  const put = (storage: LocalStorage, key: string, body = 'x') =>
    storage.put(key, Buffer.from(body), { contentType: 'image/jpeg', cacheControl: 'public' });
  /** The account's published feed, readable (R-DEL-3): the demo feed here. */
  const putFeed = (storage: LocalStorage, id: string) =>
    storage.put(feedKey(id), Buffer.from(JSON.stringify(demoFeed(clock.now()))), {
      contentType: 'application/json',
      cacheControl: 'no-cache',
    });

  it('removes the media folders of deleted posts, keeps those of existing posts and anything not ours', async () => {
    const storage = new LocalStorage(mkdtempSync(join(tmpdir(), 'fm-sweep-')));
    await ownStorage(db, storage);
    await upsertAccount(db, { id: 'acc1', username: 'shop' }, clock.now());
    const post = demoFeed(clock.now()).posts[0]!;
    await upsertPosts(
      db,
      'acc1',
      [{ mediaId: 'm1', post: { ...post, id: 'm1' }, contentHash: 'h1', earliestOe: null }],
      clock.now(),
    );
    await putFeed(storage, 'acc1');
    await put(storage, mediaKey('acc1', 'm1', copyName(1))); // its post exists: kept
    await put(storage, mediaKey('acc1', 'm2', copyName(2))); // its post is gone: removed
    await put(storage, mediaKey('acc1', 'm2', 'cover.json'));
    // R-DEL-2: in the folder of a deleted post, but not a name the copy writes: never deleted.
    await put(storage, mediaKey('acc1', 'm3', 'README.txt'));

    const result = await runMediaSweep({ db, storage, clock, logger });
    expect(result).toEqual({ accounts: 1, removedMedia: 1, held: 0, refused: 1 });
    const left: string[] = [];
    for await (const k of storage.list('')) left.push(k);
    expect(left.sort()).toEqual([
      DEPLOYMENT_MARKER_KEY,
      feedKey('acc1'),
      mediaKey('acc1', 'm1', copyName(1)),
      mediaKey('acc1', 'm3', 'README.txt'),
    ]);
    // A second run finds nothing more to delete.
    expect((await runMediaSweep({ db, storage, clock, logger })).removedMedia).toBe(0);
  });

  it('visits every account exactly once while sweeping several at a time', async () => {
    const storage = new LocalStorage(mkdtempSync(join(tmpdir(), 'fm-sweep-')));
    await ownStorage(db, storage);
    const ids = Array.from({ length: 3 * MEDIA_SWEEP_CONCURRENCY + 1 }, (_, i) => `many${String(i).padStart(3, '0')}`);
    for (const id of ids) {
      await upsertAccount(db, { id, username: id }, clock.now());
      await putFeed(storage, id);
      await put(storage, mediaKey(id, 'gone1', copyName(7)));
    }
    const result = await runMediaSweep({ db, storage, clock, logger });
    // acc1 from the test above, and each of these once: one orphan each, all removed.
    expect(result).toEqual({ accounts: ids.length + 1, removedMedia: ids.length, held: 0, refused: 0 });
    const left: string[] = [];
    for await (const k of storage.list('media/')) left.push(k);
    expect(left).toEqual([]);
  });
});
