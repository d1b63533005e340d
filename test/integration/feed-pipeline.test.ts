import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import sharp from 'sharp';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Job, QueueEvents, type Queue } from 'bullmq';
import express from 'express';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { feedsRouter } from '../../src/http/feeds.ts';
import { loadConfig } from '../../src/config.ts';
import type { FeedDeps } from '../../src/feeds/deps.ts';
import { copySlot } from '../../src/feeds/copy-slot.ts';
import { publishAccountFeed, publishDemoFeedIfNone } from '../../src/feeds/publish.ts';
import { runSyncNow, syncAccount } from '../../src/feeds/sync.ts';
import { mirrorLimitsFromConfig } from '../../src/mirror/copy.ts';
import { validateFeed } from '../../src/schema/validate.ts';
import type { Feed } from '../../src/schema/v1.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { createStorage, StorageUnavailableError, mediaPrefix } from '../../src/storage/index.ts';
import { ownStorage } from '../support/storage-owner.ts';
import type { ObjectStorage, PutOptions } from '../../src/storage/types.ts';
import { getAccount, upsertAccount } from '../../src/store/accounts.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { getFeedPublication } from '../../src/store/posts.ts';
import { saveToken } from '../../src/store/tokens.ts';
import { DAY } from '../../src/util/clock.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { startFeedWorkers, type RunningFeedWorkers } from '../../jobs/feed-workers.ts';
import type { FeedSyncReturn } from '../../jobs/feed-sync.ts';
import { createQueue, QUEUE } from '../../jobs/queues.ts';
import { S3RVER_CREDENTIALS, startS3, type TestS3 } from '../support/s3.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import type { WebhookEvent } from '../../src/webhooks/events.ts';
import { listMediaCopies } from '../../src/store/posts.ts';
import { JOBS } from '../../jobs/catalogue.ts';
import { enqueue } from '../../jobs/enqueue.ts';
import { noSleep, simPlatformClient } from '../support/sim-platform.ts';

const cipher = TokenCipher.fromEnv(randomBytes(32).toString('base64'));
let db: pg.Pool;
/** What publish reported to webhooks. */
const events: WebhookEvent[] = [];
const feedUpdates = () =>
  events.filter((e): e is Extract<WebhookEvent, { type: 'feed.updated' }> => e.type === 'feed.updated');
let dropDb: () => Promise<void>;
let sim: Simulator;
let s3: TestS3;
let s3client: S3Client;
let deps: FeedDeps;
let accountId: string;
const puts: string[] = [];

/** The real S3 storage, counting puts (the "no uploads" checks). */
function counting(inner: ObjectStorage): ObjectStorage {
  const s = Object.create(inner) as ObjectStorage;
  s.put = async (key: string, body: Buffer, opts: PutOptions) => {
    puts.push(key);
    return inner.put(key, body, opts);
  };
  return s;
}

/** Read feeds/<id>.json back through the S3 API. */
async function readFeed(): Promise<{ feed: Feed; cacheControl?: string; contentType?: string }> {
  const out = await s3client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: `feeds/${accountId}.json` }));
  const text = await out.Body!.transformToString();
  const v = validateFeed(JSON.parse(text));
  if (!v.ok) throw new Error(`published feed invalid: ${JSON.stringify(v.problems)}`);
  return {
    feed: v.feed,
    ...(out.CacheControl ? { cacheControl: out.CacheControl } : {}),
    ...(out.ContentType ? { contentType: out.ContentType } : {}),
  };
}

async function keysUnder(prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const k of deps.storage.list(prefix)) out.push(k);
  return out;
}

const cdnRequests = () => sim.requests.filter((r) => r.host === 'cdn').length;

/** Every image URL of the feed answers 200 with an image of the stated size; only video files stay on the platform. */
async function checkImages(feed: Feed): Promise<number> {
  let checked = 0;
  for (const post of feed.posts) {
    const images: Array<{ url: string; width?: number | undefined; height?: number | undefined }> = [];
    if (post.thumbnailUrl) images.push({ url: post.thumbnailUrl });
    for (const m of post.media) {
      if (m.mime.startsWith('video/')) {
        expect(new URL(m.url).host).toBe(sim.imageHost); // R-LNK-5: video files are not copied
        continue;
      }
      images.push(m);
    }
    for (const img of images) {
      expect(new URL(img.url).host, `${post.id} points at the platform`).not.toBe(sim.imageHost);
      const res = await fetch(img.url);
      expect(res.status, img.url).toBe(200);
      const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
      if (img.width !== undefined) expect([meta.width, meta.height]).toEqual([img.width, img.height]);
      checked++;
    }
    if (post.thumbnailUrl) {
      const res = await fetch(post.thumbnailUrl);
      const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
      expect(post.aspectRatio).toBeCloseTo(meta.width / meta.height, 6); // R-CNV-11: measured
      // the cover lists its sizes (the variants, then the original) and a placeholder.
      expect(post.thumbnailSizes!.slice(0, -1).every((s) => s.mime === 'image/webp' || s.mime === 'image/avif')).toBe(
        true,
      );
      expect(post.thumbnailSizes!.length).toBeGreaterThanOrEqual(2);
      expect(post.thumbnailSizes!.at(-1)).toEqual({
        url: post.thumbnailUrl,
        width: meta.width,
        height: meta.height,
        mime: 'image/jpeg',
      });
      expect(post.thumbnailPlaceholder?.color).toMatch(/^#[0-9a-f]{6}$/);
    }
    // Every size of every mirrored image loads, in its stated format and size.
    const extended = [...(post.thumbnailSizes ?? []), ...post.media.flatMap((m) => m.sizes ?? [])];
    for (const size of extended) {
      const res = await fetch(size.url);
      expect(res.headers.get('content-type'), size.url).toBe(size.mime);
      const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
      expect([meta.width, meta.height], size.url).toEqual([size.width, size.height]);
    }
    for (const m of post.media)
      if (m.mime.startsWith('image/')) expect(m.placeholder?.thumbhash, `${post.id} slide placeholder`).toBeTruthy();
  }
  // Nothing but video files may point at the platform's image host (raw included).
  const others = JSON.stringify(feed).split(sim.imageHost).length - 1;
  const videos = feed.posts.flatMap((p) => p.media).filter((m) => m.mime.startsWith('video/')).length;
  expect(others).toBe(videos);
  return checked;
}

beforeAll(async () => {
  const fresh = await freshDatabase('feedpipe');
  dropDb = fresh.drop;
  db = createPool(fresh.url, { max: 5 });
  await migrate(db);
  sim = await startSimulator();
  s3 = await startS3('feed-pipeline');
  s3client = new S3Client({
    endpoint: s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: S3RVER_CREDENTIALS,
  });
  const config = loadConfig({
    STORAGE_URL: `s3://${s3.bucket}`,
    S3_ENDPOINT: s3.endpoint,
    S3_FORCE_PATH_STYLE: 'true',
    MEDIA_ALLOWED_HOSTS: sim.imageHost,
    MEDIA_VARIANT_WIDTHS: '320',
  });
  const storage = counting(
    createStorage(config, { credentials: S3RVER_CREDENTIALS, maxAttempts: 1, requestTimeoutMs: 5_000 }),
  );
  const platform = simPlatformClient(sim, { pageSize: 4, maxRetries: 1, sleep: noSleep });
  deps = {
    db,
    cipher,
    platform,
    storage,
    limits: mirrorLimitsFromConfig(config),
    clock: sim.clock,
    logger: silentLogger,
    events: { emit: async (e) => void events.push(e) },
  };
  // A new storage, made this deployment's as a worker's first start makes it (R-DEL-1).
  await ownStorage(db, storage);

  // Connect: a long-lived token from the simulator, stored encrypted.
  const acc = sim.createAccount({ username: 'harbour.shop', posts: 10 });
  accountId = acc.id;
  const token = sim.issueLongLivedToken(acc.id);
  await upsertAccount(db, { id: acc.id, username: acc.username }, sim.clock.now());
  await saveToken(
    db,
    cipher,
    {
      accountId: acc.id,
      accessToken: token,
      obtainedAt: sim.clock.now(),
      expiresAt: new Date(sim.clock.now().getTime() + 60 * DAY),
    },
    'imported',
  );
});

afterAll(async () => {
  await sim?.close();
  await s3?.close();
  s3client?.destroy();
  await db?.end();
  await dropDb?.();
});

describe('feed pipeline, end to end (simulator, Postgres, Redis, S3 API)', () => {
  it('R-SCH-11: before the first sync the account has a demo feed', async () => {
    expect(await publishDemoFeedIfNone(deps, accountId)).toBe(true);
    const { feed } = await readFeed();
    expect(feed.demo).toBe(true);
    expect(await publishDemoFeedIfNone(deps, accountId)).toBe(false); // written once only
  });

  it('R-LNK-5 / R-CNV-11 / R-MED-5 / R-LNK-4: a BullMQ flow syncs, copies every cover and photo slide, publishes a valid feed', async () => {
    const redis = redisForTest('feedpipe');
    const workers: RunningFeedWorkers = await startFeedWorkers({ ...deps, redis });
    const syncQueue: Queue = createQueue(QUEUE.feedSync, redis);
    const publishQueue: Queue = createQueue(QUEUE.publishFeed, redis);
    const syncEvents = new QueueEvents(QUEUE.feedSync, { connection: { url: redis.url }, prefix: redis.prefix });
    const publishEvents = new QueueEvents(QUEUE.publishFeed, { connection: { url: redis.url }, prefix: redis.prefix });
    try {
      await Promise.all([syncEvents.waitUntilReady(), publishEvents.waitUntilReady()]);
      const job = await syncQueue.add(QUEUE.feedSync, { accountId });
      const result = (await job.waitUntilFinished(syncEvents, 20_000)) as FeedSyncReturn;
      expect(result.outcome).toBe('synced');
      if (result.outcome !== 'synced') return;
      expect(result.complete).toBe(true);
      expect(result.pages).toBeGreaterThan(1); // several pages, all read (R-MED-5)
      expect(result.copyJobs).toBeGreaterThan(0);
      const parent = await Job.fromId(publishQueue, result.publishJobId!);
      const published = (await parent!.waitUntilFinished(publishEvents, 20_000)) as { outcome: string };
      expect(published.outcome).toBe('written');
    } finally {
      await workers.close();
      await Promise.all([syncEvents.close(), publishEvents.close(), syncQueue.close(), publishQueue.close()]);
    }
    const { feed, cacheControl, contentType } = await readFeed();
    expect(feed.demo).toBe(false);
    expect(feed.origin.name).toBe('harbour.shop');
    expect(contentType).toMatch(/^application\/json/);
    // R-LNK-4: video files still point at the platform: cached less than their oe - 600 s, and short.
    expect(cacheControl).toMatch(/^public, max-age=\d+$/);
    expect(Number(cacheControl!.split('=')[1])).toBeLessThanOrEqual(300);
    // 10 posts in the mix, the copyright-flagged one dropped (R-CNV-12).
    expect(feed.posts).toHaveLength(9);
    expect(feed.posts.some((p) => p.type === 'carousel' && p.media.length >= 2)).toBe(true);
    expect(await checkImages(feed)).toBeGreaterThan(9);
    expect((await getAccount(db, accountId))!.lastSyncError).toBeNull();
    // the first real feed replaces the demo: every post is "added".
    expect(feedUpdates().at(-1)!.data).toMatchObject({
      accountId,
      feedKey: `feeds/${accountId}.json`,
      added: feed.posts.map((p) => p.id).sort(),
      changed: [],
      removed: [],
    });
  });

  it('an unchanged resync downloads nothing, uploads nothing and does not write the feed', async () => {
    const before = {
      cdn: cdnRequests(),
      puts: puts.length,
      published: (await getFeedPublication(db, accountId))!.publishedAt,
    };
    sim.clock.advance(60 * 60 * 1000);
    const r = await runSyncNow(deps, accountId);
    expect(r.sync.outcome).toBe('synced');
    expect(r.publish?.outcome).toBe('unchanged');
    expect(cdnRequests()).toBe(before.cdn);
    expect(puts.length).toBe(before.puts);
    expect((await getFeedPublication(db, accountId))!.publishedAt).toEqual(before.published);
  });

  it('R-LNK-3 / R-MED-8: past every oe the images still load; a new post whose links expired is renewed, then copied', async () => {
    sim.clock.advance(10 * DAY); // every link handed out so far is dead now
    const { feed } = await readFeed();
    expect(
      await checkImages({
        ...feed,
        posts: feed.posts.map((p) => ({ ...p, media: p.media.filter((m) => !m.mime.startsWith('video/')) })),
      }),
    ).toBeGreaterThan(0);

    const mediaId = sim.addPost(accountId, { kind: 'carousel', caption: 'late arrival', slides: ['image', 'image'] });
    const sync = await syncAccount(deps, accountId);
    if (sync.outcome !== 'synced') throw new Error(sync.outcome);
    const tasks = sync.copies.filter((c) => c.mediaId === mediaId);
    expect(tasks.map((t) => t.slot).sort()).toEqual(['cover', 'slide-1']);
    sim.clock.advance(10 * DAY); // the listing's links die before the copy runs
    const renewCalls = () => sim.requests.filter((r) => r.host === 'graph' && r.path.endsWith(`/${mediaId}`)).length;
    const before = renewCalls();
    const first = await copySlot(deps, tasks[0]!);
    expect(first.outcome).toBe('copied');
    expect(first.outcome === 'copied' && first.renewed).toBe(true);
    expect(renewCalls()).toBe(before + 1);
    for (const t of tasks.slice(1)) expect((await copySlot(deps, t)).outcome).toBe('copied'); // links renewed already
    const published = await publishAccountFeed(deps, accountId, { complete: true });
    expect(published.outcome).toBe('written');
    const after = await readFeed();
    const post = after.feed.posts.find((p) => p.id === mediaId);
    expect(post?.media).toHaveLength(2);
    await checkImages(after.feed);
  });

  it('R-LNK-6: a failed page 2 prunes nothing and keeps the feed; the next complete listing removes the post and its objects', async () => {
    // Bring the feed up to date first (the clock moved: its video links were renewed).
    expect((await runSyncNow(deps, accountId)).sync.outcome).toBe('synced');
    const victim = (await readFeed()).feed.posts.find((p) => p.type === 'image')!.id;
    expect(await keysUnder(mediaPrefix(accountId, victim))).not.toHaveLength(0);
    sim.deletePost(accountId, victim);
    const feedBefore = await s3client
      .send(new GetObjectCommand({ Bucket: s3.bucket, Key: `feeds/${accountId}.json` }))
      .then((o) => o.Body!.transformToString());
    const putsBefore = puts.length;

    sim.injectFault({
      match: (r) => r.path.endsWith('/media') && 'after' in r.query,
      kind: 'status',
      status: 500,
      times: 10,
    });
    const failed = await runSyncNow(deps, accountId);
    sim.clearFaults();
    expect(failed.sync.outcome === 'synced' && failed.sync.complete).toBe(false);
    expect(failed.sync.outcome === 'synced' && failed.sync.pruned).toEqual([]);
    const feedAfterFailure = await s3client
      .send(new GetObjectCommand({ Bucket: s3.bucket, Key: `feeds/${accountId}.json` }))
      .then((o) => o.Body!.transformToString());
    expect(feedAfterFailure).toBe(feedBefore);
    expect(puts.slice(putsBefore).filter((k) => k.startsWith('feeds/'))).toEqual([]);
    expect(await keysUnder(mediaPrefix(accountId, victim))).not.toHaveLength(0);
    expect((await getAccount(db, accountId))!.lastSyncError).toMatch(/media list/);

    const ok = await runSyncNow(deps, accountId);
    expect(ok.sync.outcome === 'synced' && ok.sync.pruned).toEqual([victim]);
    expect(ok.publish).toMatchObject({ outcome: 'written', removedMedia: [victim] });
    const { feed } = await readFeed();
    expect(feed.posts.map((p) => p.id)).not.toContain(victim);
    expect(await keysUnder(mediaPrefix(accountId, victim))).toEqual([]);
    // feed.updated names the removed post.
    expect(feedUpdates().at(-1)!.data.removed).toEqual([victim]);
    expect(feedUpdates().at(-1)!.data.added).toEqual([]);
  });

  it('R-LNK-6: an edited picture leaves with the publish after it; a sync that only adds a post does not sweep', async () => {
    expect((await runSyncNow(deps, accountId)).sync.outcome).toBe('synced'); // up to date first
    const target = (await readFeed()).feed.posts.find((p) => p.type === 'image')!;
    const folder = mediaPrefix(accountId, target.id);
    const files = (await keysUnder(folder)).filter((k) => !k.endsWith('.json'));
    expect(files).not.toHaveLength(0);
    // An object no record names, as a crashed copy could leave: only a sweep removes it.
    const leftover = `${folder}cover-00000000000000aa.jpg`;
    await deps.storage.put(leftover, Buffer.from('left behind'), {
      contentType: 'image/jpeg',
      cacheControl: 'no-cache',
    });

    // Only a new post: nothing can have been left unreferenced, so no LIST of the account's media.
    sim.addPost(accountId, { kind: 'image', caption: 'a new one' });
    const added = await runSyncNow(deps, accountId);
    expect(added.sync.outcome === 'synced' && [added.sync.newPosts, added.sync.changedPosts]).toEqual([1, 0]);
    expect(added.publish?.outcome).toBe('written');
    expect(added.swept).toBe(0);
    expect(await keysUnder(folder)).toContain(leftover);

    // A changed picture is a new file: the publish sweeps the earlier one's objects (and the leftover).
    sim.updatePost(accountId, target.id, { width: target.width === 700 ? 720 : 700 });
    const edited = await runSyncNow(deps, accountId);
    expect(edited.sync.outcome === 'synced' && edited.sync.changedPosts).toBe(1);
    expect(edited.swept).toBe(files.length + 1);
    const now = await keysUnder(folder);
    expect(now.filter((k) => files.includes(k) || k === leftover)).toEqual([]);
    expect(now.filter((k) => !k.endsWith('.json'))).not.toHaveLength(0);
    await checkImages((await readFeed()).feed);
  });

  it('storage down during a publish: the publish fails (the job retries), the previous feed stays intact, then it is written', async () => {
    const target = (await readFeed()).feed.posts[0]!;
    sim.updatePost(accountId, target.id, { caption: 'edited while storage was down' });
    const sync = await syncAccount(deps, accountId);
    expect(sync.outcome === 'synced' && sync.changedPosts).toBe(1);
    const before = await getFeedPublication(db, accountId);
    await s3.stop();
    try {
      await expect(publishAccountFeed(deps, accountId, { complete: true })).rejects.toBeInstanceOf(
        StorageUnavailableError,
      );
    } finally {
      await s3.start();
    }
    expect(await getFeedPublication(db, accountId)).toEqual(before);
    expect((await readFeed()).feed.posts.find((p) => p.id === target.id)!.text).not.toBe(
      'edited while storage was down',
    );
    // The retry (what BullMQ's next attempt runs) succeeds.
    expect((await publishAccountFeed(deps, accountId, { complete: true })).outcome).toBe('written');
    expect((await readFeed()).feed.posts.find((p) => p.id === target.id)!.text).toBe('edited while storage was down');
  });

  it('GET /feeds/:id.json serves the stored feed with its headers; a bad or unknown id is 404', async () => {
    const app = express().use(feedsRouter({ storage: deps.storage, publishStatus: false }));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const ok = await fetch(`${base}/feeds/${accountId}.json`);
      expect(ok.status).toBe(200);
      expect(ok.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
      expect(validateFeed(await ok.json()).ok).toBe(true);
      expect((await fetch(`${base}/feeds/..%2F..%2Fetc.json`)).status).toBe(404);
      expect((await fetch(`${base}/feeds/999.json`)).status).toBe(404);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('`media rebuild` through the queue re-encodes every copy with a new ladder and formats, adds placeholders, republishes; a second run redoes nothing', async () => {
    const before = await listMediaCopies(db, accountId);
    expect(before.length).toBeGreaterThan(5);
    // Copies made before placeholders existed (or with another ladder) are what a rebuild is for.
    await db.query('UPDATE media_copies SET placeholder = NULL WHERE account_id = $1', [accountId]);
    const redis = redisForTest('feedpipe-rebuild');
    const rebuildDeps = {
      ...deps,
      limits: { ...deps.limits, variantWidths: [160, 240], variantFormats: ['webp', 'avif'] as const },
    };
    const workers = await startFeedWorkers({ ...rebuildDeps, redis });
    const mirrorQueue = createQueue(QUEUE.mirrorMedia, redis);
    const mirrorEvents = new QueueEvents(QUEUE.mirrorMedia, { connection: { url: redis.url }, prefix: redis.prefix });
    const updatesBefore = feedUpdates().length;
    try {
      await mirrorEvents.waitUntilReady();
      const job = await enqueue(
        { mirrorMedia: mirrorQueue },
        JOBS.mediaRebuild,
        { accountId },
        { jobId: `rebuild-${accountId}-1` },
      );
      const first = (await job.waitUntilFinished(mirrorEvents, 60_000)) as {
        rebuilt: number;
        upToDate: number;
        missing: number;
        publish: string;
      };
      expect(first).toMatchObject({ rebuilt: before.length, upToDate: 0, missing: 0, publish: 'written' });
      const after = await listMediaCopies(db, accountId);
      for (const c of after) {
        expect(c.placeholder?.thumbhash, `${c.mediaId}/${c.slot}`).toBeTruthy();
        expect(c.variants.map((v) => `${v.width}:${v.contentType}`).sort()).toEqual([
          '160:image/avif',
          '160:image/webp',
          '240:image/avif',
          '240:image/webp',
        ]);
        expect(c.key).toBe(before.find((b) => b.mediaId === c.mediaId && b.slot === c.slot)!.key); // the original is kept
      }
      const { feed } = await readFeed();
      const cover = feed.posts.find((p) => p.thumbnailSizes)!;
      expect(cover.thumbnailSizes!.map((x) => `${x.width}:${x.mime}`).slice(0, 4)).toEqual([
        '160:image/avif',
        '160:image/webp',
        '240:image/avif',
        '240:image/webp',
      ]);
      expect(await checkImages(feed)).toBeGreaterThan(5);
      // Sites hear about it: every post changed (new sizes), none added or removed.
      const update = feedUpdates().at(-1)!;
      expect(feedUpdates().length).toBe(updatesBefore + 1);
      expect(update.data.changed).toEqual(feed.posts.map((p) => p.id).sort());
      expect(update.data.added).toEqual([]);

      const again = await enqueue(
        { mirrorMedia: mirrorQueue },
        JOBS.mediaRebuild,
        { accountId },
        { jobId: `rebuild-${accountId}-2` },
      );
      expect(await again.waitUntilFinished(mirrorEvents, 60_000)).toMatchObject({
        rebuilt: 0,
        upToDate: before.length,
        publish: 'unchanged',
      });

      // R-SET-1: a rebuild asking for other formats than this worker's is refused, naming both,
      // never run with other settings than the command announced.
      const other = await enqueue(
        { mirrorMedia: mirrorQueue },
        JOBS.mediaRebuild,
        { accountId, widths: [160, 240], formats: ['webp'] },
        { jobId: `rebuild-${accountId}-3` },
      );
      await expect(other.waitUntilFinished(mirrorEvents, 60_000)).rejects.toThrow(
        /asked for widths 160,240, formats webp; this worker runs with MEDIA_VARIANT_WIDTHS=160,240 MEDIA_VARIANT_FORMATS=webp,avif/,
      );
      expect((await mirrorQueue.getJob(other.id!))!.attemptsMade).toBe(1);
      const matching = await enqueue(
        { mirrorMedia: mirrorQueue },
        JOBS.mediaRebuild,
        { accountId, widths: [160, 240], formats: ['webp', 'avif'] },
        { jobId: `rebuild-${accountId}-4` },
      );
      expect(await matching.waitUntilFinished(mirrorEvents, 60_000)).toMatchObject({ upToDate: before.length });
    } finally {
      await workers.close();
      await Promise.all([
        mirrorEvents.close(),
        mirrorQueue.obliterate({ force: true }).then(() => mirrorQueue.close()),
      ]);
    }
  }, 90_000);
});
