import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { freshDatabase } from '../support/services.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { upsertAccount } from '../../src/store/accounts.ts';
import { upsertPosts } from '../../src/store/posts.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { mediaKey } from '../../src/storage/keys.ts';
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

  it('removes the media folders of deleted posts, keeps those of existing posts and anything not ours', async () => {
    const storage = new LocalStorage(mkdtempSync(join(tmpdir(), 'fm-sweep-')));
    await upsertAccount(db, { id: 'acc1', username: 'shop' }, clock.now());
    const post = demoFeed(clock.now()).posts[0]!;
    await upsertPosts(
      db,
      'acc1',
      [{ mediaId: 'm1', post: { ...post, id: 'm1' }, contentHash: 'h1', earliestOe: null }],
      clock.now(),
    );
    const put = (key: string) =>
      storage.put(key, Buffer.from('x'), { contentType: 'image/jpeg', cacheControl: 'public' });
    await put(mediaKey('acc1', 'm1', 'cover-aaaa.jpg')); // its post exists: kept
    await put(mediaKey('acc1', 'm2', 'cover-bbbb.jpg')); // its post is gone: removed
    await put(mediaKey('acc1', 'm2', 'cover.json'));
    await put('feeds/acc1.json'); // not under media/: never touched

    const result = await runMediaSweep({ db, storage, clock, logger });
    expect(result).toEqual({ accounts: 1, removedMedia: 1 });
    const left: string[] = [];
    for await (const k of storage.list('')) left.push(k);
    expect(left.sort()).toEqual(['feeds/acc1.json', mediaKey('acc1', 'm1', 'cover-aaaa.jpg')]);
    // A second run finds nothing more.
    expect((await runMediaSweep({ db, storage, clock, logger })).removedMedia).toBe(0);
  });

  it('visits every account exactly once while sweeping several at a time', async () => {
    const storage = new LocalStorage(mkdtempSync(join(tmpdir(), 'fm-sweep-')));
    const ids = Array.from({ length: 3 * MEDIA_SWEEP_CONCURRENCY + 1 }, (_, i) => `many${String(i).padStart(3, '0')}`);
    for (const id of ids) {
      await upsertAccount(db, { id, username: id }, clock.now());
      await storage.put(mediaKey(id, 'gone1', 'cover-aaaa.jpg'), Buffer.from('x'), {
        contentType: 'image/jpeg',
        cacheControl: 'public',
      });
    }
    const result = await runMediaSweep({ db, storage, clock, logger });
    // acc1 from the test above, and each of these once: one orphan each, all removed.
    expect(result).toEqual({ accounts: ids.length + 1, removedMedia: ids.length });
    const left: string[] = [];
    for await (const k of storage.list('media/')) left.push(k);
    expect(left).toEqual([]);
  });
});
