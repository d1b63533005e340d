import { createHash, randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { access, constants } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.ts';
import { publishAccountFeed } from '../src/feeds/publish.ts';
import { mirrorLimitsFromConfig } from '../src/mirror/copy.ts';
import { PlatformClient } from '../src/platform/client.ts';
import type { Post } from '../src/schema/v1.ts';
import { createStorage, mediaKey, mediaPrefix, type S3Storage } from '../src/storage/index.ts';
import { pathToFileURL } from 'node:url';
import { ownStorage } from '../test/support/storage-owner.ts';
import { upsertAccount } from '../src/store/accounts.ts';
import { TokenCipher } from '../src/store/crypto.ts';
import { createPool } from '../src/store/db.ts';
import { migrate } from '../src/store/migrate.ts';
import { saveMediaCopy, upsertPosts } from '../src/store/posts.ts';
import { saveToken } from '../src/store/tokens.ts';
import { DAY, systemClock } from '../src/util/clock.ts';
import { silentLogger } from '../src/util/logger.ts';
import { runVerify } from '../src/verify/verify.ts';
import { scheduleAccount } from '../jobs/schedules.ts';
import { createQueues } from '../jobs/queues.ts';
import { scheduleCheck } from '../jobs/verify-schedules.ts';
import { S3RVER_CREDENTIALS, startS3 } from '../test/support/s3.ts';
import { benchDatabase, benchRedis, clearBenchRedis } from './services.ts';

/**
 * How fast `feedmirror verify` checks a bucket, next to how fast the same bucket can be listed.
 *
 *   npm run bench -- --verify [--objects 100000] [--accounts N] [--concurrency 16] [--json]
 *   node --import tsx bench/verify.ts [--objects 10000] [--accounts N] [--concurrency 16] [--json]
 *
 * The stores are filled directly, as a worker would have left them (no platform, no sharp: what is
 * measured is the check, not the copying): accounts (by default 24 posts each, as the capacity
 * page assumes) with their tokens and schedules, posts, their copies (an original and four
 * variants each, plus its manifest) as objects in s3rver (kept in /dev/shm where there is one),
 * and each account's feed published by publishAccountFeed. Then, in this order:
 *  - the listing limit: every account's prefix listed bare (ListObjectsV2, 1,000 keys a page),
 *    at the verify's concurrency, and the whole bucket listed as one stream; the faster is the limit;
 *  - the whole check, twice (every account, schedules, secrets, feeds, the merge of each listing
 *    with the records, HEADs where the listing cannot decide and the 1% sample); the second is
 *    reported, with its HEAD requests and the process's peak RSS while it ran (s3rver runs in
 *    this process: its memory is in the figure).
 */
const { values } = parseArgs({
  options: {
    objects: { type: 'string', default: '10000' },
    accounts: { type: 'string' },
    concurrency: { type: 'string', default: '16' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h' },
  },
  strict: false,
});

/** Figures of one run, as `--json` prints them. */
export interface VerifyBenchResult {
  objects: number;
  accounts: number;
  seconds: number;
  objectsPerSecond: number;
  listLimitObjectsPerSecond: number;
  listLimit: { perPrefixObjectsPerSecond: number; wholeBucketObjectsPerSecond: number };
  shareOfListLimit: number;
  /** Today's per-object rate before the merge: 72.6 s per 10,000 objects. */
  timesPreviousRate: number;
  headRequests: number;
  headShare: number;
  listRequests: number;
  peakRssMb: number;
  peakHeapMb: number;
  rssBeforeMb: number;
  fillSeconds: number;
  concurrency: number;
  targets: Record<string, boolean>;
}

/** Objects a post's feed entry points at: the original and its variants. */
const VARIANTS = [160, 320, 640, 810];
const PER_POST = 1 + VARIANTS.length;

async function memoryFolder(): Promise<string | undefined> {
  try {
    await access('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return undefined;
  }
}

/** fn over items, `limit` at once. */
async function each<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/**
 * An object written straight into s3rver's folder, as its own PUT writes it (the bytes, their MD5,
 * the metadata): a PUT through s3rver costs about 20 ms on a loaded machine, so 100,000 objects
 * would take most of an hour to fill. What is measured (the listing, the check) goes through the
 * S3 API as ever.
 */
const md5Of = new Map<Buffer, string>();
async function putDirect(root: string, bucket: string, key: string, body: Buffer, type: string): Promise<void> {
  let md5 = md5Of.get(body);
  if (!md5) md5Of.set(body, (md5 = createHash('md5').update(body).digest('hex')));
  const file = path.join(root, bucket, ...key.split('/'));
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(`${file}._S3rver_object`, body);
  await writeFile(`${file}._S3rver_object.md5`, md5);
  await writeFile(
    `${file}._S3rver_metadata.json`,
    JSON.stringify({ 'content-type': type, 'cache-control': 'public, max-age=31536000, immutable' }),
  );
}

/** Posts per account: the capacity page's average account. */
const POSTS_PER_ACCOUNT = 24;
/** Today's rate before the merge, one HEAD per object (docs/capacity.md): 72.6 s per 10,000. */
const PREVIOUS_OBJECTS_PER_SECOND = 10_000 / 72.6;

export async function runVerifyBench(
  opts: { objects: number; accounts?: number; concurrency: number },
  say: (line: string) => void,
): Promise<VerifyBenchResult> {
  const OBJECTS = opts.objects;
  const CONCURRENCY = opts.concurrency;
  const ACCOUNTS = opts.accounts ?? Math.max(1, Math.ceil(OBJECTS / ((PER_POST + 1) * POSTS_PER_ACCOUNT)));
  const database = await benchDatabase();
  const redis = benchRedis();
  const s3 = await startS3('feedmirror-bench-verify', { parentDir: await memoryFolder() });
  const db = createPool(database.url, { max: 20 });
  const queues = createQueues(redis);
  try {
    await migrate(db);
    const config = loadConfig({
      STORAGE_URL: `s3://${s3.bucket}/feedmirror`,
      S3_ENDPOINT: s3.endpoint,
      S3_FORCE_PATH_STYLE: 'true',
      MEDIA_PUBLIC_URL: 'https://cdn.example.test/feedmirror/',
    });
    const storage = createStorage(config, { credentials: S3RVER_CREDENTIALS }) as S3Storage;
    await ownStorage(db, storage);
    const cipher = TokenCipher.fromEnv(randomBytes(32).toString('base64'));
    const schedules = { refreshCheckEveryMs: 6 * 3_600_000, syncEveryMs: 3_600_000 };
    const clock = systemClock;
    const now = clock.now();
    const deps = {
      db,
      cipher,
      // Never called: the check reads no platform (only --repair would).
      platform: new PlatformClient({
        graphUrl: 'http://127.0.0.1:9',
        apiVersion: 'v25.0',
        oauthTokenUrl: 'http://127.0.0.1:9',
      }),
      storage,
      limits: mirrorLimitsFromConfig(config),
      clock,
      logger: silentLogger,
    };

    const posts = Math.ceil(OBJECTS / (PER_POST + 1));
    const perAccount = Math.ceil(posts / ACCOUNTS);
    const body = randomBytes(2048);
    const fillStarted = performance.now();
    let written = 0;
    const accountIds = Array.from({ length: ACCOUNTS }, (_, a) => `1784140000${String(a).padStart(7, '0')}`);
    await each(accountIds, 4, async (accountId) => {
      const a = accountIds.indexOf(accountId);
      await upsertAccount(db, { id: accountId, username: `bench.verify${a}` }, now);
      await saveToken(
        db,
        cipher,
        {
          accountId,
          accessToken: `IGAA${randomBytes(24).toString('hex')}`,
          obtainedAt: now,
          expiresAt: new Date(now.getTime() + 50 * DAY),
        },
        'imported',
      );
      await scheduleAccount(queues, accountId, schedules);
      const count = Math.min(perAccount, posts - a * perAccount);
      if (count <= 0) return;
      const inputs = Array.from({ length: count }, (_, i) => {
        const mediaId = `179${String(a).padStart(7, '0')}${String(i).padStart(7, '0')}`;
        const link = `https://scontent.cdninstagram.com/v/t51/${mediaId}.jpg?oe=FFFFFFFF&_nc_sid=x`;
        const post: Post = {
          id: mediaId,
          source: 'instagram',
          type: 'image',
          format: 'post',
          status: 'published',
          url: `https://www.instagram.com/p/${mediaId}/`,
          text: `post ${i}`,
          media: [{ url: link, mime: 'image/jpeg' }],
          thumbnailUrl: link,
          publishedAt: new Date(now.getTime() - i * 3_600_000).toISOString(),
        };
        return { mediaId, post, contentHash: mediaId, earliestOe: null };
      });
      await upsertPosts(db, accountId, inputs, now);
      await each(inputs, 8, async ({ mediaId, post }) => {
        const stem = `cover-${mediaId.slice(-16).padStart(16, '0')}`;
        const key = mediaKey(accountId, mediaId, `${stem}.jpg`);
        const variants = VARIANTS.map((w) => ({
          key: mediaKey(accountId, mediaId, `${stem}-w${w}.webp`),
          width: w,
          height: w,
          contentType: 'image/webp',
        }));
        const put = (k: string, type: string) => putDirect(s3.directory, s3.bucket, `feedmirror/${k}`, body, type);
        await put(key, 'image/jpeg');
        for (const v of variants) await put(v.key, v.contentType);
        await put(mediaKey(accountId, mediaId, 'cover.json'), 'application/json');
        written += PER_POST + 1;
        await saveMediaCopy(db, {
          accountId,
          mediaId,
          slot: 'cover',
          sourceId: post.thumbnailUrl.split('?')[0]!,
          key,
          width: 1080,
          height: 1080,
          bytes: body.length,
          contentType: 'image/jpeg',
          variants,
          placeholder: null,
          copiedAt: now,
        });
      });
      const out = await publishAccountFeed(deps, accountId, { complete: true });
      if (out.outcome !== 'written') throw new Error(`account ${accountId}: feed ${out.outcome}`);
    });
    const fillSeconds = (performance.now() - fillStarted) / 1000;
    say(`filled ${ACCOUNTS} accounts, ${posts} posts, ${written} objects in s3rver in ${fillSeconds.toFixed(1)} s`);

    // The listing limit: the same prefixes listed bare, at the same concurrency; and the whole bucket.
    let started = performance.now();
    let listed = 0;
    await each(accountIds, CONCURRENCY, async (id) => {
      for await (const _o of storage.listObjects(mediaPrefix(id))) listed++;
    });
    const perPrefix = listed / ((performance.now() - started) / 1000);
    started = performance.now();
    let whole = 0;
    let wholeBucket = 0;
    try {
      for await (const o of storage.listObjects('media/')) if (o.size >= 0) whole++;
      wholeBucket = whole / ((performance.now() - started) / 1000);
    } catch (err) {
      // s3rver answers 500 to some listings of a large prefix across many folders.
      say(`whole-bucket listing failed on s3rver: ${(err as Error).message.slice(0, 160)}`);
    }
    const limit = Math.max(perPrefix, wholeBucket);
    say(
      `listing limit: ${perPrefix.toFixed(0)} objects/s by account prefix (${listed}), ${wholeBucket.toFixed(0)} objects/s as one stream (${whole})`,
    );

    const verifyDeps = { ...deps, schedules: scheduleCheck({ db, queues, schedules }) };
    let result: VerifyBenchResult | undefined;
    for (const round of [1, 2]) {
      global.gc?.();
      const rssBefore = process.memoryUsage().rss;
      let peakRss = rssBefore;
      let peakHeap = process.memoryUsage().heapUsed;
      const sampler = setInterval(() => {
        const m = process.memoryUsage();
        peakRss = Math.max(peakRss, m.rss);
        peakHeap = Math.max(peakHeap, m.heapUsed);
      }, 50);
      const lists = storage.listRequests;
      started = performance.now();
      const report = await runVerify(verifyDeps, { trigger: 'cli', concurrency: CONCURRENCY });
      const seconds = (performance.now() - started) / 1000;
      clearInterval(sampler);
      const c = report.counts;
      const rate = c.storedObjects / seconds;
      say(
        `verify round ${round}: ${seconds.toFixed(2)} s, ok ${report.ok}, ${c.storedObjects} objects listed, ${c.objects} called for, ` +
          `${c.heads} HEADs, ${c.accounts} accounts; ${rate.toFixed(0)} objects/s (${((rate / limit) * 100).toFixed(0)}% of the listing limit), ` +
          `peak RSS ${(peakRss / 1e6).toFixed(0)} MB`,
      );
      if (!report.ok) throw new Error(`verify found problems: ${JSON.stringify(report.problems.slice(0, 3))}`);
      const r: VerifyBenchResult = {
        objects: c.storedObjects,
        accounts: c.accounts,
        seconds: Number(seconds.toFixed(2)),
        objectsPerSecond: Math.round(rate),
        listLimitObjectsPerSecond: Math.round(limit),
        listLimit: {
          perPrefixObjectsPerSecond: Math.round(perPrefix),
          wholeBucketObjectsPerSecond: Math.round(wholeBucket),
        },
        shareOfListLimit: Number((rate / limit).toFixed(3)),
        timesPreviousRate: Number((rate / PREVIOUS_OBJECTS_PER_SECOND).toFixed(1)),
        headRequests: c.heads,
        headShare: Number((c.heads / c.storedObjects).toFixed(4)),
        listRequests: storage.listRequests - lists,
        peakRssMb: Math.round(peakRss / 1e6),
        peakHeapMb: Math.round(peakHeap / 1e6),
        rssBeforeMb: Math.round(rssBefore / 1e6),
        fillSeconds: Number(fillSeconds.toFixed(1)),
        concurrency: CONCURRENCY,
        targets: {},
      };
      r.targets = {
        'rate >= 50% of the listing limit': r.shareOfListLimit >= 0.5,
        'rate >= 10x the previous': r.timesPreviousRate >= 10,
        'HEADs < 2% of objects': r.headShare < 0.02,
        'peak RSS < 300 MB': r.peakRssMb < 300,
      };
      result = r;
    }
    return result!;
  } finally {
    await Promise.all(Object.values(queues).map((q) => q.close()));
    await clearBenchRedis(redis);
    await db.end();
    await database.drop();
    await s3.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (values.help) {
    process.stdout.write(
      'usage: node --import tsx bench/verify.ts [--objects 10000] [--accounts N] [--concurrency 16] [--json]\n',
    );
    process.exit(0);
  }
  const objects = Number(values.objects);
  const concurrency = Number(values.concurrency);
  const accounts = values.accounts === undefined ? undefined : Number(values.accounts);
  for (const [name, v] of Object.entries({ objects, concurrency, accounts: accounts ?? 1 }))
    if (!Number.isInteger(v) || v < 1) {
      process.stderr.write(`--${name} must be a whole number above 0\n`);
      process.exit(2);
    }
  const json = values.json === true;
  runVerifyBench({ objects, concurrency, ...(accounts ? { accounts } : {}) }, (l) => {
    if (!json) process.stdout.write(l + '\n');
  })
    .then((r) => {
      if (json) process.stdout.write(JSON.stringify(r, null, 2) + '\n');
    })
    .catch((err: unknown) => {
      process.stderr.write(`bench/verify: ${(err as Error).message}\n`);
      process.exitCode = 1;
    });
}
