import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import type { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { imageSlots } from '../../src/feeds/slots.ts';
import { validateFeed } from '../../src/schema/validate.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { mediaPrefix } from '../../src/storage/keys.ts';
import { upsertAccount } from '../../src/store/accounts.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { listMediaCopies, listPosts } from '../../src/store/posts.ts';
import { saveToken } from '../../src/store/tokens.ts';
import { DAY, FileClock } from '../../src/util/clock.ts';
import { createQueue, QUEUE } from '../../jobs/queues.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { spawnFeedmirror, type Spawned } from '../support/processes.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { until } from '../support/wait.ts';
import { workerEnv } from '../support/worker-env.ts';

/**
 * A worker killed mid-copy: the next run completes without duplicates. A real
 * `feedmirror worker` process runs the sync flow; one image download is held open by the
 * simulator (fault 'timeout') so its mirror-media job is in flight, and the process is SIGKILLed.
 * A second worker process then runs the next sync. BullMQ's stalled-job recovery would also
 * re-run the dead worker's job, but only after its 30 s lock expires (lockDuration and
 * stalledInterval are not configurable), so the test relies on the next sync: it re-lists the
 * slots that have no copy yet and copies them. Copies are content-addressed and committed by
 * their manifest, so whatever the dead worker left behind is reused or overwritten under the same
 * names, never duplicated.
 */
const T0 = Date.UTC(2026, 3, 1, 10);
const POSTS = 8;

describe('a feed worker killed mid-copy', () => {
  let sim: Simulator;
  let db: pg.Pool;
  let drop: () => Promise<void>;
  let storageDir: string;
  let env: Record<string, string>;
  let accountId: string;
  let syncQueue: Queue;
  let mirrorQueue: Queue;
  const running: Spawned[] = [];
  const redis = redisForTest('feedcrash');
  const key = randomBytes(32).toString('base64');
  const clockFile = join(mkdtempSync(join(tmpdir(), 'fm-crash-clock-')), 'now');

  beforeAll(async () => {
    registerSecretForAudit(key);
    sim = await startSimulator({ start: T0 });
    FileClock.write(clockFile, T0);
    const database = await freshDatabase('feedcrash');
    drop = database.drop;
    db = createPool(database.url, { max: 3 });
    await migrate(db);
    const cipher = TokenCipher.fromEnv(key);
    const acc = sim.createAccount({ username: 'crash.shop', posts: POSTS });
    accountId = acc.id;
    const token = sim.issueLongLivedToken(acc.id);
    registerSecretForAudit(token);
    await upsertAccount(db, { id: acc.id, username: acc.username }, sim.clock.now());
    await saveToken(
      db,
      cipher,
      { accountId: acc.id, accessToken: token, obtainedAt: sim.clock.now(), expiresAt: new Date(T0 + 60 * DAY) },
      'imported',
    );
    storageDir = mkdtempSync(join(tmpdir(), 'fm-crash-storage-'));
    env = workerEnv({
      sim,
      databaseUrl: database.url,
      redis,
      key,
      clockFile,
      storageDir,
      // Two copies at a time: one lane is held, the other keeps copying. The held download must
      // outlive the kill, so its timeout is long.
      extra: {
        WORKER_CONCURRENCY: '2',
        MIRROR_CONCURRENCY: '2',
        MEDIA_TIMEOUT_MS: '120000',
        MEDIA_VARIANT_WIDTHS: '160',
        LOG_LEVEL: 'info',
      },
    });
    syncQueue = createQueue(QUEUE.feedSync, redis);
    mirrorQueue = createQueue(QUEUE.mirrorMedia, redis);
  }, 60_000);

  afterAll(async () => {
    for (const w of running) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGTERM');
    await Promise.all(running.map((w) => w.exited));
    for (const q of [syncQueue, mirrorQueue]) {
      await q?.obliterate({ force: true }).catch(() => undefined);
      await q?.close();
    }
    await db?.end();
    await drop?.();
    await sim?.close();
    if (storageDir) await rm(storageDir, { recursive: true, force: true });
  });

  it('SIGKILL while a mirror-media job is active: the next sync completes the feed, one copy per slot, no orphans', async () => {
    const cdn = () => sim.requests.filter((r) => r.host === 'cdn');
    // Hold the first image download open: that copy job stays in flight until the process dies.
    let heldPath: string | undefined;
    sim.injectFault({
      match: (r) => {
        if (r.host !== 'cdn' || heldPath !== undefined) return false;
        heldPath = r.path;
        return true;
      },
      kind: 'timeout',
      times: 1,
    });

    // Worker 1: its start-up catch-up schedules the account; the scheduler's first sync is immediate.
    const first = spawnFeedmirror(['worker'], env);
    running.push(first);
    await until(() => heldPath !== undefined, 'the held image download', 30_000);
    // The other lane copied some images meanwhile: the kill lands in the middle of the flow.
    await until(async () => (await listMediaCopies(db, accountId)).length >= 2, 'two copies before the kill', 30_000);
    expect(await mirrorQueue.getActiveCount()).toBeGreaterThanOrEqual(1);
    first.child.kill('SIGKILL');
    expect(await first.exited).toBeNull(); // killed, not a clean exit
    expect(first.output()).not.toContain('worker stopped');

    const copiesAtKill = (await listMediaCopies(db, accountId)).length;
    // Video files are copied only with MIRROR_VIDEOS on (off here): the image slots.
    const slots = (await listPosts(db, accountId)).reduce(
      (n, p) => n + imageSlots(p.post).filter((s) => s.kind !== 'video').length,
      0,
    );
    expect(copiesAtKill).toBeLessThan(slots); // the held copy at least was not done
    // The dead worker's job is still "active" in Redis: its lock has not expired.
    expect(await mirrorQueue.getActiveCount()).toBeGreaterThanOrEqual(1);
    const feedFile = join(storageDir, 'feeds', `${accountId}.json`);
    const readFeed = async () =>
      JSON.parse(await readFile(feedFile, 'utf8').catch(() => 'null')) as { demo?: boolean; posts?: unknown[] } | null;
    expect((await readFeed())?.demo ?? true).toBe(true); // nothing but the demo feed published yet

    // Worker 2 and the next sync.
    const second = spawnFeedmirror(['worker'], env);
    running.push(second);
    await until(() => second.output().includes('worker started'), 'the second worker to start', 30_000);
    await syncQueue.add(QUEUE.feedSync, { accountId });
    const stored = await listPosts(db, accountId);
    await until(
      async () => {
        const f = await readFeed();
        return f?.demo === false && f.posts?.length === stored.length;
      },
      'the feed with every post published',
      60_000,
    );

    // The feed validates and points only at copies (video files aside).
    const v = validateFeed(await readFeed());
    expect(v.ok).toBe(true);
    if (!v.ok) return;
    for (const p of v.feed.posts)
      if (p.thumbnailUrl) expect(p.thumbnailUrl).toMatch(/^http:\/\/media\.example\.test\/media\//);

    // One copy per slot: exactly one content-addressed original, one manifest, no stray objects.
    const copies = await listMediaCopies(db, accountId);
    expect(copies).toHaveLength(slots);
    const storage = new LocalStorage(storageDir);
    const keys: string[] = [];
    for await (const k of storage.list(mediaPrefix(accountId))) keys.push(k);
    const referenced = new Set(
      copies.flatMap((c) => [
        c.key,
        ...c.variants.map((x) => x.key),
        `${mediaPrefix(accountId, c.mediaId)}${c.slot}.json`,
      ]),
    );
    expect(keys.filter((k) => !referenced.has(k))).toEqual([]); // no orphan or half-done object
    expect(keys.length).toBe(referenced.size);
    const originals = keys.filter((k) => /\/(cover|slide-\d+)-[0-9a-f]{16}\.[a-z]+$/.test(k));
    expect(originals).toHaveLength(slots);
    const perSlot = new Map<string, number>();
    for (const k of originals) {
      const slotId = k.replace(/-[0-9a-f]{16}\.[a-z]+$/, '');
      perSlot.set(slotId, (perSlot.get(slotId) ?? 0) + 1);
    }
    expect([...perSlot.values()].every((n) => n === 1)).toBe(true);
    expect(keys.filter((k) => k.endsWith('.json'))).toHaveLength(slots);
    for (const c of copies) expect(await storage.head(c.key)).toMatchObject({ size: c.bytes });

    // The held image was downloaded again by the next run: its first attempt never finished.
    const held = cdn().filter((r) => r.path === heldPath).length;
    expect(held).toBe(2);
  }, 120_000);
});
