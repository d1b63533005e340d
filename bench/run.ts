/**
 * `npm run bench`: the feed pipeline's throughput, cost and memory (issue 4, item 6). Not a test:
 * it prints measurements and PASS/MISS per target, and never fails on a miss.
 *
 *   node --import tsx bench/run.ts [--accounts 20] [--posts 50] [--concurrency 4] [--json]
 *
 * N accounts x M posts on the platform simulator, copied into S3 through s3rver (in this process)
 * by the real pipeline: the BullMQ flow and workers `feedmirror worker` runs (feed-sync ->
 * mirror-media children -> publish-feed parent), on the real Redis and a Postgres database of its
 * own (created here, dropped at the end). Then:
 *  - pass 2: the same syncs with nothing changed at the source (expected: listing calls only);
 *  - the limit: the same number of images through sharp (processImage) and the storage alone, at
 *    the same concurrency, from JPEG bytes already in memory (nothing downloaded).
 * Every figure is counted (simulator request record, storage puts, Postgres rows), none estimated.
 * The simulator and s3rver run in this process: RSS and CPU include them (the simulator renders
 * each JPEG with sharp on demand), which makes the pipeline's figures conservative.
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import type { Queue } from 'bullmq';
import { loadConfig } from '../src/config.ts';
import type { FeedDeps } from '../src/feeds/deps.ts';
import { imageSlots } from '../src/feeds/slots.ts';
import { IMMUTABLE_CACHE_CONTROL, mirrorLimitsFromConfig } from '../src/mirror/copy.ts';
import { processImage } from '../src/mirror/image.ts';
import { PlatformClient } from '../src/platform/client.ts';
import { startSimulator } from '../src/simulator/index.ts';
import { createStorage, type S3Storage } from '../src/storage/index.ts';
import type { ObjectStorage, PutOptions } from '../src/storage/types.ts';
import { upsertAccount } from '../src/store/accounts.ts';
import { TokenCipher } from '../src/store/crypto.ts';
import { createPool } from '../src/store/db.ts';
import { migrate } from '../src/store/migrate.ts';
import { listPosts } from '../src/store/posts.ts';
import { saveToken } from '../src/store/tokens.ts';
import { DAY } from '../src/util/clock.ts';
import { silentLogger } from '../src/util/logger.ts';
import { startFeedWorkers } from '../jobs/feed-workers.ts';
import { createQueue, QUEUE } from '../jobs/queues.ts';
import { S3RVER_CREDENTIALS, startS3 } from '../test/support/s3.ts';
import { benchDatabase } from './services.ts';
import { MemorySampler } from './memory.ts';

const positive = (name: string) => z.coerce.number({ error: `--${name} must be a number` }).int(`--${name} must be a whole number`).positive(`--${name} must be > 0`);
const argsSchema = z.object({
  accounts: positive('accounts').default(20),
  posts: positive('posts').default(50),
  concurrency: positive('concurrency').default(4),
  json: z.boolean().default(false),
});

const TARGETS = { fractionOfLimit: 0.7, peakRssMb: 300, peakRssAt: { accounts: 500, posts: 50 } };
const DRAIN_TIMEOUT_MS = 4 * 60 * 60 * 1000;

function parse() {
  const { values } = parseArgs({
    options: { accounts: { type: 'string' }, posts: { type: 'string' }, concurrency: { type: 'string' }, json: { type: 'boolean' } },
    strict: true,
  });
  const r = argsSchema.safeParse(values);
  if (!r.success) {
    process.stderr.write(`bench: ${r.error.issues.map((i) => i.message).join('; ')}\nusage: bench/run.ts [--accounts N] [--posts M] [--concurrency C] [--json]\n`);
    process.exit(2);
  }
  return r.data;
}

/** The real storage, counting what is written (uploads vs feed writes). */
class Counting {
  mediaPuts = 0;
  feedPuts = 0;
  otherPuts = 0;
  bytes = 0;
  wrap(inner: ObjectStorage): ObjectStorage {
    const s = Object.create(inner) as ObjectStorage;
    s.put = async (key: string, body: Buffer, opts: PutOptions) => {
      await inner.put(key, body, opts);
      if (key.startsWith('media/')) this.mediaPuts++;
      else if (key.startsWith('feeds/')) this.feedPuts++;
      else this.otherPuts++;
      this.bytes += body.length;
    };
    return s;
  }
  snapshot() {
    return { mediaPuts: this.mediaPuts, feedPuts: this.feedPuts, otherPuts: this.otherPuts, bytes: this.bytes };
  }
}

async function main() {
  const args = parse();
  const say = (s: string) => {
    if (!args.json) process.stdout.write(s + '\n');
  };
  const memory = new MemorySampler();
  const cleanups: Array<() => Promise<unknown>> = [];
  const cleanup = async () => {
    for (const c of cleanups.reverse()) await c().catch((err: unknown) => process.stderr.write(`bench cleanup: ${(err as Error).message}\n`));
  };
  try {
    const database = await benchDatabase();
    cleanups.push(database.drop);
    const db = createPool(database.url, { max: 10 });
    cleanups.push(() => db.end());
    await migrate(db);
    const redis = { url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', prefix: `fmbench:${randomBytes(4).toString('hex')}` };

    const sim = await startSimulator();
    cleanups.push(() => sim.close());
    const s3 = await startS3('feedmirror-bench');
    cleanups.push(() => s3.close());

    const config = loadConfig({ STORAGE_URL: `s3://${s3.bucket}`, S3_ENDPOINT: s3.endpoint, S3_FORCE_PATH_STYLE: 'true', MEDIA_ALLOWED_HOSTS: sim.imageHost });
    const counting = new Counting();
    const rawStorage = createStorage(config, { credentials: S3RVER_CREDENTIALS });
    cleanups.push(async () => (rawStorage as S3Storage).close());
    const storage = counting.wrap(rawStorage);
    const platform = new PlatformClient({ graphUrl: sim.graphUrl, apiVersion: 'v25.0', oauthTokenUrl: sim.oauthTokenUrl, clock: sim.clock, pageSize: config.PAGE_SIZE, maxRetries: 2, sleep: async () => undefined });
    const cipher = TokenCipher.fromEnv(randomBytes(32).toString('base64'));
    const limits = mirrorLimitsFromConfig(config);
    const deps: FeedDeps = { db, cipher, platform, storage, limits, clock: sim.clock, logger: silentLogger };

    say(`feedmirror bench: ${args.accounts} accounts x ${args.posts} posts, concurrency ${args.concurrency}, variants ${limits.variantWidths.join('/')} px, S3 (s3rver) at ${s3.endpoint}`);
    const accountIds: string[] = [];
    for (let i = 0; i < args.accounts; i++) {
      const acc = sim.createAccount({ username: `bench.shop${i}`, posts: args.posts });
      const token = sim.issueLongLivedToken(acc.id);
      await upsertAccount(db, { id: acc.id, username: acc.username }, sim.clock.now());
      await saveToken(db, cipher, { accountId: acc.id, accessToken: token, obtainedAt: sim.clock.now(), expiresAt: new Date(sim.clock.now().getTime() + 60 * DAY) }, 'imported');
      accountIds.push(acc.id);
    }

    const workers = await startFeedWorkers({ ...deps, redis, concurrency: { sync: 2, mirror: args.concurrency, publish: 2 } });
    cleanups.push(() => workers.close());
    const queues: Queue[] = [createQueue(QUEUE.feedSync, redis), createQueue(QUEUE.mirrorMedia, redis), createQueue(QUEUE.publishFeed, redis)];
    cleanups.push(async () => {
      for (const q of queues) {
        await q.obliterate({ force: true }).catch(() => undefined);
        await q.close();
      }
    });
    const [syncQueue] = queues as [Queue, Queue, Queue];

    /** Every queue empty (nothing waiting, running, delayed or waiting for children), twice in a row. */
    const drain = async () => {
      const deadline = Date.now() + DRAIN_TIMEOUT_MS;
      let quiet = 0;
      while (quiet < 2) {
        if (Date.now() > deadline) throw new Error('bench: the queues did not drain in time');
        await delay(100);
        let busy = 0;
        for (const q of queues) {
          const c = await q.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'waiting-children');
          busy += Object.values(c).reduce((a, b) => a + b, 0);
        }
        quiet = busy === 0 ? quiet + 1 : 0;
      }
    };
    const failedJobs = async () => {
      let n = 0;
      for (const q of queues) n += (await q.getJobCounts('failed')).failed ?? 0;
      return n;
    };
    const copiesInDb = async () => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM media_copies')).rows[0]!.n);
    const publishedFeeds = async () => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM feed_publications WHERE NOT demo')).rows[0]!.n);

    const pass = async (label: string) => {
      const reqFrom = sim.requests.length;
      const putsBefore = counting.snapshot();
      const copiesBefore = await copiesInDb();
      const failedBefore = await failedJobs();
      memory.phase(label);
      const t0 = performance.now();
      await syncQueue.addBulk(accountIds.map((accountId) => ({ name: QUEUE.feedSync, data: { accountId } })));
      await drain();
      const seconds = (performance.now() - t0) / 1000;
      const mem = memory.end();
      const reqs = sim.requests.slice(reqFrom);
      const graph = reqs.filter((r) => r.host === 'graph');
      const listing = graph.filter((r) => /\/(media|children)$/.test(r.path));
      const after = counting.snapshot();
      const copies = (await copiesInDb()) - copiesBefore;
      return {
        seconds,
        accountsPerMinute: args.accounts / (seconds / 60),
        imagesCopied: copies,
        imagesPerSecond: copies / seconds,
        apiCalls: graph.length,
        listingCalls: listing.length,
        otherApiCalls: graph.length - listing.length,
        imageDownloads: reqs.filter((r) => r.host === 'cdn').length,
        apiCallsPerAccount: graph.length / args.accounts,
        imageDownloadsPerAccount: reqs.filter((r) => r.host === 'cdn').length / args.accounts,
        uploads: after.mediaPuts - putsBefore.mediaPuts,
        feedWrites: after.feedPuts - putsBefore.feedPuts,
        bytesWritten: after.bytes - putsBefore.bytes,
        failedJobs: (await failedJobs()) - failedBefore,
        feedsPublished: await publishedFeeds(),
        peakRssMb: mem.peakRssMb,
      };
    };

    // What the process holds before any sync: runtime, SDKs, sharp, the simulator and s3rver.
    const rssBeforeMb = process.memoryUsage.rss() / 1024 / 1024;
    say(`RSS before the first sync (runtime, SDKs, sharp, simulator, s3rver): ${rssBeforeMb.toFixed(0)} MB`);
    const first = await pass('first sync');
    say(
      `pass 1 (first sync): ${first.seconds.toFixed(1)} s, ${first.accountsPerMinute.toFixed(1)} accounts/min, ${first.imagesCopied} images copied = ${first.imagesPerSecond.toFixed(1)} images/s; ` +
        `${first.feedsPublished}/${args.accounts} feeds published, ${first.failedJobs} failed jobs`,
    );
    say(
      `  per account: ${first.apiCallsPerAccount.toFixed(2)} API calls (${first.listingCalls} listing + ${first.otherApiCalls} other in total), ${first.imageDownloadsPerAccount.toFixed(2)} image downloads; ` +
        `uploads ${first.uploads} (${(first.bytesWritten / 1e6).toFixed(1)} MB), feed writes ${first.feedWrites}; peak RSS ${first.peakRssMb.toFixed(0)} MB`,
    );

    const second = await pass('unchanged resync');
    say(
      `pass 2 (nothing changed at the source): ${second.seconds.toFixed(1)} s; API calls ${second.apiCalls} (listing ${second.listingCalls}, other ${second.otherApiCalls}), ` +
        `image downloads ${second.imageDownloads}, uploads ${second.uploads}, feed writes ${second.feedWrites}, images copied ${second.imagesCopied}, failed jobs ${second.failedJobs}`,
    );

    // The limit: the same images through sharp and the storage alone. JPEG bytes of real posts,
    // fetched before the clock starts (cycled when there are more images than samples).
    const samples: Buffer[] = [];
    outer: for (const id of accountIds) {
      for (const p of await listPosts(db, id)) {
        for (const s of imageSlots(p.post)) {
          const res = await fetch(s.url);
          if (res.ok) samples.push(Buffer.from(await res.arrayBuffer()));
          if (samples.length >= 64) break outer;
        }
      }
    }
    const total = first.imagesCopied;
    memory.phase('limit');
    const t0 = performance.now();
    let next = 0;
    const lane = async () => {
      while (next < total) {
        const i = next++;
        const { original, variants } = await processImage(samples[i % samples.length]!, { maxPixels: limits.maxPixels, variantWidths: limits.variantWidths });
        const base = `media/limit/i${i}/cover-${original.sha256.slice(0, 16)}`;
        await rawStorage.put(`${base}.${original.ext}`, original.buffer, { contentType: original.contentType, cacheControl: IMMUTABLE_CACHE_CONTROL });
        for (const v of variants) await rawStorage.put(`${base}-w${v.width}.${v.ext}`, v.buffer, { contentType: v.contentType, cacheControl: IMMUTABLE_CACHE_CONTROL });
        // The pipeline writes a manifest per image too.
        await rawStorage.put(`media/limit/i${i}/cover.json`, Buffer.from(JSON.stringify({ version: 1, key: base, variants: variants.length })), { contentType: 'application/json', cacheControl: 'no-cache' });
      }
    };
    await Promise.all(Array.from({ length: args.concurrency }, lane));
    const limitSeconds = (performance.now() - t0) / 1000;
    const limitMem = memory.end();
    const limit = { images: total, samples: samples.length, seconds: limitSeconds, imagesPerSecond: total / limitSeconds, peakRssMb: limitMem.peakRssMb };
    const fraction = first.imagesPerSecond / limit.imagesPerSecond;
    say(`limit (sharp + storage alone, same ${total} images from ${samples.length} sample JPEGs, concurrency ${args.concurrency}): ${limitSeconds.toFixed(1)} s = ${limit.imagesPerSecond.toFixed(1)} images/s`);

    const peak = memory.overall();
    const maxRssMb = process.resourceUsage().maxRSS / 1024;
    say(`peak memory: RSS high-water mark ${peak.toFixed(0)} MB (sampled every ${MemorySampler.INTERVAL_MS} ms), process maxRSS ${maxRssMb.toFixed(0)} MB`);

    const atTargetSize = args.accounts >= TARGETS.peakRssAt.accounts && args.posts >= TARGETS.peakRssAt.posts;
    const targets = {
      pipelineFractionOfLimit: { value: fraction, target: `>= ${TARGETS.fractionOfLimit}`, pass: fraction >= TARGETS.fractionOfLimit },
      peakMemory: {
        value: maxRssMb,
        target: `< ${TARGETS.peakRssMb} MB at ${TARGETS.peakRssAt.accounts}x${TARGETS.peakRssAt.posts}`,
        pass: maxRssMb < TARGETS.peakRssMb,
        note: atTargetSize ? undefined : `measured at ${args.accounts}x${args.posts}, not the target's size`,
      },
      unchangedResyncListingOnly: {
        value: { otherApiCalls: second.otherApiCalls, imageDownloads: second.imageDownloads, uploads: second.uploads, feedWrites: second.feedWrites },
        target: 'only listing calls: 0 other API calls, 0 downloads, 0 uploads, 0 feed writes',
        pass: second.otherApiCalls === 0 && second.imageDownloads === 0 && second.uploads === 0 && second.feedWrites === 0,
      },
    };
    say(`targets:`);
    say(`  ${targets.pipelineFractionOfLimit.pass ? 'PASS' : 'MISS'} pipeline at ${(fraction * 100).toFixed(0)}% of the sharp+storage limit (target >= ${TARGETS.fractionOfLimit * 100}%)`);
    say(`  ${targets.peakMemory.pass ? 'PASS' : 'MISS'} peak memory ${maxRssMb.toFixed(0)} MB (target < ${TARGETS.peakRssMb} MB at 500x50${atTargetSize ? '' : `; this run is ${args.accounts}x${args.posts}`})`);
    say(`  ${targets.unchangedResyncListingOnly.pass ? 'PASS' : 'MISS'} unchanged resync: ${second.listingCalls} listing calls, ${second.otherApiCalls} other calls, ${second.imageDownloads} downloads, ${second.uploads} uploads, ${second.feedWrites} feed writes`);

    if (args.json) {
      process.stdout.write(
        JSON.stringify({ params: { ...args, variantWidths: limits.variantWidths, node: process.version }, rssBeforeMb, first, second, limit, fractionOfLimit: fraction, peakRssMb: peak, maxRssMb, targets }, null, 2) + '\n',
      );
    }
  } finally {
    memory.stop();
    await cleanup();
  }
}

await main();
