/**
 * The scale benchmarks, run by bench/run.ts:
 *
 *   --scale N      soak: N accounts of small feeds on one worker process; a catch-up (every
 *                  account due at once, which is what a worker's start is), then a real-time
 *                  window (default 10 minutes) with the hourly schedules spread over the hour,
 *                  1% of accounts changing per hour and 0.5% failing.
 *   --workers-compare N   the same catch-up with 1, then 2 worker processes on one Redis: the
 *                  throughput ratio, duplicate copies and duplicate refreshes.
 *
 * What is real: the worker (`feedmirror worker`'s startWorker: every queue, the start-up that
 * schedules every account, the daily jobs), Redis, Postgres, S3 through s3rver, the platform
 * simulator over HTTP. What is set up directly: the accounts' state before the run (posts, copies
 * and published feeds as an earlier sync would have left them) is written by this process with
 * the store's own functions, because copying 20,000 images first would take longer than the
 * run. Their copies are rows only (no objects): nothing in the run reads them back.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { setTimeout as delay } from 'node:timers/promises';
import { Job, QueueEvents, type Queue } from 'bullmq';
import type pg from 'pg';
import { loadConfig, type Config } from '../src/config.ts';
import { convertItems } from '../src/convert/convert-item.ts';
import { buildAccountFeed, FEED_CONTENT_TYPE, postHashes } from '../src/feeds/publish.ts';
import { feedKey } from '../src/storage/keys.ts';
import { drawPost, percentile, postCounts, seededRandom, type FeedPost } from './feeds.ts';
import { imageSlots } from '../src/feeds/slots.ts';
import { contentHash } from '../src/util/content-hash.ts';
import { PlatformClient } from '../src/platform/client.ts';
import { earliestExpiry } from '../src/platform/links.ts';
import { createStorage, type ObjectStorage, type S3Storage } from '../src/storage/index.ts';
import { getAccount, markSynced, upsertAccount } from '../src/store/accounts.ts';
import { TokenCipher } from '../src/store/crypto.ts';
import { createPool } from '../src/store/db.ts';
import { migrate } from '../src/store/migrate.ts';
import { unpackPost } from '../src/store/post-pack.ts';
import type { Post } from '../src/schema/v1.ts';
import { isImageMime } from '../src/feeds/slots.ts';
import { getFeedPublication, saveFeedPublication, saveMediaCopy, upsertPosts } from '../src/store/posts.ts';
import { FULL_FEED_FIELDS, mediaItemSchema } from '../src/platform/media-item.ts';
import { computeBatch, FeedTemplates, SEEDED_COPY, seededCopy, type ComputedBatch } from './seed-templates.ts';
import { Worker } from 'node:worker_threads';
import { saveToken } from '../src/store/tokens.ts';
import { DAY, HOUR, MINUTE } from '../src/util/clock.ts';
import { bullConnection, createQueue, QUEUE, redisClient } from '../jobs/queues.ts';
import { accountSchedulers, scheduleAccount, scheduleOffsetMs, syncSchedulerId } from '../jobs/schedules.ts';
import { withinLimits } from '../jobs/job-options.ts';
import { S3RVER_CREDENTIALS } from '../test/support/s3.ts';
import { forkChild, type ChildHandle } from './ipc.ts';
import { startServicesChild, type ServicesChild } from './services-child.ts';
import { benchDatabase, benchRedis, cleanupStack, clearBenchRedis } from './services.ts';
import type { WorkerStats } from './worker-process.ts';

export const SCALE_TARGETS = {
  cpuPercentOfOneCore: 25,
  p99LatenessSeconds: 60,
  redisBytesPerAccount: 5 * 1024,
  postgresBytesPerAccount: 40 * 1024,
  workerPeakRssMb: 300,
};

export interface ScaleArgs {
  accounts: number;
  /** A fixed number of posts per account (the older soak's 2); undefined: realistic feeds. */
  posts?: number | undefined;
  /** Mean posts per account of the realistic feeds (truncated geometric over 1..100). */
  meanPosts: number;
  windowMinutes: number;
  /** How long the catch-up after an hour down is counted (it stops there at large sizes). */
  catchUpSeconds: number;
  seed: number;
  json: boolean;
}

type Say = (s: string) => void;

/** Run `fn` over `items`, `lanes` at a time. */
async function pool<T>(items: readonly T[], lanes: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(lanes, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i]!, i);
      }
    }),
  );
}

/** Everything one scale run works against: services, database, Redis prefix, config. */
export interface Stage {
  services: ServicesChild;
  db: pg.Pool;
  databaseUrl: string;
  redis: { url: string; prefix: string };
  config: Config;
  storage: ObjectStorage;
  platform: PlatformClient;
  cipherKey: string;
  cipher: TokenCipher;
  emptyDbBytes: number;
  cleanup: () => Promise<void>;
}

export async function openStage(opts: {
  wallClock: boolean;
  startMs?: number;
  linkLifetimeMs?: number;
}): Promise<Stage> {
  const cleanups = cleanupStack();
  const cleanup = cleanups.run;
  try {
    const database = await benchDatabase();
    cleanups.push(database.drop);
    const db = createPool(database.url, { max: 20 });
    cleanups.push(() => db.end());
    await migrate(db);
    const emptyDbBytes = Number(
      (await db.query<{ n: string }>('SELECT pg_database_size(current_database()) AS n')).rows[0]!.n,
    );
    const redis = benchRedis();
    cleanups.push(() => clearBenchRedis(redis));
    const services = await startServicesChild({
      startMs: opts.startMs ?? Date.now(),
      jpegCacheMb: 0,
      jpegCacheEntries: 0,
      wallClock: opts.wallClock,
      ...(opts.linkLifetimeMs ? { linkLifetimeMs: opts.linkLifetimeMs } : {}),
    });
    cleanups.push(() => services.close());
    const sim = services.ready;
    const config = loadConfig({
      ...process.env,
      STORAGE_URL: `s3://${sim.bucket}`,
      S3_ENDPOINT: sim.s3Endpoint,
      S3_FORCE_PATH_STYLE: 'true',
      MEDIA_ALLOWED_HOSTS: sim.imageHost,
      SMTP_URL: '',
    });
    const storage = createStorage(config, { credentials: S3RVER_CREDENTIALS });
    cleanups.push(async () => (storage as S3Storage).close());
    const platform = new PlatformClient({
      graphUrl: sim.graphUrl,
      apiVersion: 'v25.0',
      oauthTokenUrl: sim.oauthTokenUrl,
      pageSize: config.PAGE_SIZE,
    });
    const cipherKey = randomBytes(32).toString('base64');
    return {
      services,
      db,
      databaseUrl: database.url,
      redis,
      config,
      storage,
      platform,
      cipherKey,
      cipher: TokenCipher.fromEnv(cipherKey),
      emptyDbBytes,
      cleanup,
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

export interface SeededAccount {
  id: string;
  username: string;
  token: string;
}

/**
 * Accounts in the simulator and in Postgres with their token, never synced (the first sync of
 * `--workers-compare`). Returns the accounts.
 */
export async function seedAccounts(
  stage: Stage,
  count: number,
  posts: number,
  opts: { prefix: string; now: Date; issuedAgoMs?: number },
  say: Say,
): Promise<SeededAccount[]> {
  const t0 = performance.now();
  const accounts: SeededAccount[] = [];
  for (let done = 0; done < count; done += 1000) {
    accounts.push(
      ...(await stage.services.smallAccounts(
        Math.min(1000, count - done),
        posts,
        `${opts.prefix}${done / 1000}x`,
        opts.issuedAgoMs ?? 0,
      )),
    );
  }
  const obtainedAt = new Date(opts.now.getTime() - (opts.issuedAgoMs ?? 0));
  await pool(accounts, 16, async (acc) => {
    await upsertAccount(stage.db, { id: acc.id, username: acc.username }, obtainedAt);
    await saveToken(
      stage.db,
      stage.cipher,
      { accountId: acc.id, accessToken: acc.token, obtainedAt, expiresAt: new Date(obtainedAt.getTime() + 60 * DAY) },
      'imported',
    );
  });
  say(
    `  ${count} accounts (${posts} posts each) in the simulator and Postgres: ${((performance.now() - t0) / 1000).toFixed(0)} s`,
  );
  return accounts;
}

/**
 * A feed object written straight into s3rver's data folder, in its filesystem store's layout
 * (s3rver 3: `<bucket>/<key>._S3rver_object`, its MD5 and its metadata beside it): 100,000 PUTs
 * through s3rver's HTTP stack cost more CPU than the rest of the set-up. The same bytes and
 * headers as storage.put writes; seedFeeds reads samples back through the storage client.
 */
async function writeFeedObject(feedDir: string, accountId: string, json: string): Promise<void> {
  const base = join(feedDir, `${basename(feedKey(accountId))}._S3rver_`);
  const body = Buffer.from(json);
  await writeFile(`${base}object`, body);
  await writeFile(`${base}object.md5`, createHash('md5').update(body).digest('hex'));
  await writeFile(
    `${base}metadata.json`,
    JSON.stringify({ 'cache-control': 'public, max-age=300', 'content-type': FEED_CONTENT_TYPE }, null, 2),
  );
}

/** What one account's earlier sync is seeded from: the account and its whole listing. */
export interface ListedAccount extends SeededAccount {
  obtainedAt: Date;
  items: unknown[];
}

/**
 * One account's earlier sync and publish, the slow way: each row written by the store's own
 * function, the listing converted and the feed built by the worker's own functions, one account
 * at a time. What seedFeeds writes in bulk must equal this (test/integration/bench-seed.test.ts).
 */
export async function seedEarlierSyncSlow(stage: Stage, acc: ListedAccount, now: Date): Promise<void> {
  await upsertAccount(stage.db, { id: acc.id, username: acc.username }, acc.obtainedAt);
  await saveToken(
    stage.db,
    stage.cipher,
    {
      accountId: acc.id,
      accessToken: acc.token,
      obtainedAt: acc.obtainedAt,
      expiresAt: new Date(acc.obtainedAt.getTime() + 60 * DAY),
    },
    'imported',
  );
  const items = acc.items.map((raw) => mediaItemSchema.parse(raw));
  const { posts: converted } = convertItems(items, { copyrightItems: 'drop' });
  const byId = new Map(items.map((i) => [i.id, i]));
  await upsertPosts(
    stage.db,
    acc.id,
    converted.map((post) => ({
      mediaId: post.id,
      post,
      contentHash: contentHash(post),
      earliestOe: earliestExpiry(byId.get(post.id)!) ?? null,
    })),
    now,
  );
  for (const post of converted) {
    const hash16 = contentHash(post).slice(0, 16);
    for (const s of imageSlots(post))
      await saveMediaCopy(stage.db, seededCopy(acc.id, post.id, s.slot, s.sourceId, hash16, now));
  }
  const account = (await getAccount(stage.db, acc.id))!;
  const built = await buildAccountFeed(stage.db, account, (k) => stage.storage.publicUrl(k), now);
  await stage.storage.put(feedKey(acc.id), Buffer.from(JSON.stringify(built.feed)), {
    contentType: FEED_CONTENT_TYPE,
    cacheControl: 'public, max-age=300',
  });
  await saveFeedPublication(stage.db, {
    accountId: acc.id,
    feedHash: built.hash,
    publishedAt: now,
    postCount: built.feed.posts.length,
    demo: false,
    earliestOe: built.earliestOe,
    postHashes: postHashes(built.feed),
  });
  await markSynced(stage.db, acc.id, now, {
    outcome: 'complete',
    posts: converted.length,
    completeListingItems: items.length,
  });
}

/**
 * Many accounts' earlier syncs in bulk: what seedEarlierSyncSlow writes, for a batch of accounts
 * in a few multi-row statements (unnest arrays), the posts through the shape templates
 * (bench/seed-templates.ts), the feeds written to storage `lanes` at a time. Returns the posts
 * and copies written.
 */
export async function writeEarlierSyncs(
  stage: Stage,
  batch: readonly ListedAccount[],
  templates: FeedTemplates,
  now: Date,
): Promise<{ posts: number; images: number; feeds: Array<{ id: string; json: string }> }> {
  const computed = computeBatch(templates, batch, now);
  await runStatements(stage, earlierSyncStatements(stage, batch, computed, now));
  return computed;
}

type Statement = readonly [sql: string, params: unknown[]];

/** The accounts' rows first (every other table refers to them), then the rest side by side. */
async function runStatements(stage: Stage, s: { accounts: Statement; rest: Statement[] }): Promise<void> {
  await stage.db.query(...s.accounts);
  await Promise.all(s.rest.map((st) => stage.db.query(...st)));
}

/**
 * writeEarlierSyncs' statements for a batch whose posts, copies, publications and feeds are
 * computed (computeBatch, here or in a seeding thread): the accounts' and tokens' rows are added
 * here (the token is sealed with the stage's key).
 */
export function earlierSyncStatements(
  stage: Stage,
  batch: readonly ListedAccount[],
  computed: ComputedBatch,
  now: Date,
): { accounts: Statement; rest: Statement[] } {
  const sealed = batch.map((acc) => stage.cipher.encrypt(acc.token, acc.id));
  const ids = batch.map((acc) => acc.id);
  const at = batch.map((acc) => acc.obtainedAt);
  const expires = batch.map((acc) => new Date(acc.obtainedAt.getTime() + 60 * DAY));
  const copy = SEEDED_COPY;
  // The row upsertAccount, then markSynced with the listing's count leave (one statement).
  const accounts: Statement = [
    `INSERT INTO accounts (id, username, display_name, avatar_url, account_type, created_at, updated_at,
                           last_sync_at, last_sync_error, last_sync_error_kind, last_sync_outcome, last_complete_sync_at,
                           listing_items_last_complete, listing_runaways, listing_paused_until)
     SELECT id, username, NULL, NULL, NULL, at, at, $4, NULL, NULL, 'complete', $4, items, 0, NULL
       FROM unnest($1::text[], $2::text[], $3::timestamptz[], $5::int[]) AS r(id, username, at, items)`,
    [ids, batch.map((acc) => acc.username), at, now, batch.map((acc) => acc.items.length)],
  ];
  const rest: Statement[] = [
    // saveToken's token and its 'imported' event.
    [
      `INSERT INTO tokens (account_id, key_id, ciphertext, obtained_at, expires_at, generation, updated_at)
       SELECT id, k, c, at, e, 1, at FROM unnest($1::text[], $2::text[], $3::bytea[], $4::timestamptz[], $5::timestamptz[]) AS r(id, k, c, at, e)`,
      [ids, sealed.map((s) => s.keyId), sealed.map((s) => s.ciphertext), at, expires],
    ],
    [
      `INSERT INTO token_events (account_id, kind, expires_at, detail, at, error_kind)
       SELECT id, 'imported', e, NULL, at, NULL FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) AS r(id, at, e)`,
      [ids, at, expires],
    ],
    // markSynced's row in the sync history.
    [
      `INSERT INTO sync_runs (account_id, at, outcome, error_kind, error, posts, skipped)
       SELECT id, $2, 'complete', NULL, NULL, n, NULL FROM unnest($1::text[], $3::int[]) AS r(id, n)`,
      [ids, now, computed.postsPerAccount],
    ],
    // upsertPosts' rows, saveMediaCopy's, saveFeedPublication's.
    [
      `INSERT INTO posts (account_id, media_id, post, raw, content_hash, earliest_oe, first_seen_at, last_seen_at)
       SELECT a, m, NULL, decode(r, 'base64'), h, o, $2, $2 FROM json_to_recordset($1::json) AS x(a text, m text, r text, h text, o timestamptz)`,
      [computed.postsJson, now],
    ],
    [
      `INSERT INTO media_copies (account_id, media_id, slot, source_id, key, width, height, bytes, content_type, variant_sizes, variants, placeholder, copied_at)
       SELECT a, m, s, src, k, $2, $3, $4, $5, v, NULL, $6::jsonb, $7
         FROM json_to_recordset($1::json) AS r(a text, m text, s text, src text, k text, v text)`,
      [
        computed.copiesJson,
        copy.width,
        copy.height,
        copy.bytes,
        copy.contentType,
        JSON.stringify(copy.placeholder),
        now,
      ],
    ],
    [
      `INSERT INTO feed_publications (account_id, feed_hash, published_at, post_count, demo, earliest_oe, post_hashes)
       SELECT a, h, $2, n, false, o, ph FROM json_to_recordset($1::json) AS r(a text, h text, n int, o timestamptz, ph jsonb)`,
      [computed.publicationsJson, now],
    ],
  ];
  return { accounts, rest };
}

/** Seeding threads: each computes batches (computeBatch) with templates of its own. */
class SeedThreads {
  private readonly workers: Worker[];
  private next = 0;
  private seq = 0;
  private readonly waiting = new Map<number, { resolve: (r: ComputedBatch) => void; reject: (e: Error) => void }>();
  checked = 0;
  shapes = 0;

  constructor(count: number, publicBase: string) {
    this.workers = Array.from({ length: count }, () => {
      // A young generation big enough for a batch's strings: with V8's default, collecting the
      // garbage of the rows cost as much as making them.
      // The thread loads TypeScript through tsx as this process does (a worker does not inherit
      // the --import of its process on Node 20).
      const entry = JSON.stringify(new URL('./seed-worker.ts', import.meta.url).href);
      const w = new Worker(`import { register } from 'tsx/esm/api'; register(); await import(${entry});`, {
        eval: true,
        workerData: { publicBase },
        resourceLimits: { maxYoungGenerationSizeMb: 96 },
      });
      w.on('message', (m: { id: number; result?: ComputedBatch; error?: string; checked: number; shapes: number }) => {
        const p = this.waiting.get(m.id)!;
        this.waiting.delete(m.id);
        this.checked += m.checked;
        this.shapes = Math.max(this.shapes, m.shapes);
        if (m.error !== undefined) p.reject(new Error(m.error));
        else p.resolve(m.result!);
      });
      const fail = (err: Error) => {
        for (const p of this.waiting.values()) p.reject(err);
        this.waiting.clear();
      };
      w.on('error', fail);
      w.on('exit', (code) => {
        if (!this.closing) fail(new Error(`bench: a seeding thread exited (${code})`));
      });
      return w;
    });
  }

  compute(
    accounts: ReadonlyArray<{ id: string; username: string; items: unknown[] }>,
    now: Date,
  ): Promise<ComputedBatch> {
    const id = ++this.seq;
    const w = this.workers[this.next++ % this.workers.length]!;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      w.postMessage({ id, accounts: accounts.map(({ id: a, username, items }) => ({ id: a, username, items })), now });
    });
  }

  private closing = false;

  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

/**
 * Realistic feeds, fast, for the soak at 100,000 accounts: the accounts live in the simulator
 * (bench/feeds.ts draws their posts), and each one's state as an earlier sync and publish left it
 * (seedEarlierSyncSlow's rows, written in bulk by writeEarlierSyncs): its listing read from the
 * simulator's own handler in-process and turned into posts through the worker's functions once
 * per shape of post (bench/seed-templates.ts), every image's copy recorded (as a 1080 px photo's
 * copy: the original, five WebP variants and a placeholder, so the rows have their real size
 * although the simulator's pictures are tiny and no object is uploaded), the feed written to
 * storage (the worker HEADs it every sync), its publication and the complete listing recorded,
 * `batchSize` accounts per statement. Sample accounts' feeds are then built by buildAccountFeed
 * from the rows and compared. `tokenAgeMs(i)` is account i's token age.
 */
export async function seedFeeds(
  stage: Stage,
  opts: {
    count: number;
    /** Mean posts per account (truncated geometric over 1..100), or a fixed number of posts. */
    meanPosts?: number;
    fixedPosts?: number;
    /** The posts each account has, when given (overrides meanPosts and fixedPosts). */
    postCounts?: number[];
    prefix: string;
    now: Date;
    seed: number;
    tokenAgeMs: (i: number) => number;
    /** Links signed up to this long ago (spreads oe deadlines over days). */
    signedSpreadMs: number;
    batchSize?: number;
    /** Seeding threads computing the batches (2: the cores of the machine the soak targets). */
    threads?: number;
  },
  say: Say,
): Promise<{
  accounts: SeededAccount[];
  posts: number;
  images: number;
  /** Posts with a video (a video, a reel, a carousel with a video slide): their links stay platform links. */
  videoPosts: number;
  seconds: Record<string, number>;
  cpuSeconds: Record<string, number>;
}> {
  const t0 = performance.now();
  const counts =
    opts.postCounts ??
    (opts.fixedPosts !== undefined
      ? Array.from({ length: opts.count }, () => opts.fixedPosts!)
      : postCounts(opts.count, { mean: opts.meanPosts ?? 24, seed: opts.seed }));
  const ages = counts.map((_, i) => opts.tokenAgeMs(i));
  const batchSize = opts.batchSize ?? 500;
  const accounts: SeededAccount[] = [];
  const cpu0 = process.cpuUsage();
  const child0 = await stage.services.stats();
  const listingOpts = { version: 'v25.0', fields: FULL_FEED_FIELDS.join(','), limit: stage.config.PAGE_SIZE };
  // The simulator's side of batch k+1 (accounts made, listings read) runs while this process
  // converts and writes batch k.
  const fetchBatch = async (start: number): Promise<ListedAccount[]> => {
    const end = Math.min(opts.count, start + batchSize);
    const made = await stage.services.feedAccounts({
      usernamePrefix: `${opts.prefix}${start}x`,
      postCounts: counts.slice(start, end),
      tokenAgesMs: ages.slice(start, end),
      signedSpreadMs: opts.signedSpreadMs,
      seed: opts.seed * 1000 + start / batchSize,
    });
    const listings = await stage.services.listings(
      made.map((m) => m.id),
      listingOpts,
    );
    return made.map((m, i) => ({
      ...m,
      obtainedAt: new Date(opts.now.getTime() - ages[start + i]!),
      items: listings[i]!,
    }));
  };
  let posts = 0;
  let images = 0;
  let videoPosts = 0;
  // The storage's public address of a key: its base, for the seeding threads (the samples
  // below compare what they built with buildAccountFeed's, which uses storage.publicUrl).
  const probeKey = feedKey('1');
  const publicBase = stage.storage.publicUrl(probeKey).slice(0, -probeKey.length);
  const threads = new SeedThreads(opts.threads ?? 2, publicBase);
  // The simulator's side of the batches (accounts made, listings read) runs ahead; the seeding
  // threads compute batches side by side; this thread writes each batch's rows and feeds. At
  // most `ahead` batches are between the simulator and written.
  const ahead = 4;
  const inFlight: Array<Promise<void>> = [];
  const feedDir = join(stage.services.ready.s3Directory, stage.services.ready.bucket, 'feeds');
  await mkdir(feedDir, { recursive: true });
  let simulatorChain: Promise<unknown> = Promise.resolve();
  try {
    for (let start = 0; start < opts.count; start += batchSize) {
      if (inFlight.length >= ahead) await inFlight.shift();
      // The simulator answers one batch at a time (one process): chained, in order.
      const listed: Promise<ListedAccount[]> = simulatorChain.then(() => fetchBatch(start));
      simulatorChain = listed.catch(() => undefined);
      inFlight.push(
        listed.then(async (batch) => {
          const computed = await threads.compute(batch, opts.now);
          posts += computed.posts;
          images += computed.images;
          for (const acc of batch) videoPosts += acc.items.filter(hasVideo).length;
          await Promise.all([
            runStatements(stage, earlierSyncStatements(stage, batch, computed, opts.now)),
            pool(computed.feeds, 8, (fd) => writeFeedObject(feedDir, fd.id, fd.json)),
          ]);
          accounts.push(...batch.map(({ id, username, token }) => ({ id, username, token })));
          if (accounts.length % 5000 === 0 || accounts.length === opts.count)
            process.stderr.write(`\r  seeded ${accounts.length} of ${opts.count} accounts' earlier sync`);
        }),
      );
    }
    await Promise.all(inFlight);
  } finally {
    await Promise.allSettled(inFlight);
    await threads.close();
  }
  process.stderr.write('\n');
  // Sample feeds read back through the storage client, as the worker's HEAD and GET see them.
  for (const acc of [accounts[0]!, accounts.at(-1)!]) {
    const got = await stage.storage.get(feedKey(acc.id));
    const feed = got ? (JSON.parse(got.body.toString()) as { origin?: { id?: string } }) : undefined;
    if (feed?.origin?.id !== acc.id || got?.contentType !== FEED_CONTENT_TYPE)
      throw new Error(`bench: the seeded feed of account ${acc.id} cannot be read back from storage`);
  }
  // Sample accounts' feeds, built by the worker's own function from the rows just written.
  const samples = [0, Math.floor(accounts.length / 2), accounts.length - 1].filter(
    (v, i, all) => all.indexOf(v) === i && v >= 0,
  );
  for (const i of samples) {
    const acc = accounts[i]!;
    const account = (await getAccount(stage.db, acc.id))!;
    const built = await buildAccountFeed(stage.db, account, (k) => stage.storage.publicUrl(k), opts.now);
    const pub = (await getFeedPublication(stage.db, acc.id))!;
    if (
      built.hash !== pub.feedHash ||
      built.feed.posts.length !== pub.postCount ||
      (built.earliestOe?.getTime() ?? null) !== (pub.earliestOe?.getTime() ?? null) ||
      !isDeepStrictEqual(postHashes(built.feed), pub.postHashes)
    )
      throw new Error(`bench: the seeded publication of account ${acc.id} is not the feed buildAccountFeed builds`);
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu1 = process.cpuUsage(cpu0);
  const child1 = await stage.services.stats();
  const cpuSeconds = {
    bench: (cpu1.user + cpu1.system) / 1e6,
    simulatorAndS3: child1.cpuUserS + child1.cpuSystemS - child0.cpuUserS - child0.cpuSystemS,
  };
  say(
    `  ${opts.count} accounts, ${posts} posts (${(posts / opts.count).toFixed(1)} per account), ${images} image copies recorded, ` +
      `${threads.shapes} shapes of post (${threads.checked} posts checked against the worker's functions): ${seconds.toFixed(0)} s; ` +
      `CPU: this process ${cpuSeconds.bench.toFixed(0)} s, ` +
      `simulator+s3rver ${cpuSeconds.simulatorAndS3.toFixed(0)} s`,
  );
  return { accounts, posts, images, videoPosts, seconds: { total: seconds }, cpuSeconds };
}

/** A listing item with a video in it (itself, or one of its carousel's slides). */
function hasVideo(raw: unknown): boolean {
  const item = raw as { media_type?: string; children?: { data?: Array<{ media_type?: string }> } };
  return item.media_type === 'VIDEO' || (item.children?.data ?? []).some((c) => c.media_type === 'VIDEO');
}

/**
 * Both schedulers of every account as a running worker leaves them (BullMQ job schedulers, their
 * next run placed in their slot), without the run-once-now of a new schedule: the worker that
 * starts on them then has nothing overdue, and the window measures the steady state.
 */
export async function preschedule(stage: Stage, ids: readonly string[], lanes = 32): Promise<number> {
  const t0 = performance.now();
  const queues = {
    tokenRefresh: createQueue(QUEUE.tokenRefresh, stage.redis),
    feedSync: createQueue(QUEUE.feedSync, stage.redis),
  };
  const settings = {
    refreshCheckEveryMs: stage.config.REFRESH_CHECK_HOURS * HOUR,
    syncEveryMs: stage.config.SYNC_INTERVAL_MINUTES * MINUTE,
  };
  try {
    await pool(ids, lanes, async (id) => {
      await Promise.all(
        accountSchedulers(queues, id, settings).map((s) =>
          s.queue.upsertJobScheduler(
            s.id,
            { every: s.everyMs, offset: scheduleOffsetMs(id, s.everyMs) },
            {
              name: s.def.name,
              data: s.def.payload.parse({ accountId: id }),
              opts: withinLimits(s.def.name, s.def.options),
            },
          ),
        ),
      );
    });
  } finally {
    await Promise.all(Object.values(queues).map((q) => q.close()));
  }
  return (performance.now() - t0) / 1000;
}

export function startWorkerProcess(
  stage: Stage,
  label: string,
  extraEnv: Record<string, string> = {},
): Promise<ChildHandle<{ pid: number }>> {
  const sim = stage.services.ready;
  return forkChild<{ pid: number }>(new URL('./worker-process.ts', import.meta.url), label, {
    BENCH_DATABASE_URL: stage.databaseUrl,
    BENCH_REDIS_URL: stage.redis.url,
    BENCH_REDIS_PREFIX: stage.redis.prefix,
    BENCH_S3_ENDPOINT: sim.s3Endpoint,
    BENCH_BUCKET: sim.bucket,
    BENCH_GRAPH_URL: sim.graphUrl,
    BENCH_OAUTH_TOKEN_URL: sim.oauthTokenUrl,
    BENCH_IMAGE_HOST: sim.imageHost,
    BENCH_CIPHER_KEY: stage.cipherKey,
    ...extraEnv,
  });
}

export const workerStats = async (w: ChildHandle<unknown>, keys = false) =>
  (await w.ask({ type: 'stats', keys })).stats as WorkerStats;

const FEED_QUEUES = [
  QUEUE.feedSync,
  QUEUE.mirrorMedia,
  QUEUE.publishFeed,
  QUEUE.tokenRefresh,
  QUEUE.maintenance,
] as const;

/** Jobs waiting, running or held for their children in the queues (delayed ones not counted). */
async function busyJobs(queues: readonly Queue[]): Promise<number> {
  let busy = 0;
  for (const q of queues) {
    const c = await q.getJobCounts('waiting', 'active', 'prioritized', 'waiting-children');
    busy += Object.values(c).reduce((a, b) => a + b, 0);
  }
  return busy;
}

/** Nothing waiting, running or waiting for children on any queue (delayed jobs are the future). */
export async function untilQuiet(
  queues: readonly Queue[],
  extra: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let quiet = 0;
  while (quiet < 2) {
    if (Date.now() > deadline) throw new Error('bench: the queues did not drain in time');
    await delay(250);
    quiet = (await busyJobs(queues)) === 0 && (await extra()) ? quiet + 1 : 0;
  }
}

/** Bytes our keys take in Redis (MEMORY USAGE of every key under the prefix). */
export async function redisBytes(redis: { url: string; prefix: string }): Promise<{ bytes: number; keys: number }> {
  const r = redisClient(redis);
  try {
    let cursor = '0';
    let bytes = 0;
    let keys = 0;
    do {
      const [next, batch] = await r.scan(cursor, 'MATCH', `${redis.prefix}:*`, 'COUNT', 2000);
      cursor = next;
      if (batch.length) {
        const p = r.pipeline();
        for (const k of batch) p.memory('USAGE', k, 'SAMPLES', '0');
        for (const [, v] of (await p.exec()) ?? []) bytes += Number(v ?? 0);
        keys += batch.length;
      }
    } while (cursor !== '0');
    return { bytes, keys };
  } finally {
    r.disconnect();
  }
}

export interface MemoryPoint {
  atSeconds: number;
  rssMb: number;
  phase: string;
}

/**
 * The soak: `npm run bench -- --scale 100000 [--posts-mean 24] [--window-minutes 10] [--json]`.
 *
 * 1. Set-up, not measured: N accounts with realistic feeds in the simulator and, as an earlier
 *    sync left them, in PostgreSQL and storage (seedFeeds); both schedulers of every account in
 *    Redis as a running worker leaves them (preschedule).
 * 2. The worker starts on them (its start-up upserts every account's schedulers: timed) and the
 *    daily jobs it queues at start run; then the real-time window: the hourly syncs and the
 *    6-hourly refresh checks come due in their slots, posts are added (2% of accounts per hour)
 *    and deleted (0.5%) at the source, listings fail (0.5%), links come within a day of their oe
 *    (signed at moments spread over their 5-day life), and some tokens expire in the window.
 *    Worker CPU = the worker process's own CPU time (user + system, process.cpuUsage in that
 *    process) over the window's wall-clock seconds: a busy machine slows it down but does not
 *    bill other processes' work to it.
 * 3. The footprint: Redis (MEMORY USAGE of every key of the run's prefix), PostgreSQL (database
 *    size above the empty schema), images and storage objects per account.
 * 4. Catch-up after an hour down: the worker stops; every account's sync is made due at once
 *    (what an hour without a worker leaves: each hourly sync due once); a new worker starts and
 *    the syncs it finishes are counted for `catchUpSeconds` (all of them at small sizes).
 */
export async function runScale(args: ScaleArgs, say: Say): Promise<Record<string, unknown>> {
  const started = performance.now();
  const linkLifetimeMs = 5 * DAY;
  const feedLabel =
    args.posts !== undefined
      ? `${args.posts} posts per account`
      : `${args.meanPosts} posts per account on average (1-100)`;
  say(
    `feedmirror bench --scale ${args.accounts}: ${feedLabel}, one worker process, a ${args.windowMinutes}-minute real-time window`,
  );
  const stage = await openStage({ wallClock: true, linkLifetimeMs });
  const memory: MemoryPoint[] = [];
  let worker: ChildHandle<{ pid: number }> | undefined;
  const queues = FEED_QUEUES.map((name) => createQueue(name, stage.redis));
  const events: QueueEvents[] = [];
  let sampler: NodeJS.Timeout | undefined;
  try {
    say('set-up (not measured):');
    const now = new Date();
    const windowMs = args.windowMinutes * MINUTE;
    // Tokens: in steady state each is refreshed at the first check after REFRESH_AFTER_DAYS, so
    // their ages spread evenly up to that plus one check interval.
    const steadyAgeMs = stage.config.REFRESH_AFTER_DAYS * DAY + stage.config.REFRESH_CHECK_HOURS * HOUR;
    const rndAge = seededRandom(args.seed + 7);
    const tokenAgeMs = () => Math.floor(rndAge() * steadyAgeMs);
    const seeded = await seedFeeds(
      stage,
      {
        count: args.accounts,
        ...(args.posts !== undefined ? { fixedPosts: args.posts } : { meanPosts: args.meanPosts }),
        prefix: 'soak',
        now,
        seed: args.seed,
        tokenAgeMs,
        // Links renewed (or posted) at moments spread over their life, a day of margin kept.
        signedSpreadMs: linkLifetimeMs - DAY,
      },
      say,
    );
    const ids = seeded.accounts.map((a) => a.id);
    const prescheduleSeconds = await preschedule(stage, ids);
    say(`  schedulers of every account in Redis: ${prescheduleSeconds.toFixed(0)} s`);
    const setupSeconds = (performance.now() - started) / 1000;

    // ---- the worker's start on N accounts (its start-up upserts every account's schedulers) ----
    const t0 = performance.now();
    // Verify off: the seeded copies are rows without objects (see bench/worker-process.ts).
    const workerEnv = { BENCH_VERIFY: 'off' };
    worker = await startWorkerProcess(stage, 'bench worker', workerEnv);
    let w = worker;
    const workerStartSeconds = (performance.now() - t0) / 1000;
    let phaseNow = 'start';
    sampler = setInterval(() => {
      void workerStats(w)
        .then((s) => memory.push({ atSeconds: (performance.now() - started) / 1000, rssMb: s.rssMb, phase: phaseNow }))
        .catch(() => undefined);
    }, 5_000);
    // The daily jobs a start queues (expiry sweep, housekeeping, media sweep) run first.
    const maintenance = queues[FEED_QUEUES.indexOf(QUEUE.maintenance)]!;
    // Waited for up to 30 minutes; a run whose daily jobs take longer goes on to its window with
    // them still running (said, and counted in the window's CPU) rather than losing its figures.
    let dailyJobsDone = true;
    await untilQuiet([maintenance], async () => true, 30 * MINUTE).catch(() => {
      dailyJobsDone = false;
    });
    const dailyJobsSeconds = (performance.now() - t0) / 1000;
    const startCpu = await workerStats(w);
    say(
      `worker start on ${args.accounts} accounts: ${workerStartSeconds.toFixed(0)} s to ready (schedulers checked, those that differ written), ` +
        `daily jobs ${dailyJobsDone ? 'done' : 'STILL RUNNING (they run on into the window)'} after ${dailyJobsSeconds.toFixed(0)} s; ` +
        `worker CPU ${(startCpu.cpuUserS + startCpu.cpuSystemS).toFixed(1)} s`,
    );

    // ---- the window ----
    phaseNow = 'window';
    const lateness: { sync: number[]; refresh: number[] } = { sync: [], refresh: [] };
    const seen = new Set<string>();
    const windowStart = Date.now();
    for (const name of [QUEUE.feedSync, QUEUE.tokenRefresh]) {
      const qe = new QueueEvents(name, { connection: bullConnection(stage.redis), prefix: stage.redis.prefix });
      events.push(qe);
      const queue = queues[FEED_QUEUES.indexOf(name)]!;
      qe.on('active', ({ jobId }) => {
        if (seen.has(`${name}:${jobId}`)) return;
        seen.add(`${name}:${jobId}`);
        void Job.fromId(queue, jobId).then((job) => {
          if (!job?.processedOn) return;
          // A scheduler's job id ends with the instant it was due (repeat:<scheduler>:<millis>); the
          // job's own delay is reset once it is promoted, so it cannot tell.
          const m = /^repeat:.*:(\d+)$/.exec(job.id ?? '');
          const due = m ? Number(m[1]) : job.timestamp + (job.opts.delay ?? 0);
          if (due < windowStart) return; // due before the window: not a job of the window
          (name === QUEUE.feedSync ? lateness.sync : lateness.refresh).push(Math.max(0, job.processedOn - due) / 1000);
        });
      });
      await qe.waitUntilReady();
    }
    // 0.5% of the tokens die in the window (accounts whose refreshes kept failing): aged now, in
    // the simulator and in PostgreSQL alike, whatever their refresh check then makes of them.
    const dying = ids.filter(() => rndAge() < 0.005);
    const expiring = dying.length;
    const diesAt = dying.map(() => Date.now() + Math.floor(rndAge() * windowMs));
    const aged = await stage.services.reissueTokens(
      dying,
      diesAt.map((t) => t - 60 * DAY),
    );
    await pool(dying, 8, async (accountId, i) => {
      await saveToken(
        stage.db,
        stage.cipher,
        {
          accountId,
          accessToken: aged[i]!,
          obtainedAt: new Date(diesAt[i]! - 60 * DAY),
          expiresAt: new Date(diesAt[i]!),
        },
        'imported',
      );
    });
    const before = await workerStats(w);
    const reqBefore = await stage.services.requestCounts();
    const tickMs = 10_000;
    const perTick = (ratePerHour: number) => (args.accounts * ratePerHour * tickMs) / HOUR;
    const debt = { add: 0, del: 0, fail: 0 };
    const counts = { added: 0, deleted: 0, failing: 0 };
    const rnd = seededRandom(args.seed + 11);
    const pick = () => ids[Math.floor(rnd() * ids.length)]!;
    while (Date.now() - windowStart < windowMs) {
      await delay(Math.min(tickMs, windowMs - (Date.now() - windowStart)));
      debt.add += perTick(0.02);
      debt.del += perTick(0.005);
      debt.fail += perTick(0.005);
      const a: string[] = [];
      const d: string[] = [];
      const f: string[] = [];
      for (; debt.add >= 1; debt.add--) a.push(pick());
      for (; debt.del >= 1; debt.del--) d.push(pick());
      for (; debt.fail >= 1; debt.fail--) f.push(pick());
      if (a.length) await stage.services.change(a);
      if (d.length) counts.deleted += await stage.services.deletePosts(d, Math.floor(rnd() * 1e9));
      if (f.length) await stage.services.fail(f);
      counts.added += a.length;
      counts.failing += f.length;
      if (!args.json)
        process.stderr.write(
          `\r  window: ${((Date.now() - windowStart) / 1000).toFixed(0)} s of ${windowMs / 1000}, ${lateness.sync.length} syncs and ${lateness.refresh.length} refresh checks started`,
        );
    }
    if (!args.json) process.stderr.write('\n');
    const after = await workerStats(w);
    const reqAfter = await stage.services.requestCounts();
    const windowSeconds = (Date.now() - windowStart) / 1000;
    const cpuSeconds = after.cpuUserS + after.cpuSystemS - (before.cpuUserS + before.cpuSystemS);
    const cpuPercentOfOneCore = (100 * cpuSeconds) / windowSeconds;
    const syncs = [...lateness.sync].sort((a, b) => a - b);
    const refreshes = [...lateness.refresh].sort((a, b) => a - b);
    const all = [...syncs, ...refreshes].sort((a, b) => a - b);
    const edge = (k: string) => (reqAfter.graphByEdge[k] ?? 0) - (reqBefore.graphByEdge[k] ?? 0);
    // Copies of the window against their link's deadline (the post's earliest oe when copied).
    const deadline = (
      await stage.db.query<{ before: string; after: string; unknown: string }>(
        `SELECT count(*) FILTER (WHERE p.earliest_oe IS NOT NULL AND c.copied_at <= p.earliest_oe) AS before,
                count(*) FILTER (WHERE p.earliest_oe IS NOT NULL AND c.copied_at > p.earliest_oe) AS after,
                count(*) FILTER (WHERE p.earliest_oe IS NULL) AS unknown
           FROM media_copies c JOIN posts p USING (account_id, media_id) WHERE c.copied_at >= $1`,
        [new Date(windowStart)],
      )
    ).rows[0]!;
    const reauth = Number(
      (await stage.db.query<{ n: string }>(`SELECT count(*) AS n FROM accounts WHERE status <> 'active'`)).rows[0]!.n,
    );
    const failedSyncJobs = Number((await queues[0]!.getJobCounts('failed')).failed ?? 0);

    // ---- the footprint ----
    const redisUse = await redisBytes(stage.redis);
    const dbBytes = Number(
      (await stage.db.query<{ n: string }>('SELECT pg_database_size(current_database()) AS n')).rows[0]!.n,
    );
    const stored = (
      await stage.db.query<{ posts: string; copies: string; variants: string }>(
        `SELECT (SELECT count(*) FROM posts) AS posts, (SELECT count(*) FROM media_copies) AS copies,
                (SELECT coalesce(sum(coalesce(jsonb_array_length(variants), cardinality(string_to_array(nullif(variant_sizes, ''), ',')))), 0)
                   FROM media_copies) AS variants`,
      )
    ).rows[0]!;
    const imagesPerAccount = Number(stored.copies) / args.accounts;
    // Where the PostgreSQL bytes are: each table with its indexes and TOAST, per account.
    const tables = Object.fromEntries(
      (
        await stage.db.query<{ t: string; n: string }>(
          `SELECT c.relname AS t, pg_total_relation_size(c.oid) AS n FROM pg_class c
             JOIN pg_namespace s ON s.oid = c.relnamespace
            WHERE s.nspname = current_schema() AND c.relkind = 'r' ORDER BY 2 DESC LIMIT 8`,
        )
      ).rows.map((r) => [r.t, Math.round(Number(r.n) / args.accounts)]),
    );
    // Each copy is its original, its variants and its manifest; each account has its feed object.
    const objectsPerAccount = (Number(stored.copies) * 2 + Number(stored.variants)) / args.accounts + 1;

    // ---- catch-up after an hour down ----
    phaseNow = 'catch-up';
    const peakBeforeCatchUp = after.maxRssMb;
    await w.close();
    worker = undefined;
    // Every account's sync due at once, as after an hour without a worker (each hourly sync then
    // due once): their sync schedulers removed, a new worker's start-up finds them new and runs
    // each once now (promoting the delayed jobs would not do: the start-up's upsert moves a
    // scheduler's next job back into its slot).
    const syncQueue = queues[FEED_QUEUES.indexOf(QUEUE.feedSync)]!;
    await pool(ids, 32, async (id) => {
      await syncQueue.removeJobScheduler(syncSchedulerId(id));
    });
    const restart = new Date();
    const tc = performance.now();
    worker = await startWorkerProcess(stage, 'bench worker (after an hour down)', workerEnv);
    w = worker;
    const restartSeconds = (performance.now() - tc) / 1000;
    const syncedSince = async () =>
      Number(
        (await stage.db.query<{ n: string }>('SELECT count(*) AS n FROM accounts WHERE last_sync_at >= $1', [restart]))
          .rows[0]!.n,
      );
    // The start (its schedules checked and written) is counted apart from the syncs after it:
    // the worker syncs while it starts, but its start-up CPU is not a sync's cost.
    const atReady = await workerStats(w);
    const syncsAtReady = await syncedSince();
    const tReady = performance.now();
    const catchUpLimitMs = args.catchUpSeconds * 1000;
    let caught = 0;
    while (performance.now() - tc < catchUpLimitMs) {
      await delay(2_000);
      caught = await syncedSince();
      if (caught >= args.accounts - counts.failing) break;
    }
    const catchUpSeconds = (performance.now() - tc) / 1000;
    const atCatchUp = await workerStats(w);
    const catchUp = {
      syncs: caught,
      seconds: catchUpSeconds,
      complete: caught >= args.accounts - counts.failing,
      syncsPerSecond: caught / catchUpSeconds,
      restartSeconds,
      workerCpuSeconds: atCatchUp.cpuUserS + atCatchUp.cpuSystemS,
      workerCpuMsPerSync: (1000 * (atCatchUp.cpuUserS + atCatchUp.cpuSystemS)) / Math.max(1, caught),
      /** The start on its own: CPU until ready, and the syncs done meanwhile. */
      startCpuSeconds: atReady.cpuUserS + atReady.cpuSystemS,
      syncsDuringStart: syncsAtReady,
      /** After the start: the rate and the CPU of a sync alone. */
      syncsPerSecondAfterReady: (caught - syncsAtReady) / Math.max(1e-9, (performance.now() - tReady) / 1000),
      workerCpuMsPerSyncAfterReady:
        (1000 * (atCatchUp.cpuUserS + atCatchUp.cpuSystemS - atReady.cpuUserS - atReady.cpuSystemS)) /
        Math.max(1, caught - syncsAtReady),
      estimatedSecondsForAll: args.accounts / Math.max(1e-9, caught / catchUpSeconds),
      peakRssMb: atCatchUp.maxRssMb,
    };
    clearInterval(sampler);
    sampler = undefined;

    const result = {
      accounts: args.accounts,
      postsPerAccount: seeded.posts / args.accounts,
      postsMean: args.posts ?? args.meanPosts,
      imagesPerAccount,
      windowMinutes: args.windowMinutes,
      cpuMeasure: "the worker process's own CPU time (user+system) over the window's wall-clock seconds",
      cpuPercentOfOneCore,
      p50LatenessSeconds: percentile(all, 50),
      p99LatenessSeconds: percentile(all, 99),
      maxLatenessSeconds: all.at(-1) ?? 0,
      lateness: {
        syncs: { jobs: syncs.length, p50: percentile(syncs, 50), p99: percentile(syncs, 99), max: syncs.at(-1) ?? 0 },
        refreshChecks: {
          jobs: refreshes.length,
          p50: percentile(refreshes, 50),
          p99: percentile(refreshes, 99),
          max: refreshes.at(-1) ?? 0,
        },
      },
      copiesBeforeDeadline: Number(deadline.before),
      copiesAfterDeadline: Number(deadline.after),
      copiesWithoutDeadline: Number(deadline.unknown),
      redisBytesPerAccount: redisUse.bytes / args.accounts,
      redisKeys: redisUse.keys,
      postgresBytesPerAccount: (dbBytes - stage.emptyDbBytes) / args.accounts,
      postgresBytes: dbBytes,
      postgresBytesPerAccountByTable: tables,
      storageObjectsPerAccount: objectsPerAccount,
      workerPeakRssMb: Math.max(peakBeforeCatchUp, catchUp.peakRssMb),
      workerPeakRssMbSteady: peakBeforeCatchUp,
      workerAtPeak: after.atPeak,
      workerStartSeconds,
      dailyJobsSeconds,
      dailyJobsDone,
      catchUpSyncsPerSecond: catchUp.syncsPerSecond,
      catchUp,
      window: {
        seconds: windowSeconds,
        syncsStarted: syncs.length,
        refreshChecksStarted: refreshes.length,
        postsAdded: counts.added,
        postsDeleted: counts.deleted,
        accountsFailing: counts.failing,
        tokensExpiringInWindow: expiring,
        tokenRefreshCalls: edge('refresh_access_token'),
        listingCalls: edge('media') + edge('children'),
        singleMediaReads: edge('{id}'),
        accountsNeedingReconnect: reauth,
        imagesCopied: after.mediaPuts - before.mediaPuts,
        feedWrites: after.feedPuts - before.feedPuts,
        workerCpuSeconds: cpuSeconds,
        failedSyncJobs,
      },
      seeded: {
        posts: seeded.posts,
        images: seeded.images,
        seconds: seeded.seconds,
        cpuSeconds: seeded.cpuSeconds,
        prescheduleSeconds,
      },
      setupSeconds,
      totalSeconds: (performance.now() - started) / 1000,
      memory,
      node: process.version,
    };
    const t = SCALE_TARGETS;
    say(
      `window (${windowSeconds.toFixed(0)} s): ${syncs.length} syncs and ${refreshes.length} refresh checks started; ${counts.added} posts added, ${counts.deleted} deleted, ` +
        `${counts.failing} listings failing; ${result.window.imagesCopied} images copied, ${result.window.feedWrites} feeds written, ${result.window.singleMediaReads} link renewals, ` +
        `${result.window.tokenRefreshCalls} token refreshes (${expiring} tokens dying in the window; ${reauth} accounts need their owner); worker CPU ${cpuSeconds.toFixed(1)} s`,
    );
    say(
      `footprint: Redis ${(redisUse.bytes / 1e6).toFixed(1)} MB in ${redisUse.keys} keys; PostgreSQL ${(dbBytes / 1e6).toFixed(1)} MB (empty schema ${(stage.emptyDbBytes / 1e6).toFixed(1)} MB); ` +
        `${imagesPerAccount.toFixed(1)} images and ${objectsPerAccount.toFixed(0)} storage objects per account; PostgreSQL per account by table: ` +
        Object.entries(tables)
          .map(([t, n]) => `${t} ${(n / 1024).toFixed(1)} KB`)
          .join(', '),
    );
    say(
      `catch-up after an hour down: ${caught} syncs in ${catchUpSeconds.toFixed(0)} s = ${catchUp.syncsPerSecond.toFixed(1)} syncs/s (${catchUp.complete ? 'all' : `stopped there; all ${args.accounts} in about ${(catchUp.estimatedSecondsForAll / 60).toFixed(0)} min at that rate`}), ` +
        `worker ready after ${restartSeconds.toFixed(0)} s (${catchUp.startCpuSeconds.toFixed(1)} s of CPU, ${catchUp.syncsDuringStart} syncs meanwhile); ` +
        `after that ${catchUp.syncsPerSecondAfterReady.toFixed(1)} syncs/s at ${catchUp.workerCpuMsPerSyncAfterReady.toFixed(1)} ms of worker CPU per sync ` +
        `(${catchUp.workerCpuMsPerSync.toFixed(1)} ms with the start)`,
    );
    say('targets:');
    const line = (pass: boolean, text: string) => say(`  ${pass ? 'PASS' : 'MISS'} ${text}`);
    line(
      cpuPercentOfOneCore < t.cpuPercentOfOneCore,
      `worker CPU ${cpuPercentOfOneCore.toFixed(1)}% of one core (own CPU time over the window; target < ${t.cpuPercentOfOneCore}%)`,
    );
    line(
      result.p99LatenessSeconds < t.p99LatenessSeconds,
      `start lateness p50 ${result.p50LatenessSeconds.toFixed(2)} s, p99 ${result.p99LatenessSeconds.toFixed(2)} s (target p99 < ${t.p99LatenessSeconds} s; ${all.length} jobs)`,
    );
    line(
      result.copiesAfterDeadline === 0,
      `${result.copiesAfterDeadline} copies after their deadline, ${result.copiesBeforeDeadline} before (target 0 after)`,
    );
    line(
      result.redisBytesPerAccount < t.redisBytesPerAccount,
      `Redis ${(result.redisBytesPerAccount / 1024).toFixed(1)} KB per account (target < ${t.redisBytesPerAccount / 1024} KB)`,
    );
    line(
      result.postgresBytesPerAccount < t.postgresBytesPerAccount,
      `PostgreSQL ${(result.postgresBytesPerAccount / 1024).toFixed(1)} KB per account (target < ${t.postgresBytesPerAccount / 1024} KB)`,
    );
    line(
      result.workerPeakRssMb < t.workerPeakRssMb,
      `worker peak RSS ${result.workerPeakRssMb.toFixed(0)} MB (target < ${t.workerPeakRssMb} MB; ${peakBeforeCatchUp.toFixed(0)} MB before the catch-up)`,
    );
    say(`run took ${(result.totalSeconds / 60).toFixed(1)} minutes (set-up ${(setupSeconds / 60).toFixed(1)})`);
    return result;
  } finally {
    if (sampler) clearInterval(sampler);
    for (const e of events) await e.close().catch(() => undefined);
    await worker?.close().catch(() => undefined);
    for (const q of queues) await q.close().catch(() => undefined);
    await stage.cleanup();
  }
}

/**
 * Many workers: `npm run bench -- --workers-compare N`. The same work, N accounts' first sync
 * (tiny images) and a due token refresh each, done by 1 and then by 2 worker processes on one
 * Redis, each run on a fresh database, Redis prefix and simulator. The workers are running
 * before the accounts arrive (scheduled as `accounts add` does), and the clock and the CPU count
 * start then, so a process's own start is not part of the comparison. Counts duplicate copies (a
 * media object uploaded twice, by one process or by two) and duplicate refreshes (refresh calls
 * beyond one per account).
 */
export async function runWorkersCompare(
  args: { accounts: number; posts: number; counts: number[] },
  say: Say,
): Promise<Record<string, unknown>> {
  say(
    `feedmirror bench --workers-compare ${args.accounts}: first sync (${args.posts} small posts each) and a due token refresh per account, by ${args.counts.join(', then ')} worker process(es) on one Redis`,
  );
  const runs: Array<Record<string, number>> = [];
  for (const n of args.counts) {
    const stage = await openStage({ wallClock: true });
    const queues = FEED_QUEUES.map((name) => createQueue(name, stage.redis));
    const workers: Array<ChildHandle<{ pid: number }>> = [];
    try {
      // The workers first, on an empty database: their start (a process, its modules, its
      // connections) is not the work being compared, and on 2 cores a second process starting
      // while the first works would be billed to the second worker's throughput.
      for (let i = 0; i < n; i++) workers.push(await startWorkerProcess(stage, `bench worker ${i + 1}`));
      // Tokens 31 days old: every account's refresh check refreshes (R-TOK-8), once.
      const accounts = await seedAccounts(
        stage,
        args.accounts,
        args.posts,
        { prefix: `w${n}`, now: new Date(), issuedAgoMs: 31 * DAY },
        say,
      );
      const cpuOf = (st: WorkerStats) => st.cpuUserS + st.cpuSystemS;
      const cpuBefore = (await Promise.all(workers.map((w) => workerStats(w)))).reduce((a, st) => a + cpuOf(st), 0);
      const before = await stage.services.requestCounts();
      const since = new Date();
      const t0 = performance.now();
      // The accounts arrive at the running cluster as `accounts add` or a connect brings them:
      // both schedules of each, a new schedule running once at once.
      const scheduling = {
        tokenRefresh: createQueue(QUEUE.tokenRefresh, stage.redis),
        feedSync: createQueue(QUEUE.feedSync, stage.redis),
      };
      const settings = {
        refreshCheckEveryMs: stage.config.REFRESH_CHECK_HOURS * HOUR,
        syncEveryMs: stage.config.SYNC_INTERVAL_MINUTES * MINUTE,
      };
      try {
        await pool(accounts, 16, (acc) => scheduleAccount(scheduling, acc.id, settings));
      } finally {
        await Promise.all(Object.values(scheduling).map((q) => q.close()));
      }
      const published = async () =>
        Number(
          (
            await stage.db.query<{ n: string }>(
              'SELECT count(*) AS n FROM feed_publications WHERE NOT demo AND published_at >= $1',
              [since],
            )
          ).rows[0]!.n,
        );
      await untilQuiet(queues, async () => (await published()) >= args.accounts, 60 * MINUTE);
      const seconds = (performance.now() - t0) / 1000;
      const after = await stage.services.requestCounts();
      const refreshCalls =
        (after.graphByEdge['refresh_access_token'] ?? 0) - (before.graphByEdge['refresh_access_token'] ?? 0);
      const stats = await Promise.all(workers.map((w) => workerStats(w, true)));
      const seen = new Map<string, number>();
      for (const st of stats) for (const k of st.mediaKeys ?? []) seen.set(k, (seen.get(k) ?? 0) + 1);
      const duplicateCopies =
        stats.reduce((a, st) => a + st.repeatedMediaKeys, 0) + [...seen.values()].filter((c) => c > 1).length;
      const copies = Number((await stage.db.query<{ n: string }>('SELECT count(*) AS n FROM media_copies')).rows[0]!.n);
      const failed = (await Promise.all(queues.map((q) => q.getJobCounts('failed')))).reduce(
        (a, c) => a + (c.failed ?? 0),
        0,
      );
      const run = {
        workers: n,
        accounts: args.accounts,
        seconds,
        syncsPerSecond: args.accounts / seconds,
        imagesCopied: copies,
        mediaUploads: stats.reduce((a, st) => a + st.mediaPuts, 0),
        duplicateCopies,
        refreshCalls,
        duplicateRefreshes: Math.max(0, refreshCalls - args.accounts),
        failedJobs: failed,
        peakRssMbPerWorker: Math.max(...stats.map((st) => st.maxRssMb)),
        /** From the accounts' scheduling to the last feed published; the workers' start excluded. */
        workerCpuSeconds: stats.reduce((a, st) => a + cpuOf(st), 0) - cpuBefore,
      };
      runs.push(run);
      say(
        `  ${n} worker(s): ${args.accounts} first syncs in ${seconds.toFixed(0)} s = ${run.syncsPerSecond.toFixed(1)} syncs/s; ${copies} images copied (${run.mediaUploads} uploads), ` +
          `${duplicateCopies} duplicate copies; ${refreshCalls} refresh calls for ${args.accounts} due tokens (${run.duplicateRefreshes} duplicates); ${failed} failed jobs; worker CPU ${run.workerCpuSeconds.toFixed(0)} s`,
      );
    } finally {
      for (const w of workers) await w.close().catch(() => undefined);
      for (const q of queues) await q.close().catch(() => undefined);
      await stage.cleanup();
    }
  }
  const ratio = runs.length >= 2 ? runs[1]!.syncsPerSecond! / runs[0]!.syncsPerSecond! : undefined;
  if (ratio !== undefined)
    say(`throughput ratio ${runs[1]!.workers} : ${runs[0]!.workers} workers = ${ratio.toFixed(2)}`);
  return { accounts: args.accounts, runs, throughputRatio: ratio, node: process.version };
}

export interface DowntimeArgs {
  accounts: number;
  /** A fixed number of posts per account; undefined: realistic feeds of `meanPosts` on average. */
  posts?: number | undefined;
  meanPosts: number;
  /** New posts per account during the downtime, at random moments of it. */
  newPosts: number;
  /** Fractions work: 1/24 is an hour down. */
  downDays: number;
  linkDays: number;
  timeScale: number;
  seed: number;
  json: boolean;
  /**
   * Count the catch-up this many minutes at most (undefined: until it is done). A stopped one
   * reports its rates over the window, what it had left and when it would be done at that pace.
   */
  limitMinutes?: number | undefined;
}

/** The one line a stalled catch-up ends with: which accounts never synced again, and their next sync. */
async function stalled(stage: Stage, feedSync: Queue, since: Date, dueSyncs: number): Promise<string> {
  const { rows } = await stage.db.query<{ id: string; n: string }>(
    `SELECT id, count(*) OVER () AS n FROM accounts WHERE last_sync_at IS NULL OR last_sync_at < $1 ORDER BY id LIMIT 3`,
    [since],
  );
  const left = rows[0]?.n ?? '0';
  const next = await Promise.all(
    rows.map(async (r) => {
      const s = await feedSync.getJobScheduler(syncSchedulerId(r.id));
      return s?.next
        ? `${r.id}: next sync at ${new Date(s.next).toISOString()} in Redis's time, iteration ${s.iterationCount ?? '?'}`
        : `${r.id}: no sync scheduler`;
    }),
  );
  return `bench: the catch-up stalled: ${left} of ${dueSyncs} accounts not synced since the restart and nothing queued for 2 minutes (${next.join('; ')})`;
}

/**
 * Catch-up after downtime: `npm run bench -- --downtime N [--down-days 3]`.
 *
 * 1. Set-up, not measured: N accounts with realistic feeds (seedFeeds, as the soak: 1-100 posts,
 *    `meanPosts` on average, carousels, videos and reels), each as an earlier sync and publish
 *    left it when the worker went down at tDown, on the simulator's manual clock: links signed at
 *    moments spread over the day before tDown for 2-day links (a running worker renews a video's
 *    links within a day of their death, so none had less than a day left), tokens of ages spread
 *    as refreshes leave them, feeds in the bucket, both schedulers of every account in Redis as a
 *    running worker leaves them (preschedule). During the `downDays`, each account gets
 *    `newPosts` new posts of the same mix at random moments (their links signed then, dying
 *    `linkDays` later).
 * 2. The worker's start at the restart instant t0, the clocks standing still: ready, then the
 *    daily jobs it queues at start done. Timed and its CPU counted on its own: nothing of the
 *    catch-up runs in it (the schedules it finds are not due in Redis's time).
 * 3. The catch-up: every schedule that came due during the downtime is made due at once (promoted:
 *    every sync, and every refresh check after 6 hours or more down; after one hour, the refresh
 *    checks whose slot fell in it), and from then on time runs `timeScale` times faster than the
 *    wall clock for the worker (a file clock) and the simulator alike, so links die during the
 *    catch-up as they would. Counted until every account has synced, every new post has been
 *    listed and no job is left: accounts synced per second, syncs per second, the worker's CPU
 *    per account and per sync (its start excluded), the time until the last account synced, the
 *    last new image copied and the last feed published.
 * 4. Copies of the new posts against their link's deadline: those whose deadline passed before
 *    the restart can only be renewed first (R-LNK-3, R-MED-8); of the others, the target is none
 *    late among those the worker had found (listed) in time (R-LNK-5: soonest deadline first).
 *    The feeds: how many were published again, the video posts whose links the catch-up renewed
 *    (R-MED-8), and feeds left published with a video link dead at the end (target 0).
 */
export async function runDowntime(args: DowntimeArgs, say: Say): Promise<Record<string, unknown>> {
  const started = performance.now();
  const linkMs = args.linkDays * DAY;
  const downMs = Math.round(args.downDays * DAY);
  const tDown = Date.UTC(2026, 5, 1, 12);
  const t0 = tDown + downMs;
  const downLabel = downMs >= DAY ? `${+(downMs / DAY).toFixed(2)} days` : `${+(downMs / HOUR).toFixed(2)} hours`;
  const feedLabel =
    args.posts !== undefined
      ? `${args.posts} posts per account`
      : `${args.meanPosts} posts per account on average (1-100)`;
  say(
    `feedmirror bench --downtime ${args.accounts}: ${feedLabel}; worker down ${downLabel}; ${args.newPosts} new posts per account meanwhile; ` +
      `links live ${args.linkDays} days; time runs ${args.timeScale}x the wall clock from the catch-up on`,
  );
  const stage = await openStage({ wallClock: false, startMs: tDown, linkLifetimeMs: linkMs });
  const { mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { FileClock } = await import('../src/util/clock.ts');
  const clockFile = join(mkdtempSync(join(tmpdir(), 'fm-bench-clock-')), 'now');
  FileClock.write(clockFile, tDown);
  const queues = FEED_QUEUES.map((name) => createQueue(name, stage.redis));
  const queue = (name: (typeof FEED_QUEUES)[number]) => queues[FEED_QUEUES.indexOf(name)]!;
  let worker: ChildHandle<{ pid: number }> | undefined;
  let ticker: NodeJS.Timeout | undefined;
  let shower: NodeJS.Timeout | undefined;
  try {
    say('set-up (not measured):');
    const steadyAgeMs = stage.config.REFRESH_AFTER_DAYS * DAY + stage.config.REFRESH_CHECK_HOURS * HOUR;
    const rndAge = seededRandom(args.seed + 7);
    // A running worker renews a video's links within a day of their death (sync.ts, R-MED-8):
    // when it went down, every stored link had at least that long left.
    const relinkMarginMs = DAY;
    const seeded = await seedFeeds(
      stage,
      {
        count: args.accounts,
        ...(args.posts !== undefined ? { fixedPosts: args.posts } : { meanPosts: args.meanPosts }),
        prefix: 'down',
        now: new Date(tDown),
        seed: args.seed,
        tokenAgeMs: () => Math.floor(rndAge() * steadyAgeMs),
        signedSpreadMs: linkMs > relinkMarginMs ? linkMs - relinkMarginMs : Math.floor(linkMs / 2),
      },
      say,
    );
    const ids = seeded.accounts.map((a) => a.id);
    const prescheduleSeconds = await preschedule(stage, ids);
    say(`  schedulers of every account in Redis: ${prescheduleSeconds.toFixed(0)} s`);
    // The downtime: new posts of the feeds' mix at random moments (their links are signed then).
    const rnd = seededRandom(args.seed + 13);
    const changes: string[] = [];
    const at: number[] = [];
    const kinds: FeedPost[] = [];
    for (const id of ids) {
      for (let k = 0; k < args.newPosts; k++) {
        changes.push(id);
        at.push(tDown + Math.floor(rnd() * downMs));
        kinds.push(drawPost(rnd));
      }
    }
    for (let i = 0; i < changes.length; i += 2000)
      await stage.services.change(changes.slice(i, i + 2000), at.slice(i, i + 2000), kinds.slice(i, i + 2000));
    const setupSeconds = (performance.now() - started) / 1000;
    say(`  ${changes.length} new posts during the downtime; set-up ${setupSeconds.toFixed(0)} s`);

    // ---- the worker's start at t0, the clocks standing still ----
    // The schedules' slots run on Redis's clock, and at 100,000 accounts the set-up and the start
    // take long enough for a tenth of the hourly slots to come: held (paused queues) until the
    // catch-up, so the start runs its own work alone and the catch-up counts every sync.
    await queue(QUEUE.feedSync).pause();
    await queue(QUEUE.tokenRefresh).pause();
    await stage.services.setClock(t0);
    FileClock.write(clockFile, t0);
    const cpuOf = (st: WorkerStats) => st.cpuUserS + st.cpuSystemS;
    const ts = performance.now();
    worker = await startWorkerProcess(stage, 'bench worker', { BENCH_CLOCK_FILE: clockFile, BENCH_VERIFY: 'off' });
    const w = worker;
    const readySeconds = (performance.now() - ts) / 1000;
    await untilQuiet([queue(QUEUE.maintenance)], async () => true, 30 * MINUTE);
    const atStart = await workerStats(w);
    const syncsDuringStart = Number(
      (await stage.db.query<{ n: string }>('SELECT count(*) AS n FROM sync_runs WHERE at >= $1', [new Date(t0)]))
        .rows[0]!.n,
    );
    const start = {
      readySeconds,
      dailyJobsDoneSeconds: (performance.now() - ts) / 1000,
      workerCpuSeconds: cpuOf(atStart),
      peakRssMb: atStart.maxRssMb,
      /** Syncs whose slot came in Redis's time during the set-up or the start (not the catch-up's). */
      syncsDuringStart,
    };
    say(
      `worker start on ${args.accounts} accounts: ready after ${readySeconds.toFixed(1)} s, daily jobs done after ${start.dailyJobsDoneSeconds.toFixed(1)} s; ` +
        `worker CPU ${start.workerCpuSeconds.toFixed(1)} s, peak RSS ${start.peakRssMb.toFixed(0)} MB`,
    );

    // ---- the catch-up: what came due while down, due at once; time running ----
    // A schedule `every` E with offset o runs at k*E + o: it came due during the downtime if one
    // of those fell in [tDown, t0).
    const cameDue = (id: string, everyMs: number) => {
      const o = scheduleOffsetMs(id, everyMs);
      return Math.ceil((tDown - o) / everyMs) * everyMs + o < t0;
    };
    const due = [
      { q: queue(QUEUE.feedSync), everyMs: stage.config.SYNC_INTERVAL_MINUTES * MINUTE },
      { q: queue(QUEUE.tokenRefresh), everyMs: stage.config.REFRESH_CHECK_HOURS * HOUR },
    ].map((s) => ({ ...s, accounts: new Set(ids.filter((id) => cameDue(id, s.everyMs))) }));
    const partial = await Promise.all(
      due.map(async (s) =>
        s.accounts.size === ids.length
          ? []
          : (await s.q.getDelayed(0, -1)).filter((j) =>
              s.accounts.has((j.data as { accountId?: string }).accountId ?? ''),
            ),
      ),
    );
    // Accounts synced and new posts listed since the restart.
    const progress = async () =>
      (
        await stage.db.query<{ synced: string; listed: string }>(
          `SELECT (SELECT count(*) FROM accounts WHERE last_sync_at >= $1) AS synced,
                  (SELECT count(*) FROM posts WHERE first_seen_at >= $1) AS listed`,
          [new Date(t0)],
        )
      ).rows[0]!;
    // Accounts already synced since the restart, whose slot came in Redis's time before the
    // catch-up (none while the queues are paused): the catch-up's rate leaves them out.
    const syncedBeforeCatchUp = Number((await progress()).synced);
    const before = await stage.services.requestCounts();
    const cpuBefore = cpuOf(await workerStats(w));
    const wall0 = Date.now();
    const tc = performance.now();
    const simNow = () => t0 + (Date.now() - wall0) * args.timeScale;
    ticker = setInterval(() => {
      const now = simNow();
      FileClock.write(clockFile, now);
      void stage.services.setClock(now).catch(() => undefined);
    }, 100);
    await Promise.all(
      due.map(async (s, i) => {
        await s.q.resume();
        if (s.accounts.size === ids.length) await s.q.promoteJobs({ count: 1000 });
        else await pool(partial[i]!, 16, (job) => job.promote());
      }),
    );
    const dueSyncs = due[0]!.accounts.size;
    const dueRefreshChecks = due[1]!.accounts.size;
    // The new posts a catch-up sync lists (under an hour down, not every account's sync is due).
    const toList = changes.filter((id) => due[0]!.accounts.has(id)).length;
    // Done: every account synced, every new post listed, and nothing left, not even a copy or a
    // publish waiting in the delayed set (the call pacer's, a retry's backoff).
    const noDelayed = [queue(QUEUE.mirrorMedia), queue(QUEUE.publishFeed)];
    const show = (p: { synced: string; listed: string }) =>
      process.stderr.write(
        `\r  catch-up: ${((performance.now() - tc) / 1000).toFixed(0)} s, ${p.synced} of ${dueSyncs} accounts synced, ${p.listed} of ${toList} new posts listed`,
      );
    if (!args.json)
      shower = setInterval(() => {
        void progress()
          .then(show)
          .catch(() => undefined);
      }, 5_000);
    const caughtUp = async (p: { synced: string; listed: string }) => {
      if (Number(p.synced) < dueSyncs || Number(p.listed) < toList) return false;
      for (const q of noDelayed) if ((await q.getJobCounts('delayed')).delayed) return false;
      return true;
    };
    // Until caught up (twice in a row, nothing running), the limit, or a stall: nothing queued,
    // running or delayed for two minutes while accounts are still to sync, which no catch-up
    // leaves on its own (a schedule of an account taken back to its slot after it was made due).
    const stopAt = performance.now() + (args.limitMinutes ?? 4 * 60) * MINUTE;
    let idleSince: number | undefined;
    let quiet = 0;
    while (quiet < 2) {
      if (performance.now() > stopAt) {
        if (args.limitMinutes === undefined) throw new Error('bench: the catch-up did not finish in 4 hours');
        break;
      }
      await delay(250);
      if ((await busyJobs(queues)) > 0) {
        quiet = 0;
        idleSince = undefined;
        continue;
      }
      const p = await progress();
      if (await caughtUp(p)) {
        quiet++;
        continue;
      }
      quiet = 0;
      const delayed = (await Promise.all(noDelayed.map((q) => q.getJobCounts('delayed')))).some((c) => c.delayed);
      if (delayed) idleSince = undefined;
      else if ((idleSince ??= performance.now()) < performance.now() - 2 * MINUTE)
        throw new Error(await stalled(stage, queue(QUEUE.feedSync), new Date(t0), dueSyncs));
    }
    const finished = quiet >= 2;
    if (shower) {
      clearInterval(shower);
      shower = undefined;
      show(await progress());
      process.stderr.write('\n');
    }
    const seconds = (performance.now() - tc) / 1000;
    const simEnd = simNow();
    clearInterval(ticker);
    ticker = undefined;
    const after = await stage.services.requestCounts();
    const atEnd = await workerStats(w, false);
    const edge = (k: string) => (after.graphByEdge[k] ?? 0) - (before.graphByEdge[k] ?? 0);
    const since = new Date(t0);
    // Simulated instants back to wall seconds after the catch-up began.
    const wallSeconds = (simMs: number | null) => (simMs === null ? null : (simMs - t0) / args.timeScale / 1000);
    const sim = (
      await stage.db.query<{
        synced: string | null;
        copied: string | null;
        published: string | null;
        sync_runs: string;
        failed_syncs: string;
        republished: string;
        dead_feeds: string;
        renewed_seeded: string;
        renewed_new: string;
        new_copies: string;
        recopied: string;
      }>(
        `SELECT (SELECT extract(epoch FROM max(last_sync_at)) * 1000 FROM accounts) AS synced,
                (SELECT extract(epoch FROM max(c.copied_at)) * 1000 FROM media_copies c JOIN posts p USING (account_id, media_id)
                  WHERE p.first_seen_at >= $1) AS copied,
                (SELECT extract(epoch FROM max(published_at)) * 1000 FROM feed_publications WHERE published_at >= $1) AS published,
                (SELECT count(*) FROM sync_runs WHERE at >= $1) AS sync_runs,
                (SELECT count(*) FROM accounts WHERE last_sync_at >= $1 AND last_sync_error IS NOT NULL) AS failed_syncs,
                (SELECT count(*) FROM feed_publications WHERE published_at >= $1) AS republished,
                (SELECT count(*) FROM feed_publications WHERE earliest_oe < $2) AS dead_feeds,
                (SELECT count(*) FROM posts WHERE first_seen_at < $1 AND earliest_oe >= $3) AS renewed_seeded,
                (SELECT count(*) FROM posts WHERE first_seen_at >= $1 AND earliest_oe >= $3) AS renewed_new,
                (SELECT count(*) FROM media_copies c JOIN posts p USING (account_id, media_id)
                  WHERE p.first_seen_at >= $1) AS new_copies,
                (SELECT count(*) FROM media_copies c JOIN posts p USING (account_id, media_id)
                  WHERE p.first_seen_at < $1 AND c.copied_at >= $1) AS recopied`,
        // A link renewed after the restart dies at t0 + linkMs or later (oe in whole seconds).
        [since, new Date(simEnd), new Date(Math.floor((t0 + linkMs) / 1000) * 1000)],
      )
    ).rows[0]!;
    const num = (v: string | null) => (v === null ? null : Number(v));
    // Each new post's copies against its link's original deadline: posted at post.timestamp,
    // dead linkDays later. first_seen_at: when the worker first listed the post (its account's
    // catch-up sync), on the same clock. A post found after its link died could not have been
    // copied in time by any order of copies; one found before could.
    const { rows: copied } = await stage.db.query<{
      account_id: string;
      copied_at: Date;
      post: unknown;
      raw: Buffer | null;
      first_seen_at: Date;
      earliest_oe: Date | null;
    }>(
      `SELECT c.account_id, c.copied_at, p.post, p.raw, p.first_seen_at, p.earliest_oe FROM media_copies c JOIN posts p USING (account_id, media_id)
        WHERE p.first_seen_at >= $1`,
      [since],
    );
    const rows = copied.map((r) => {
      const post = unpackPost(r) as Post;
      return { ...r, posted: post.publishedAt, video: post.media.some((m) => !isImageMime(m.mime)) };
    });
    let deadBeforeRestart = 0;
    let late = 0;
    let inTime = 0;
    let lateFoundInTime = 0;
    let foundAfterDeadline = 0;
    const slack: number[] = [];
    const lateDeadlineMinutesAfterRestart: number[] = [];
    // For each copy found in time yet made late: how long its link had left when its account's
    // sync listed it, and how long after the deadline the copy was made (simulated seconds).
    const lateFoundInTimeSeconds: Array<{ leftWhenFound: number; lateBy: number; renewedBySync: boolean }> = [];
    // Of those, the ones copied from links their own sync had renewed (R-MED-8): a post with a
    // video whose links die within a day is renewed when it is listed (its cover frame's link
    // with it), so its copy waits its turn behind the new deadline, never on a dead link. Only
    // the rest were copied after the link they were copied from had died.
    let lateFoundInTimeRenewedBySync = 0;
    for (const r of rows) {
      const deadline = Date.parse(r.posted) + linkMs;
      if (deadline <= t0) {
        deadBeforeRestart++;
        continue;
      }
      const foundInTime = r.first_seen_at.getTime() < deadline;
      if (!foundInTime) foundAfterDeadline++;
      if (r.copied_at.getTime() > deadline) {
        late++;
        if (foundInTime) {
          lateFoundInTime++;
          // Renewed when listed: the link the post holds now was signed at its sync (within the
          // sync's own run), long before the copy; a copy that renewed its own link signed it
          // just before it was made.
          const signedAt = r.earliest_oe ? r.earliest_oe.getTime() - linkMs : null;
          const renewedBySync =
            r.video &&
            signedAt !== null &&
            signedAt > deadline - linkMs &&
            signedAt - r.first_seen_at.getTime() < r.copied_at.getTime() - signedAt;
          if (renewedBySync) lateFoundInTimeRenewedBySync++;
          lateFoundInTimeSeconds.push({
            leftWhenFound: Math.round((deadline - r.first_seen_at.getTime()) / 1000),
            lateBy: Math.round((r.copied_at.getTime() - deadline) / 1000),
            renewedBySync,
          });
        }
        lateDeadlineMinutesAfterRestart.push(Math.round((deadline - t0) / MINUTE));
      } else inTime++;
      slack.push((deadline - r.copied_at.getTime()) / HOUR);
    }
    slack.sort((a, b) => a - b);
    // New posts alive at the restart whose link died before the catch-up's end without a copy of
    // theirs made in time (counted per post from what the simulator published; a stopped catch-up
    // has not copied every post yet, and these are late whatever comes next).
    const copiedInTime = new Set(
      rows
        .filter((r) => r.copied_at.getTime() <= Date.parse(r.posted) + linkMs)
        .map((r) => `${r.account_id}|${Math.floor(Date.parse(r.posted) / 1000)}`),
    );
    let diedInCatchUp = 0;
    let diedUncopied = 0;
    changes.forEach((id, i) => {
      const deadline = at[i]! + linkMs;
      if (deadline <= t0 || deadline > simEnd) return;
      diedInCatchUp++;
      if (!copiedInTime.has(`${id}|${Math.floor(at[i]! / 1000)}`)) diedUncopied++;
    });
    const failed = (await Promise.all(queues.map((q) => q.getJobCounts('failed')))).reduce(
      (a, c) => a + (c.failed ?? 0),
      0,
    );
    const cpuSeconds = cpuOf(atEnd) - cpuBefore;
    const syncRuns = Number(sim.sync_runs) - syncsDuringStart;
    const untilAllSynced = wallSeconds(num(sim.synced))!;
    const accountsSynced = Number((await progress()).synced);
    // A stopped catch-up: its pace over the window, and when it would have synced every account.
    const accountsSyncedPerSecond = (accountsSynced - syncedBeforeCatchUp) / (finished ? untilAllSynced : seconds);
    const result = {
      accounts: args.accounts,
      /** False: stopped at --catch-up-limit-minutes with work left (rates are over the window). */
      finished,
      postsMean: args.posts ?? args.meanPosts,
      downDays: args.downDays,
      downHours: downMs / HOUR,
      linkDays: args.linkDays,
      timeScale: args.timeScale,
      seeded: {
        posts: seeded.posts,
        postsPerAccount: seeded.posts / args.accounts,
        images: seeded.images,
        videoPosts: seeded.videoPosts,
        seconds: seeded.seconds.total,
        setupSeconds,
      },
      start,
      catchUp: {
        /** Schedules that came due during the downtime, made due at once. */
        dueSyncs,
        dueRefreshChecks,
        /** Wall seconds from the catch-up's start until nothing was left to do. */
        seconds,
        simulatedHours: (seconds * args.timeScale) / 3600,
        /** Wall seconds until the last account's catch-up sync, the last new image copied, the last feed published. */
        untilAllSyncedSeconds: untilAllSynced,
        untilAllNewImagesCopiedSeconds: wallSeconds(num(sim.copied)),
        untilAllPublishedSeconds: wallSeconds(num(sim.published)),
        accountsSyncedPerSecond,
        /** Accounts synced since the restart when the count stopped (syncedBeforeCatchUp included). */
        accountsSynced,
        /** Wall seconds to sync every due account: measured, or projected at the window's pace. */
        secondsToSyncAll: finished ? untilAllSynced : (dueSyncs - syncedBeforeCatchUp) / accountsSyncedPerSecond,
        /** Accounts synced during the worker's start (their slot came in Redis's time): not in the rate. */
        syncedBeforeCatchUp,
        newImagesCopiedPerSecond: Number(sim.new_copies) / seconds,
        syncRuns,
        syncsPerSecond: syncRuns / seconds,
        failedSyncs: Number(sim.failed_syncs),
        /** The worker's CPU from the catch-up's start to its end (its start excluded). */
        workerCpuSeconds: cpuSeconds,
        workerCpuMsPerAccount: (1000 * cpuSeconds) / Math.max(1, finished ? args.accounts : accountsSynced),
        workerCpuMsPerSync: (1000 * cpuSeconds) / Math.max(1, syncRuns),
        listingCalls: edge('media'),
        childrenCalls: edge('children'),
        singleMediaReads: edge('{id}'),
        tokenRefreshCalls: edge('refresh_access_token'),
      },
      /** Alias of catchUp.seconds (the figure's name before the catch-up had its own section). */
      catchUpSeconds: seconds,
      catchUpSimulatedHours: (seconds * args.timeScale) / 3600,
      newPosts: changes.length,
      copies: rows.length,
      imagesCopied: atEnd.mediaPuts,
      /** Images of the seeded posts copied again (0: their copies stand). */
      recopiedSeededImages: Number(sim.recopied),
      deadBeforeRestart,
      aliveAtRestart: inTime + late,
      copiedInTime: inTime,
      copiedAfterDeadline: late,
      /** Copies made after the first link's deadline, of posts the worker had found before it. */
      copiedAfterDeadlineFoundInTime: lateFoundInTime,
      /** Of those, copied from links their sync had renewed when it listed them (R-MED-8): in time for the link held. */
      copiedAfterDeadlineRenewedBySync: lateFoundInTimeRenewedBySync,
      /** The rest: copied after the link they held had died, though found in time (the order's fault; target 0). */
      copiedLateFoundInTime: lateFoundInTime - lateFoundInTimeRenewedBySync,
      /** Each of those: seconds its link had left when it was listed, and how late its copy came. */
      lateFoundInTimeSeconds: lateFoundInTimeSeconds.sort((a, b) => a.leftWhenFound - b.leftWhenFound),
      /** New posts alive at the restart whose link died during the catch-up with no copy made in time. */
      postsDiedInCatchUp: diedInCatchUp,
      postsDiedUncopied: diedUncopied,
      /** Posts whose link died before their account's catch-up sync found them. */
      foundAfterDeadline,
      lateDeadlineMinutesAfterRestart: lateDeadlineMinutesAfterRestart.sort((a, b) => a - b),
      /** Simulated minutes from the restart until every account had been listed once. */
      allListedAfterMinutes: (untilAllSynced * args.timeScale) / 60,
      minSlackHours: slack[0] ?? null,
      feeds: {
        /** Accounts whose feed was published again in the catch-up. */
        republished: Number(sim.republished),
        feedWrites: atEnd.feedPuts,
        /** Seeded posts whose links the catch-up renewed (their videos' links, R-MED-8). */
        videoPostsRenewed: Number(sim.renewed_seeded),
        seededVideoPosts: seeded.videoPosts,
        /** New posts whose links were renewed before their images were copied (dead at the copy). */
        newPostsRenewed: Number(sim.renewed_new),
        /** Feeds published with a link dead at the catch-up's end (target 0). */
        publishedWithDeadLinks: Number(sim.dead_feeds),
      },
      /** Single-media reads in the catch-up (video renewals and renewals before a copy). */
      renewals: edge('{id}'),
      newImages: Number(sim.new_copies),
      workerPeakRssMb: atEnd.maxRssMb,
      failedJobs: failed,
      totalSeconds: (performance.now() - started) / 1000,
      node: process.version,
    };
    const c = result.catchUp;
    const f = result.feeds;
    if (!finished)
      say(
        `catch-up stopped after ${seconds.toFixed(0)} s (--catch-up-limit-minutes ${args.limitMinutes}): ${accountsSynced} of ${dueSyncs} accounts synced (${syncedBeforeCatchUp} of them during the start) = ` +
          `${accountsSyncedPerSecond.toFixed(1)} accounts/s, all of them in ${(c.secondsToSyncAll / 60).toFixed(0)} minutes at that pace; ` +
          `${result.newImages} new images copied = ${c.newImagesCopiedPerSecond.toFixed(1)}/s; worker CPU ${cpuSeconds.toFixed(1)} s = ${c.workerCpuMsPerAccount.toFixed(1)} ms per account synced; ` +
          `${diedInCatchUp} new posts' links died in the window, ${diedUncopied} of them without a copy made in time`,
      );
    else
      say(
        `catch-up: ${dueSyncs} accounts synced in ${untilAllSynced.toFixed(1)} s = ${c.accountsSyncedPerSecond.toFixed(1)} accounts/s; ` +
          `${syncRuns} syncs and ${dueRefreshChecks} refresh checks (${c.tokenRefreshCalls} token refreshes), all done in ${seconds.toFixed(1)} s ` +
          `(${result.catchUpSimulatedHours.toFixed(1)} simulated hours) = ${c.syncsPerSecond.toFixed(1)} syncs/s; ` +
          `every new image copied after ${(c.untilAllNewImagesCopiedSeconds ?? 0).toFixed(1)} s, every feed published after ${(c.untilAllPublishedSeconds ?? 0).toFixed(1)} s; ` +
          `worker CPU ${cpuSeconds.toFixed(1)} s = ${c.workerCpuMsPerAccount.toFixed(1)} ms per account, ${c.workerCpuMsPerSync.toFixed(1)} ms per sync (start excluded); ${c.failedSyncs} failed syncs`,
      );
    say(
      `copies: ${result.newImages} images of ${changes.length} new posts; ${deadBeforeRestart} had links already dead at the restart; of the ${inTime + late} alive at the restart, ` +
        `${late} were copied after their deadline: ${foundAfterDeadline} were found (listed) only after it, ${lateFoundInTime} found in time ` +
        `(${lateFoundInTimeRenewedBySync} of them copied from links their sync had renewed; ${result.copiedLateFoundInTime} copied after the link they held had died, target 0${
          lateFoundInTimeSeconds.length
            ? `; their links had ${lateFoundInTimeSeconds[0]!.leftWhenFound}-${lateFoundInTimeSeconds.at(-1)!.leftWhenFound} s left when listed`
            : ''
        }); ` +
        (finished
          ? `every account listed ${result.allListedAfterMinutes.toFixed(0)} simulated minutes after the restart; `
          : 'stopped before every account was listed; ') +
        `${result.recopiedSeededImages} seeded images copied again`,
    );
    say(
      `feeds: ${f.republished} of ${args.accounts} published again (${f.feedWrites} writes); ${f.videoPostsRenewed} of ${f.seededVideoPosts} seeded video posts had their links renewed, ` +
        `${f.newPostsRenewed} new posts renewed before a copy (${result.renewals} single-media reads in all); ${f.publishedWithDeadLinks} feeds left with a dead link (target 0${finished ? '' : '; stopped: not every feed reached yet'})`,
    );
    say(
      `worker peak RSS ${result.workerPeakRssMb.toFixed(0)} MB (${start.peakRssMb.toFixed(0)} MB after its start); ${failed} failed jobs; run took ${(result.totalSeconds / 60).toFixed(1)} minutes`,
    );
    return result;
  } finally {
    if (ticker) clearInterval(ticker);
    if (shower) clearInterval(shower);
    await worker?.close().catch(() => undefined);
    for (const q of queues) await q.close().catch(() => undefined);
    await stage.cleanup();
  }
}
