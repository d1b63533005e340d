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
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { Job, QueueEvents, type Queue } from 'bullmq';
import type pg from 'pg';
import { loadConfig, type Config } from '../src/config.ts';
import { convertItems } from '../src/convert/convert-item.ts';
import { buildAccountFeed } from '../src/feeds/publish.ts';
import { contentHash, imageSlots } from '../src/feeds/slots.ts';
import { PlatformClient } from '../src/platform/client.ts';
import { earliestExpiry } from '../src/platform/links.ts';
import { createStorage, type ObjectStorage, type S3Storage } from '../src/storage/index.ts';
import { getAccount, markSynced, upsertAccount } from '../src/store/accounts.ts';
import { TokenCipher } from '../src/store/crypto.ts';
import { createPool } from '../src/store/db.ts';
import { migrate } from '../src/store/migrate.ts';
import { saveFeedPublication, saveMediaCopy, upsertPosts } from '../src/store/posts.ts';
import { saveToken } from '../src/store/tokens.ts';
import { DAY, HOUR, MINUTE } from '../src/util/clock.ts';
import { bullConnection, createQueue, QUEUE, redisClient } from '../jobs/queues.ts';
import { scheduleAccount } from '../jobs/catalogue.ts';
import { S3RVER_CREDENTIALS } from '../test/support/s3.ts';
import { forkChild, type ChildHandle } from './ipc.ts';
import { startServicesChild, type ServicesChild } from './services-child.ts';
import { benchDatabase, benchRedis, cleanupStack, clearBenchRedis } from './services.ts';
import type { WorkerStats } from './worker-process.ts';

export const SCALE_TARGETS = {
  cpuPercentOfOneCore: 25,
  p99LatenessSeconds: 60,
  redisBytesPerAccount: 20 * 1024,
  workerPeakRssMb: 300,
};

export interface ScaleArgs {
  accounts: number;
  posts: number;
  windowMinutes: number;
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

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
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
 * Accounts in the simulator and in Postgres, as an earlier sync left them: posts stored, every
 * image's copy recorded, the feed's publication recorded. Returns the accounts.
 */
export async function seedAccounts(
  stage: Stage,
  count: number,
  posts: number,
  opts: { prefix: string; now: Date; issuedAgoMs?: number; synced?: boolean },
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
  if (opts.synced === false) return accounts;
  const t1 = performance.now();
  await pool(accounts, 16, async (acc) => {
    const listing = await stage.platform.listMedia(acc.token, { pageSize: stage.config.PAGE_SIZE });
    const { posts: converted } = convertItems(listing.items, { copyrightItems: 'drop' });
    const byId = new Map(listing.items.map((i) => [i.id, i]));
    await upsertPosts(
      stage.db,
      acc.id,
      converted.map((post) => ({
        mediaId: post.id,
        post,
        contentHash: contentHash(post),
        earliestOe: earliestExpiry(byId.get(post.id)!) ?? null,
      })),
      opts.now,
    );
    for (const post of converted) {
      for (const s of imageSlots(post)) {
        await saveMediaCopy(stage.db, {
          accountId: acc.id,
          mediaId: post.id,
          slot: s.slot,
          sourceId: s.sourceId,
          key: `media/${acc.id}/${post.id}/${s.slot}-seeded.jpg`,
          width: 120,
          height: 150,
          bytes: 4000,
          contentType: 'image/jpeg',
          variants: [],
          placeholder: null,
          copiedAt: opts.now,
        });
      }
    }
    const account = (await getAccount(stage.db, acc.id))!;
    const built = await buildAccountFeed(stage.db, account, (k) => stage.storage.publicUrl(k), opts.now);
    await saveFeedPublication(stage.db, {
      accountId: acc.id,
      feedHash: built.hash,
      publishedAt: opts.now,
      postCount: built.feed.posts.length,
      demo: false,
      earliestOe: built.earliestOe,
    });
    await markSynced(stage.db, acc.id, opts.now, {});
  });
  say(
    `  their earlier sync (posts, copies, published feeds) recorded: ${((performance.now() - t1) / 1000).toFixed(0)} s`,
  );
  return accounts;
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
    let busy = 0;
    for (const q of queues) {
      const c = await q.getJobCounts('waiting', 'active', 'prioritized', 'waiting-children');
      busy += Object.values(c).reduce((a, b) => a + b, 0);
    }
    quiet = busy === 0 && (await extra()) ? quiet + 1 : 0;
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

/** The soak: `npm run bench -- --scale 10000 [--window-minutes 10] [--json]`. */
export async function runScale(args: ScaleArgs, say: Say): Promise<Record<string, unknown>> {
  const started = performance.now();
  say(
    `feedmirror bench --scale ${args.accounts}: ${args.posts} posts per account, one worker process, a ${args.windowMinutes}-minute real-time window`,
  );
  const stage = await openStage({ wallClock: true });
  const memory: MemoryPoint[] = [];
  let worker: ChildHandle<{ pid: number }> | undefined;
  const queues = FEED_QUEUES.map((name) => createQueue(name, stage.redis));
  const events: QueueEvents[] = [];
  try {
    say('set-up:');
    const accounts = await seedAccounts(stage, args.accounts, args.posts, { prefix: 'scale', now: new Date() }, say);
    const ids = accounts.map((a) => a.id);
    const setupSeconds = (performance.now() - started) / 1000;

    // ---- catch-up: the worker starts; every account's schedules are new, so each is due now ----
    const catchUpStart = new Date();
    const t0 = performance.now();
    worker = await startWorkerProcess(stage, 'bench worker');
    const w = worker;
    let phaseNow = 'catch-up';
    const sampler = setInterval(() => {
      void workerStats(w)
        .then((s) => memory.push({ atSeconds: (performance.now() - started) / 1000, rssMb: s.rssMb, phase: phaseNow }))
        .catch(() => undefined);
    }, 5_000);
    const syncedSince = async (since: Date) =>
      Number(
        (await stage.db.query<{ n: string }>('SELECT count(*) AS n FROM accounts WHERE last_sync_at >= $1', [since]))
          .rows[0]!.n,
      );
    const startedSeconds = (performance.now() - t0) / 1000;
    await untilQuiet(queues, async () => (await syncedSince(catchUpStart)) >= args.accounts, 60 * MINUTE);
    const catchUpSeconds = (performance.now() - t0) / 1000;
    const catchUpSyncs = await syncedSince(catchUpStart);
    const atCatchUp = await workerStats(w);
    const catchUpCpu = atCatchUp.cpuUserS + atCatchUp.cpuSystemS;
    const catchUp = {
      syncs: catchUpSyncs,
      seconds: catchUpSeconds,
      syncsPerSecond: catchUpSyncs / catchUpSeconds,
      workerStartSeconds: startedSeconds,
      workerCpuSeconds: catchUpCpu,
      workerCpuMsPerSync: (1000 * catchUpCpu) / Math.max(1, catchUpSyncs),
      peakRssMb: atCatchUp.phasePeakRssMb,
    };
    say(
      `catch-up (every account due at once, as at a worker's start): ${catchUpSyncs} syncs in ${catchUpSeconds.toFixed(0)} s = ${catchUp.syncsPerSecond.toFixed(1)} syncs/s ` +
        `(the worker's start, which schedules every account, took ${startedSeconds.toFixed(0)} s of it); worker CPU ${catchUpCpu.toFixed(1)} s = ${catchUp.workerCpuMsPerSync.toFixed(1)} ms per sync, start included`,
    );

    // ---- the window: schedules spread over the hour; 1%/h of accounts change, 0.5%/h fail ----
    phaseNow = 'window';
    const lateness: number[] = [];
    const seen = new Set<string>();
    let windowSyncs = 0;
    let windowRefreshChecks = 0;
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
          if (due < windowStart) return; // a catch-up straggler, not a job of the window
          lateness.push(Math.max(0, job.processedOn - due) / 1000);
          if (name === QUEUE.feedSync) windowSyncs++;
          else windowRefreshChecks++;
        });
      });
      await qe.waitUntilReady();
    }
    const before = await workerStats(w);
    const changed: string[] = [];
    const failed: string[] = [];
    const windowMs = args.windowMinutes * MINUTE;
    const tickMs = 10_000;
    const perTick = (ratePerHour: number) => (args.accounts * ratePerHour * tickMs) / HOUR;
    let changeDebt = 0;
    let failDebt = 0;
    const pick = () => ids[Math.floor(Math.random() * ids.length)]!;
    while (Date.now() - windowStart < windowMs) {
      await delay(Math.min(tickMs, windowMs - (Date.now() - windowStart)));
      changeDebt += perTick(0.01);
      failDebt += perTick(0.005);
      const c: string[] = [];
      const f: string[] = [];
      for (; changeDebt >= 1; changeDebt--) c.push(pick());
      for (; failDebt >= 1; failDebt--) f.push(pick());
      if (c.length) await stage.services.change(c);
      if (f.length) await stage.services.fail(f);
      changed.push(...c);
      failed.push(...f);
      if (!args.json)
        process.stderr.write(
          `\r  window: ${((Date.now() - windowStart) / 1000).toFixed(0)} s of ${windowMs / 1000}, ${windowSyncs} syncs started`,
        );
    }
    if (!args.json) process.stderr.write('\n');
    const after = await workerStats(w);
    const windowSeconds = (Date.now() - windowStart) / 1000;
    const cpuSeconds = after.cpuUserS + after.cpuSystemS - (before.cpuUserS + before.cpuSystemS);
    const cpuPercentOfOneCore = (100 * cpuSeconds) / windowSeconds;
    const sorted = [...lateness].sort((a, b) => a - b);
    const copiesInWindow = after.mediaPuts - before.mediaPuts;
    clearInterval(sampler);

    // ---- the whole run's footprint ----
    const redisUse = await redisBytes(stage.redis);
    const dbBytes = Number(
      (await stage.db.query<{ n: string }>('SELECT pg_database_size(current_database()) AS n')).rows[0]!.n,
    );
    const failedJobs = Number((await queues[0]!.getJobCounts('failed')).failed ?? 0);
    const result = {
      accounts: args.accounts,
      postsPerAccount: args.posts,
      windowMinutes: args.windowMinutes,
      cpuPercentOfOneCore,
      p50LatenessSeconds: percentile(sorted, 50),
      p99LatenessSeconds: percentile(sorted, 99),
      maxLatenessSeconds: sorted.at(-1) ?? 0,
      redisBytesPerAccount: redisUse.bytes / args.accounts,
      redisKeys: redisUse.keys,
      postgresBytesPerAccount: (dbBytes - stage.emptyDbBytes) / args.accounts,
      postgresBytes: dbBytes,
      workerPeakRssMb: after.maxRssMb,
      workerAtPeak: after.atPeak,
      catchUpSyncsPerSecond: catchUp.syncsPerSecond,
      catchUp,
      window: {
        seconds: windowSeconds,
        syncsStarted: windowSyncs,
        refreshChecksStarted: windowRefreshChecks,
        accountsChanged: changed.length,
        accountsFailing: failed.length,
        imagesCopied: copiesInWindow,
        workerCpuSeconds: cpuSeconds,
        failedSyncJobs: failedJobs,
      },
      setupSeconds,
      totalSeconds: (performance.now() - started) / 1000,
      memory,
      node: process.version,
    };
    const t = SCALE_TARGETS;
    say(
      `window (${windowSeconds.toFixed(0)} s): ${windowSyncs} syncs and ${windowRefreshChecks} refresh checks started; ${changed.length} accounts changed (${copiesInWindow} images copied), ` +
        `${failed.length} failing; worker CPU ${cpuSeconds.toFixed(1)} s`,
    );
    say(
      `footprint: Redis ${(redisUse.bytes / 1e6).toFixed(1)} MB in ${redisUse.keys} keys; PostgreSQL ${(dbBytes / 1e6).toFixed(1)} MB (empty schema ${(stage.emptyDbBytes / 1e6).toFixed(1)} MB)`,
    );
    say('targets:');
    say(
      `  ${cpuPercentOfOneCore < t.cpuPercentOfOneCore ? 'PASS' : 'MISS'} worker CPU ${cpuPercentOfOneCore.toFixed(1)}% of one core (target < ${t.cpuPercentOfOneCore}%)`,
    );
    say(
      `  ${result.p99LatenessSeconds < t.p99LatenessSeconds ? 'PASS' : 'MISS'} start lateness p50 ${result.p50LatenessSeconds.toFixed(2)} s, p99 ${result.p99LatenessSeconds.toFixed(2)} s (target p99 < ${t.p99LatenessSeconds} s; ${sorted.length} jobs)`,
    );
    say(
      `  ${result.redisBytesPerAccount < t.redisBytesPerAccount ? 'PASS' : 'MISS'} Redis ${(result.redisBytesPerAccount / 1024).toFixed(1)} KB per account (target < 20 KB)`,
    );
    say(
      `  ${result.workerPeakRssMb < t.workerPeakRssMb ? 'PASS' : 'MISS'} worker peak RSS ${result.workerPeakRssMb.toFixed(0)} MB (target < ${t.workerPeakRssMb} MB; at the sampled peak ` +
        `V8 heap ${after.atPeak.heapUsed.toFixed(0)} of ${after.atPeak.heapTotal.toFixed(0)} MB, external ${after.atPeak.external.toFixed(0)} MB, the rest native)`,
    );
    say(
      `  ---- PostgreSQL ${(result.postgresBytesPerAccount / 1024).toFixed(1)} KB per account; catch-up ${result.catchUpSyncsPerSecond.toFixed(1)} syncs/s (no target)`,
    );
    say(`run took ${(result.totalSeconds / 60).toFixed(1)} minutes`);
    return result;
  } finally {
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
        { prefix: `w${n}`, now: new Date(), issuedAgoMs: 31 * DAY, synced: false },
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

/**
 * Catch-up after downtime: `npm run bench -- --downtime N`. N accounts synced when the worker went
 * down; for `downDays` it stays down while each account gets new posts (their links signed when
 * posted, dying `linkDays` later). Then the worker starts. Time runs `timeScale` times faster than
 * the wall clock for the worker (a file clock) and the simulator alike, so links die during the
 * catch-up as they would. Reports copies made after their link's deadline: those whose deadline
 * had passed before the restart can only be renewed first (R-LNK-3, R-MED-8); of the others, the
 * target is none late (R-LNK-5: soonest deadline first).
 */
export async function runDowntime(
  args: { accounts: number; posts: number; newPosts: number; downDays: number; linkDays: number; timeScale: number },
  say: Say,
): Promise<Record<string, unknown>> {
  const linkMs = args.linkDays * DAY;
  const tDown = Date.UTC(2026, 5, 1, 12);
  const t0 = tDown + args.downDays * DAY;
  say(
    `feedmirror bench --downtime ${args.accounts}: worker down ${args.downDays} days; ${args.newPosts} new posts per account meanwhile; links live ${args.linkDays} days; ` +
      `time runs ${args.timeScale}x the wall clock after the restart`,
  );
  const stage = await openStage({ wallClock: false, startMs: tDown, linkLifetimeMs: linkMs });
  const { mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { FileClock } = await import('../src/util/clock.ts');
  const clockFile = join(mkdtempSync(join(tmpdir(), 'fm-bench-clock-')), 'now');
  FileClock.write(clockFile, tDown);
  const queues = FEED_QUEUES.map((name) => createQueue(name, stage.redis));
  let worker: ChildHandle<{ pid: number }> | undefined;
  let ticker: NodeJS.Timeout | undefined;
  try {
    const accounts = await seedAccounts(
      stage,
      args.accounts,
      args.posts,
      { prefix: 'down', now: new Date(tDown) },
      say,
    );
    // The downtime: new posts at random moments (their links are signed then).
    const changes: string[] = [];
    const at: number[] = [];
    for (const a of accounts) {
      for (let k = 0; k < args.newPosts; k++) {
        changes.push(a.id);
        at.push(tDown + Math.floor(Math.random() * (t0 - tDown)));
      }
    }
    for (let i = 0; i < changes.length; i += 2000)
      await stage.services.change(changes.slice(i, i + 2000), at.slice(i, i + 2000));
    const before = await stage.services.requestCounts();
    // The restart: both clocks at t0, then running timeScale times faster than the wall clock.
    await stage.services.setClock(t0);
    FileClock.write(clockFile, t0);
    const wall0 = Date.now();
    const simNow = () => t0 + (Date.now() - wall0) * args.timeScale;
    ticker = setInterval(() => {
      const now = simNow();
      FileClock.write(clockFile, now);
      void stage.services.setClock(now).catch(() => undefined);
    }, 100);
    const tStart = performance.now();
    worker = await startWorkerProcess(stage, 'bench worker', { BENCH_CLOCK_FILE: clockFile });
    const newCopies = async () =>
      Number(
        (
          await stage.db.query<{ n: string }>('SELECT count(*) AS n FROM media_copies WHERE copied_at >= $1', [
            new Date(t0),
          ])
        ).rows[0]!.n,
      );
    await untilQuiet(queues, async () => (await newCopies()) >= changes.length, 60 * MINUTE);
    const seconds = (performance.now() - tStart) / 1000;
    clearInterval(ticker);
    ticker = undefined;
    const after = await stage.services.requestCounts();
    // Each copy against its link's original deadline: posted at post.timestamp, dead linkDays later.
    // first_seen_at: when the worker first listed the post (its account's catch-up sync), on
    // the same clock. A post found after its link died could not have been copied in time by any
    // order of copies; one found before could.
    const { rows } = await stage.db.query<{ copied_at: Date; posted: string; first_seen_at: Date }>(
      `SELECT c.copied_at, p.post->>'publishedAt' AS posted, p.first_seen_at FROM media_copies c JOIN posts p USING (account_id, media_id) WHERE c.copied_at >= $1`,
      [new Date(t0)],
    );
    let deadBeforeRestart = 0;
    let late = 0;
    let inTime = 0;
    let lateFoundInTime = 0;
    let foundAfterDeadline = 0;
    const slack: number[] = [];
    const lateDeadlineMinutesAfterRestart: number[] = [];
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
        if (foundInTime) lateFoundInTime++;
        lateDeadlineMinutesAfterRestart.push(Math.round((deadline - t0) / MINUTE));
      } else inTime++;
      slack.push((deadline - r.copied_at.getTime()) / HOUR);
    }
    const lastSync = Number(
      (await stage.db.query<{ n: string }>('SELECT extract(epoch FROM max(last_sync_at)) * 1000 AS n FROM accounts'))
        .rows[0]!.n,
    );
    const renewals = (after.graphByEdge['{id}'] ?? 0) - (before.graphByEdge['{id}'] ?? 0);
    const failed = (await Promise.all(queues.map((q) => q.getJobCounts('failed')))).reduce(
      (a, c) => a + (c.failed ?? 0),
      0,
    );
    slack.sort((a, b) => a - b);
    const result = {
      accounts: args.accounts,
      downDays: args.downDays,
      linkDays: args.linkDays,
      timeScale: args.timeScale,
      newPosts: changes.length,
      copies: rows.length,
      deadBeforeRestart,
      renewals,
      aliveAtRestart: inTime + late,
      copiedInTime: inTime,
      copiedAfterDeadline: late,
      /** Late copies of posts the worker had found before their deadline: the order's fault (target 0). */
      copiedAfterDeadlineFoundInTime: lateFoundInTime,
      /** Posts whose link died before their account's catch-up sync found them. */
      foundAfterDeadline,
      lateDeadlineMinutesAfterRestart: lateDeadlineMinutesAfterRestart.sort((a, b) => a - b),
      /** Simulated minutes from the restart until every account had been listed once. */
      allListedAfterMinutes: (lastSync - t0) / MINUTE,
      minSlackHours: slack[0] ?? null,
      catchUpSeconds: seconds,
      catchUpSimulatedHours: (seconds * args.timeScale) / 3600,
      failedJobs: failed,
      node: process.version,
    };
    say(
      `catch-up: ${rows.length} images copied in ${seconds.toFixed(0)} s (${result.catchUpSimulatedHours.toFixed(1)} simulated hours); ${deadBeforeRestart} had links already dead at the restart ` +
        `(${renewals} single-media renewals); of the ${inTime + late} alive at the restart, ${late} were copied after their deadline: ${foundAfterDeadline} were found (listed) only after it, ` +
        `${lateFoundInTime} found in time yet copied late (target 0); every account listed ${result.allListedAfterMinutes.toFixed(0)} simulated minutes after the restart; ${failed} failed jobs`,
    );
    return result;
  } finally {
    if (ticker) clearInterval(ticker);
    await worker?.close().catch(() => undefined);
    for (const q of queues) await q.close().catch(() => undefined);
    await stage.cleanup();
  }
}
