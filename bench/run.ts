/**
 * `npm run bench`: the feed pipeline's throughput, cost and memory. Not a test:
 * it prints measurements and PASS/MISS per target, and never fails on a miss.
 *
 *   node --import tsx bench/run.ts [--accounts 20] [--posts 50] [--concurrency 4] [--no-limit] [--json]
 *
 * N accounts x M posts on the platform simulator, copied into S3 through s3rver by the real
 * pipeline: the BullMQ flow and workers `feedmirror worker` runs (feed-sync -> mirror-media
 * children -> publish-feed parent), on the real Redis and a Postgres database of its own (created
 * here, dropped at the end). Then:
 *  - pass 2: the same syncs with nothing changed at the source (expected: listing calls only);
 *  - the limit: the same number of images through sharp (processImage) and the storage alone, at
 *    the same concurrency, from JPEG bytes already in memory (nothing downloaded).
 * Every figure is counted (simulator request record, storage puts, Postgres rows), none estimated.
 * Three processes: this one (set-up, queueing, counting, the limit phase), the pipeline's
 * (bench/pipeline-process.ts: the feed workers alone, so its RSS and CPU are the worker's own) and
 * the fake outside world's (bench/services-process.ts: simulator and s3rver). The fake CDN renders
 * every JPEG with sharp (~35 ms of CPU each, on the same cores): by default (--warm-cdn) every image
 * is fetched once, by the services process, before the clock starts, so the passes do not pay for
 * rendering a fake's images.
 */
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import type { Job, Queue } from 'bullmq';
import { loadConfig } from '../src/config.ts';
import { imageSlots } from '../src/feeds/slots.ts';
import { IMMUTABLE_CACHE_CONTROL, mirrorLimitsFromConfig } from '../src/mirror/copy.ts';
import { processImage } from '../src/mirror/image.ts';
import { PlatformClient } from '../src/platform/client.ts';
import { createStorage, type S3Storage } from '../src/storage/index.ts';
import { mediaItemSchema } from '../src/platform/media-item.ts';
import { upsertAccount } from '../src/store/accounts.ts';
import { TokenCipher } from '../src/store/crypto.ts';
import { createPool } from '../src/store/db.ts';
import { migrate } from '../src/store/migrate.ts';
import { listPosts } from '../src/store/posts.ts';
import { saveToken } from '../src/store/tokens.ts';
import { DAY, ManualClock } from '../src/util/clock.ts';
import { createQueue, QUEUE } from '../jobs/queues.ts';
import { S3RVER_CREDENTIALS } from '../test/support/s3.ts';
import { forkChild } from './ipc.ts';
import type { PipelineStats } from './pipeline-process.ts';
import { startServicesChild, type RequestCounts } from './services-child.ts';
import { benchDatabase, benchRedis, cleanupStack, interrupted } from './services.ts';
import { MemorySampler } from './memory.ts';
import { autoMirrorConcurrency } from '../src/mirror/concurrency.ts';
import { writeChart, writeMemoryChart } from './chart.ts';
import { quietNodeVersionWarning } from '../bin/quiet-node-warning.js';
import { cpuSince, cpuSnapshot } from './machine-cpu.ts';
import { redisClient } from '../jobs/queues.ts';

quietNodeVersionWarning({ silent: true });

const positive = (name: string) =>
  z.coerce
    .number({ error: `--${name} must be a number` })
    .int(`--${name} must be a whole number`)
    .positive(`--${name} must be > 0`);
const argsSchema = z.object({
  accounts: positive('accounts').default(20),
  posts: positive('posts').default(50),
  /** Image copies at once; default from the cores and sharp's thread pool (src/mirror/concurrency.ts). */
  concurrency: positive('concurrency').default(autoMirrorConcurrency()),
  /** Alternating pipeline/limit rounds at that concurrency; the share of the limit is their median. */
  rounds: positive('rounds').default(4),
  /** Concurrencies of the throughput curve (each a pipeline round and a limit round of its own); "" = none. */
  curve: z
    .string()
    .regex(/^(\d+(,\d+)*)?$/, '--curve must be a list like 1,2,4,8')
    .default('1,2,4,6,8,12'),
  /** Accounts per point of the curve. */
  'curve-accounts': positive('curve-accounts').default(2),
  json: z.boolean().default(false),
  'warm-cdn': z.boolean().default(true),
  /** --no-limit: skip the sharp+storage-alone phase (memory runs at large sizes; no fraction then). */
  limit: z.boolean().default(true),
  /** Sample images per encoding in the formats comparison (part of the limit phase). */
  'format-samples': positive('format-samples').default(24),
  /** --scale N: the soak at N accounts (bench/scale.ts) instead of the pipeline benchmark. */
  scale: positive('scale').optional(),
  /** The soak's real-time window; 10 minutes as the issue says, shorter for development. */
  'window-minutes': z.coerce
    .number({ error: '--window-minutes must be a number' })
    .positive('--window-minutes must be > 0')
    .default(10),
  /** The soak's realistic feeds: mean posts per account (truncated geometric over 1..100); --posts fixes it. */
  'posts-mean': z.coerce
    .number({ error: '--posts-mean must be a number' })
    .gt(1, '--posts-mean must be > 1')
    .lt(50.5, '--posts-mean must be < 50.5')
    .default(24),
  /** The soak's catch-up after an hour down is counted this long at most (all of it when shorter). */
  'catch-up-seconds': positive('catch-up-seconds').default(180),
  /** The seed of the soak's random feeds and events (the same seed draws the same run). */
  seed: positive('seed').default(1),
  /** --workers-compare N: N accounts' first sync by 1, then 2 worker processes on one Redis. */
  'workers-compare': positive('workers-compare').optional(),
  /** --downtime N: catch-up of N accounts after the worker was down (--down-days, --link-days, --time-scale). */
  downtime: positive('downtime').optional(),
  'down-days': z.coerce.number().positive('--down-days must be > 0').default(3),
  'link-days': z.coerce.number().positive('--link-days must be > 0').default(2),
  'time-scale': z.coerce.number().positive('--time-scale must be > 0').default(60),
  'new-posts': positive('new-posts').default(2),
  /** --verify: `feedmirror verify` against a bare listing of the same bucket (bench/verify.ts). */
  verify: z.boolean().default(false),
  /** --verify: objects in the bucket (accounts of 24 posts unless --accounts says otherwise). */
  objects: positive('objects').default(100_000),
  /** --downtime: count the catch-up this long at most (its rates over the window, the rest projected). */
  'catch-up-limit-minutes': positive('catch-up-limit-minutes').optional(),
  /** --chaos: the chaos soak (bench/chaos/run.ts) over --days simulated days and --accounts accounts. */
  chaos: z.boolean().default(false),
  days: z.coerce
    .number({ error: '--days must be a number' })
    .positive('--days must be > 0')
    .max(365, '--days must be at most 365')
    .optional(),
  /** --chaos: faults per simulated day, every kind at least once. */
  'faults-per-day': positive('faults-per-day').default(24),
  /** --chaos: where the history goes (default bench/results/chaos-seed-<seed>.history.jsonl). */
  history: z.string().min(1, '--history must name a file').optional(),
});

const TARGETS = { fractionOfLimit: 0.9, peakRssMb: 300, peakRssAt: { accounts: 500, posts: 50 } };
const DRAIN_TIMEOUT_MS = 4 * 60 * 60 * 1000;

const USAGE = `usage: npm run bench -- [options]      (npm run -s bench -- ... --json | jq  for the JSON alone)

The first-sync pipeline against sharp + storage alone (default):
  --accounts N          accounts of the measured rounds (20)
  --posts M             posts per account (50)
  --concurrency C       copies at once (auto from the cores and sharp's threads: ${autoMirrorConcurrency()})
  --rounds R            alternating pipeline/limit rounds; the share of the limit is their median (4)
  --curve 1,2,4         concurrencies of the throughput curve, "" for none (1,2,4,6,8,12)
  --curve-accounts K    accounts per point of the curve (2)
  --format-samples K    images per encoding in the formats comparison (24)
  --no-limit            skip the limit (no share of it then)
  --no-warm-cdn         let the fake CDN render images during the passes
The daily check against a bare listing of the same bucket (s3rver; --accounts N, else 24 posts each):
  --verify [--objects 100000] [--concurrency 16]
The scale benchmarks (tiny images; realistic feeds for --scale and --downtime, --posts M for M
posts each instead; --posts defaults to 2 for --workers-compare):
  --scale N [--window-minutes 10] [--posts-mean 24] [--catch-up-seconds 180] [--seed 1]
                                                        the soak: N accounts of realistic feeds on one
                                                        worker
  --downtime N [--down-days 3] [--link-days 2] [--time-scale 60] [--new-posts 2] [--posts-mean 24] [--seed 1]
      [--catch-up-limit-minutes M]                      catch-up after the worker was down (fractions
                                                        of days work: --down-days 0.0417 is an hour;
                                                        M: count M minutes at most, project the rest)
  --workers-compare N                                   the first sync by 1, then 2 workers
The chaos soak (bench/chaos/): two workers and serve against the simulator, faults from a seeded
schedule, an independent checker of the invariants; a history file to replay the seed:
  --chaos [--days 30] [--accounts 1000] [--seed 1] [--posts-mean 12] [--faults-per-day 24]
      [--history FILE]                                  exit 1 when any invariant was violated
Every run:
  --json                one JSON object on stdout (progress is then silent)
  -h, --help            this text

Needs PostgreSQL and Redis (DATABASE_URL, REDIS_URL; infra/ensure.sh starts local ones). Works in a
database and Redis prefix of its own (fm_bench_*, fmbench:*), removed at the end or on Ctrl-C.
`;

function parse() {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        help: { type: 'boolean', short: 'h' },
        accounts: { type: 'string' },
        posts: { type: 'string' },
        concurrency: { type: 'string' },
        'format-samples': { type: 'string' },
        json: { type: 'boolean' },
        'warm-cdn': { type: 'boolean' },
        'no-warm-cdn': { type: 'boolean' },
        'no-limit': { type: 'boolean' },
        scale: { type: 'string' },
        'window-minutes': { type: 'string' },
        'posts-mean': { type: 'string' },
        'catch-up-seconds': { type: 'string' },
        seed: { type: 'string' },
        rounds: { type: 'string' },
        curve: { type: 'string' },
        'workers-compare': { type: 'string' },
        downtime: { type: 'string' },
        'catch-up-limit-minutes': { type: 'string' },
        'down-days': { type: 'string' },
        'link-days': { type: 'string' },
        'time-scale': { type: 'string' },
        'new-posts': { type: 'string' },
        'curve-accounts': { type: 'string' },
        verify: { type: 'boolean' },
        objects: { type: 'string' },
        chaos: { type: 'boolean' },
        days: { type: 'string' },
        'faults-per-day': { type: 'string' },
        history: { type: 'string' },
      },
      strict: true,
    }));
  } catch (err) {
    // parseArgs says what is wrong in its message; no stack for a mistyped flag.
    process.stderr.write(`bench: ${(err as Error).message.split('\n')[0]}\n${USAGE}`);
    process.exit(2);
  }
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const { 'no-warm-cdn': noWarm, 'no-limit': noLimit, help: _help, ...rest } = values;
  const r = argsSchema.safeParse({
    ...rest,
    ...(noWarm ? { 'warm-cdn': false } : {}),
    ...(noLimit ? { limit: false } : {}),
  });
  if (!r.success) {
    process.stderr.write(`bench: ${r.error.issues.map((i) => i.message).join('; ')}\n${USAGE}`);
    process.exit(2);
  }
  return r.data;
}

/**
 * PostgreSQL and Redis reachable (infra/ensure.sh: the servers already listening, else local ones
 * started), once the arguments are known to be good: --help and a mistyped flag touch nothing.
 */
function ensureServices(): void {
  const script = fileURLToPath(new URL('../infra/ensure.sh', import.meta.url));
  const r = spawnSync('bash', [script, 'services'], { stdio: ['ignore', 'ignore', 'inherit'] });
  if (r.status !== 0) {
    process.stderr.write(
      `bench: PostgreSQL or Redis is not reachable and could not be started (infra/ensure.sh services exited ${r.status ?? r.signal})\n`,
    );
    process.exit(3);
  }
}

async function main() {
  const args = parse();
  ensureServices();
  const say = (s: string) => {
    if (!args.json) process.stdout.write(s + '\n');
  };
  const smallPosts = process.argv.includes('--posts') ? args.posts : 2;
  if (args.verify) {
    const { runVerifyBench } = await import('./verify.ts');
    const result = await runVerifyBench(
      {
        objects: args.objects,
        concurrency: process.argv.includes('--concurrency') ? args.concurrency : 16,
        ...(process.argv.includes('--accounts') ? { accounts: args.accounts } : {}),
      },
      say,
    );
    for (const [target, met] of Object.entries(result.targets)) say(`${met ? 'PASS' : 'MISS'} ${target}`);
    if (args.json) process.stdout.write(JSON.stringify(result, null, 2) + '\n');
    return;
  }
  if (args.chaos) {
    const { runChaos } = await import('./chaos/run.ts');
    const { formatReport } = await import('./chaos/report.ts');
    const report = await runChaos({
      seed: args.seed,
      days: args.days ?? 30,
      accounts: process.argv.includes('--accounts') ? args.accounts : 1000,
      postsMean: process.argv.includes('--posts-mean') ? args['posts-mean'] : 12,
      faultsPerDay: args['faults-per-day'],
      historyFile: args.history ?? `bench/results/chaos-seed-${args.seed}.history.jsonl`,
      log: (line) => process.stderr.write(`${line}\n`),
    });
    process.stdout.write(args.json ? JSON.stringify(report, null, 2) + '\n' : formatReport(report));
    process.exitCode = report.violations.length > 0 ? 1 : 0;
    return;
  }
  if (args['workers-compare'] !== undefined) {
    const { runWorkersCompare } = await import('./scale.ts');
    const result = await runWorkersCompare(
      { accounts: args['workers-compare'], posts: smallPosts, counts: [1, 2] },
      say,
    );
    if (args.json) process.stdout.write(JSON.stringify(result, null, 2) + '\n');
    return;
  }
  if (args.downtime !== undefined) {
    const { runDowntime } = await import('./scale.ts');
    const result = await runDowntime(
      {
        accounts: args.downtime,
        // Realistic feeds unless --posts fixes the count (then seeded the same way, of that size).
        posts: process.argv.includes('--posts') ? args.posts : undefined,
        meanPosts: args['posts-mean'],
        newPosts: args['new-posts'],
        downDays: args['down-days'],
        linkDays: args['link-days'],
        timeScale: args['time-scale'],
        seed: args.seed,
        json: args.json,
        limitMinutes: args['catch-up-limit-minutes'],
      },
      say,
    );
    if (args.json) process.stdout.write(JSON.stringify(result, null, 2) + '\n');
    return;
  }
  if (args.scale !== undefined) {
    const { runScale } = await import('./scale.ts');
    const { writeMemoryChart } = await import('./chart.ts');
    const result = await runScale(
      {
        accounts: args.scale,
        posts: process.argv.includes('--posts') ? args.posts : undefined,
        meanPosts: args['posts-mean'],
        windowMinutes: args['window-minutes'],
        catchUpSeconds: args['catch-up-seconds'],
        seed: args.seed,
        json: args.json,
      },
      say,
    );
    const chart = await writeMemoryChart(
      result.memory as Parameters<typeof writeMemoryChart>[0],
      `bench/results/scale-${args.scale}-memory.svg`,
      `Worker RSS over the ${args.scale}-account run`,
    );
    say(`memory chart: ${chart}`);
    // The run's figures for bench/soak-report.ts (the growth table and chart across sizes).
    const { mkdir, writeFile } = await import('node:fs/promises');
    await mkdir('bench/results', { recursive: true });
    const saved = `bench/results/scale-${args.scale}${process.argv.includes('--posts') ? `-posts-${args.posts}` : ''}.json`;
    await writeFile(saved, JSON.stringify(result, null, 2) + '\n');
    say(`figures: ${saved} (bench/soak-report.ts makes the growth table and chart from these)`);
    if (args.json) process.stdout.write(JSON.stringify({ ...result, memoryChart: chart }, null, 2) + '\n');
    return;
  }
  const memory = new MemorySampler();
  const cleanups = cleanupStack();
  const cleanup = cleanups.run;
  try {
    const database = await benchDatabase();
    cleanups.push(database.drop);
    const db = createPool(database.url, { max: 10 });
    cleanups.push(() => db.end());
    await migrate(db);
    const databaseBytes = async () =>
      Number((await db.query<{ n: string }>('SELECT pg_database_size(current_database()) AS n')).rows[0]!.n);
    // What the schema alone takes: subtracted from the per-account figure.
    const emptyDbBytes = await databaseBytes();
    const redis = benchRedis();
    const redisForCpu = redisClient(redis);
    cleanups.push(async () => redisForCpu.disconnect());

    // Room for every rendered JPEG of the run (~18 KB each at 1080 px) when warming the fake CDN.
    const images = args.accounts * args.posts * 1.5;
    const services = await startServicesChild({
      startMs: Date.UTC(2026, 0, 1),
      jpegCacheMb: args['warm-cdn'] ? Math.max(32, Math.ceil((images * 40 * 1024) / 1024 / 1024)) : 0,
      jpegCacheEntries: args['warm-cdn'] ? Math.ceil(images) + 1000 : 0,
    });
    cleanups.push(() => services.close());
    const sim = services.ready;
    const s3 = { endpoint: sim.s3Endpoint, bucket: sim.bucket };
    // The simulator's clock is manual and never moved during the bench: the same instant here.
    const clock = new ManualClock(sim.clockMs);

    const config = loadConfig({
      STORAGE_URL: `s3://${s3.bucket}`,
      S3_ENDPOINT: s3.endpoint,
      S3_FORCE_PATH_STYLE: 'true',
      MEDIA_ALLOWED_HOSTS: sim.imageHost,
      // As the pipeline process reads them (bench/pipeline-process.ts): the same ladder and formats.
      ...(process.env.MEDIA_VARIANT_WIDTHS ? { MEDIA_VARIANT_WIDTHS: process.env.MEDIA_VARIANT_WIDTHS } : {}),
      ...(process.env.MEDIA_VARIANT_FORMATS ? { MEDIA_VARIANT_FORMATS: process.env.MEDIA_VARIANT_FORMATS } : {}),
    });
    // This process's own storage client: for the limit phase only (the pipeline has its own).
    const rawStorage = createStorage(config, { credentials: S3RVER_CREDENTIALS });
    cleanups.push(async () => (rawStorage as S3Storage).close());
    const platform = new PlatformClient({
      graphUrl: sim.graphUrl,
      apiVersion: 'v25.0',
      oauthTokenUrl: sim.oauthTokenUrl,
      clock,
      pageSize: config.PAGE_SIZE,
      maxRetries: 2,
      sleep: async () => undefined,
    });
    const cipherKey = randomBytes(32).toString('base64');
    const cipher = TokenCipher.fromEnv(cipherKey);
    const limits = mirrorLimitsFromConfig(config);

    say(
      `feedmirror bench: ${args.accounts} accounts x ${args.posts} posts, concurrency ${args.concurrency}, variant ladder ${limits.variantWidths.join('/')} px ` +
        `in ${(limits.variantFormats ?? ['webp']).join('+')}, S3 (s3rver) at ${s3.endpoint}`,
    );
    const curveLevels = args.limit && args.curve ? args.curve.split(',').map(Number) : [];
    // One more account for the untimed warm-up round (JIT, lazy codecs, connection pools).
    const warmUpAccounts = args.limit ? 1 : 0;
    const totalAccounts = args.accounts + curveLevels.length * args['curve-accounts'] + warmUpAccounts;
    const accountIds: string[] = [];
    const created = await services.createAccounts(totalAccounts, args.posts, 'bench.shop');
    for (const acc of created) {
      await upsertAccount(db, { id: acc.id, username: acc.username }, clock.now());
      await saveToken(
        db,
        cipher,
        {
          accountId: acc.id,
          accessToken: acc.token,
          obtainedAt: clock.now(),
          expiresAt: new Date(clock.now().getTime() + 60 * DAY),
        },
        'imported',
      );
      accountIds.push(acc.id);
    }
    if (args['warm-cdn']) {
      // Every image link of every account fetched once (not counted: the passes count differences).
      const t = performance.now();
      const urls: string[] = [];
      for (const acc of created) {
        const listing = await platform.listMedia(acc.token, { pageSize: config.PAGE_SIZE });
        for (const raw of listing.items) {
          const item = mediaItemSchema.parse(raw);
          for (const u of [
            item.media_url,
            item.thumbnail_url,
            ...(item.children?.data ?? []).flatMap((c) => [c.media_url, c.thumbnail_url]),
          ]) {
            if (u && !new URL(u).pathname.endsWith('.mp4')) urls.push(u);
          }
        }
      }
      await services.warm(urls);
      const st = await services.stats();
      say(
        `fake CDN warmed: ${urls.length} images rendered in ${((performance.now() - t) / 1000).toFixed(1)} s (child cache ${st.jpegCache.entries} entries, ${(st.jpegCache.bytes / 1e6).toFixed(0)} MB)`,
      );
    }

    const pipeline = await forkChild<{ pid: number }>(
      new URL('./pipeline-process.ts', import.meta.url),
      'bench pipeline',
      {
        BENCH_DATABASE_URL: database.url,
        BENCH_REDIS_URL: redis.url,
        BENCH_REDIS_PREFIX: redis.prefix,
        BENCH_S3_ENDPOINT: s3.endpoint,
        BENCH_BUCKET: s3.bucket,
        BENCH_GRAPH_URL: sim.graphUrl,
        BENCH_OAUTH_TOKEN_URL: sim.oauthTokenUrl,
        BENCH_IMAGE_HOST: sim.imageHost,
        BENCH_CLOCK_MS: String(sim.clockMs),
        BENCH_CIPHER_KEY: cipherKey,
        BENCH_CONCURRENCY: String(args.concurrency),
      },
    );
    cleanups.push(() => pipeline.close());
    const pipelineStats = async () => (await pipeline.ask({ type: 'stats' })).stats as PipelineStats;
    const queues: Queue[] = [
      createQueue(QUEUE.feedSync, redis),
      createQueue(QUEUE.mirrorMedia, redis),
      createQueue(QUEUE.publishFeed, redis),
    ];
    cleanups.push(async () => {
      for (const q of queues) {
        await q.obliterate({ force: true }).catch(() => undefined);
        await q.close();
      }
    });
    const [syncQueue] = queues as [Queue, Queue, Queue];

    /**
     * Every queue empty (nothing waiting, running, delayed or waiting for children), twice in a row.
     * Polled every 100 ms for the first 2 s (an unchanged resync ends in under a second), then
     * every 500 ms: each poll is three round trips to Redis from this process, and at 10 a second
     * they cost about 1 ms of CPU per image copied, taken from the pipeline's cores while the limit
     * has no such observer. The rates do not depend on it: they end at the last copy's finishedOn.
     */
    const drain = async () => {
      const started = Date.now();
      const deadline = started + DRAIN_TIMEOUT_MS;
      let quiet = 0;
      while (quiet < 2) {
        if (Date.now() > deadline) throw new Error('bench: the queues did not drain in time');
        await delay(Date.now() - started < 2_000 ? 100 : 500);
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
    const copiesInDb = async () =>
      Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM media_copies')).rows[0]!.n);
    const publishedFeeds = async () =>
      Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM feed_publications WHERE NOT demo')).rows[0]!.n);

    const cpuSeconds = () => {
      const c = process.cpuUsage();
      return (c.user + c.system) / 1e6;
    };
    const cpuOf = (st: { cpuUserS: number; cpuSystemS: number }) => st.cpuUserS + st.cpuSystemS;
    const diff = (a: Record<string, number>, b: Record<string, number>, k: string) => (b[k] ?? 0) - (a[k] ?? 0);
    const pass = async (label: string, ids: readonly string[] = accountIds) => {
      const reqBefore: RequestCounts = await services.requestCounts();
      const childBefore = await services.stats();
      await services.phase();
      await pipeline.ask({ type: 'phase' });
      const pipeBefore = await pipelineStats();
      const copiesBefore = await copiesInDb();
      const failedBefore = await failedJobs();
      const cpuBefore = await cpuSnapshot(redisForCpu);
      const benchCpuBefore = cpuSeconds();
      const t0 = performance.now();
      const t0Wall = Date.now();
      await syncQueue.addBulk(ids.map((accountId) => ({ name: QUEUE.feedSync, data: { accountId } })));
      await drain();
      const drainedSeconds = (performance.now() - t0) / 1000;
      const around = cpuSince(cpuBefore, await cpuSnapshot(redisForCpu));
      const benchCpu = cpuSeconds() - benchCpuBefore;
      // The pass ends when its last job finished, not when a poll saw the queues empty.
      const inPass = (jobs: Job[]) => jobs.filter((j) => (j.finishedOn ?? 0) >= t0Wall);
      const completed = await Promise.all(queues.map(async (q) => inPass(await q.getJobs(['completed'], 0, -1))));
      const failed = await Promise.all(queues.map(async (q) => inPass(await q.getJobs(['failed'], 0, -1))));
      const lastFinish = Math.max(0, ...[...completed, ...failed].flat().map((j) => j.finishedOn ?? 0));
      const seconds = lastFinish > 0 ? Math.max(0.001, (lastFinish - t0Wall) / 1000) : drainedSeconds;
      // When the last image of the pass was copied (the publishes that follow are not image work).
      const passCopies = completed[1]!;
      const lastCopy = Math.max(t0Wall, ...passCopies.map((j) => j.finishedOn ?? 0));
      const firstCopyStart = Math.min(lastCopy, ...passCopies.map((j) => j.processedOn ?? lastCopy));
      const copySeconds = Math.max(0.001, (lastCopy - t0Wall) / 1000);
      const pipeAfter = await pipelineStats();
      const cpu = cpuOf(pipeAfter) - cpuOf(pipeBefore);
      const childAfter = await services.stats();
      const reqAfter = await services.requestCounts();
      const graph = diff(reqBefore.byHost, reqAfter.byHost, 'graph');
      const listing =
        diff(reqBefore.graphByEdge, reqAfter.graphByEdge, 'media') +
        diff(reqBefore.graphByEdge, reqAfter.graphByEdge, 'children');
      const cdn = diff(reqBefore.byHost, reqAfter.byHost, 'cdn');
      const after = pipeAfter.puts;
      const putsBefore = pipeBefore.puts;
      const copies = (await copiesInDb()) - copiesBefore;
      return {
        seconds,
        accountsPerMinute: ids.length / (seconds / 60),
        imagesCopied: copies,
        imagesPerSecond: copies / seconds,
        /** From queueing the syncs to the last image copied. */
        copySeconds,
        /** From queueing the syncs to the first copy starting: the listings and flows before any image work. */
        firstCopySeconds: (firstCopyStart - t0Wall) / 1000,
        imagesPerSecondCopying: copies / copySeconds,
        apiCalls: graph,
        listingCalls: listing,
        otherApiCalls: graph - listing,
        imageDownloads: cdn,
        apiCallsPerAccount: graph / ids.length,
        imageDownloadsPerAccount: cdn / ids.length,
        uploads: after.mediaPuts - putsBefore.mediaPuts,
        feedWrites: after.feedPuts - putsBefore.feedPuts,
        bytesWritten: after.bytes - putsBefore.bytes,
        failedJobs: (await failedJobs()) - failedBefore,
        feedsPublished: await publishedFeeds(),
        label,
        peakRssMb: pipeAfter.phasePeakRssMb,
        cpuSeconds: cpu,
        /** The pipeline process's garbage collection pauses (main thread). */
        gcSeconds: pipeAfter.gc.seconds - pipeBefore.gc.seconds,
        childCpuSeconds: cpuOf(childAfter) - cpuOf(childBefore),
        childPeakRssMb: childAfter.phasePeakRssMb,
        /** Every process on the machine (Redis, PostgreSQL, this bench's polling included); Linux only. */
        machineCpuSeconds: around.machineS,
        redisCpuSeconds: around.redisS,
        benchCpuSeconds: benchCpu,
      };
    };

    // What the pipeline process holds before any sync: runtime, SDKs, sharp, clients.
    const rssBeforeMb = (await pipelineStats()).rssMb;
    say(
      `RSS of the pipeline process (pid ${pipeline.ready.pid}) before the first sync (runtime, SDKs, sharp, workers): ${rssBeforeMb.toFixed(0)} MB; simulator + s3rver in process ${services.pid}`,
    );
    const mainIds = accountIds.slice(0, args.accounts);
    const curveIds = accountIds.slice(args.accounts, accountIds.length - warmUpAccounts);
    const warmUpIds = accountIds.slice(accountIds.length - warmUpAccounts);
    const groups = (ids: readonly string[], n: number) =>
      Array.from({ length: n }, (_, i) => ids.filter((_, k) => k % n === i)).filter((g) => g.length > 0);

    // Memory of the pipeline process over the run, for the chart.
    const runStart = performance.now();
    const memoryPoints: Array<{ atSeconds: number; rssMb: number; phase: string }> = [];
    let phaseNow = 'pipeline';
    const memTimer = setInterval(() => {
      void pipelineStats()
        .then((st) =>
          memoryPoints.push({ atSeconds: (performance.now() - runStart) / 1000, rssMb: st.rssMb, phase: phaseNow }),
        )
        .catch(() => undefined);
    }, 2_000);
    cleanups.push(async () => clearInterval(memTimer));

    // JPEG bytes of real posts for the limit rounds, fetched before their clock starts (cycled).
    const samples: Buffer[] = [];
    const loadSamples = async () => {
      if (samples.length > 0) return;
      outer: for (const id of accountIds) {
        for (const p of await listPosts(db, id)) {
          for (const s of imageSlots(p.post)) {
            const res = await fetch(s.url);
            if (res.ok) samples.push(Buffer.from(await res.arrayBuffer()));
            if (samples.length >= 64) break outer;
          }
        }
      }
    };
    /** The limit: `total` images through sharp and the storage alone, `lanes` at a time. */
    const limitRound = async (total: number, lanes: number) => {
      await loadSamples();
      memory.phase();
      const childBefore = await services.stats();
      const machineBefore = await cpuSnapshot(redisForCpu);
      const cpuBefore = cpuSeconds();
      const gcBefore = memory.stats().gc.seconds;
      const t0 = performance.now();
      let next = 0;
      const lane = async () => {
        while (next < total) {
          const i = next++;
          const { original, variants } = await processImage(samples[i % samples.length]!, {
            maxPixels: limits.maxPixels,
            variantWidths: limits.variantWidths,
            ...(limits.variantFormats ? { formats: limits.variantFormats } : {}),
          });
          const base = `media/limit/r${t0.toFixed(0)}/i${i}/cover-${original.sha256.slice(0, 16)}`;
          // Uploaded as the pipeline does (src/mirror/copy.ts): original and variants in parallel, then the manifest.
          await Promise.all([
            rawStorage.put(`${base}.${original.ext}`, original.buffer, {
              contentType: original.contentType,
              cacheControl: IMMUTABLE_CACHE_CONTROL,
            }),
            ...variants.map((v) =>
              rawStorage.put(`${base}-w${v.width}.${v.ext}`, v.buffer, {
                contentType: v.contentType,
                cacheControl: IMMUTABLE_CACHE_CONTROL,
              }),
            ),
          ]);
          await rawStorage.put(
            `${base}.json`,
            Buffer.from(JSON.stringify({ version: 1, key: base, variants: variants.length })),
            { contentType: 'application/json', cacheControl: 'no-cache' },
          );
        }
      };
      await Promise.all(Array.from({ length: lanes }, lane));
      const seconds = (performance.now() - t0) / 1000;
      const cpu = cpuSeconds() - cpuBefore;
      const childCpu = cpuOf(await services.stats()) - cpuOf(childBefore);
      const around = cpuSince(machineBefore, await cpuSnapshot(redisForCpu));
      return {
        images: total,
        seconds,
        imagesPerSecond: total / seconds,
        cpuSeconds: cpu,
        childCpuSeconds: childCpu,
        machineCpuSeconds: around.machineS,
        redisCpuSeconds: around.redisS,
        gcSeconds: memory.stats().gc.seconds - gcBefore,
        peakRssMb: memory.end().peakRssMb,
      };
    };
    const setMirrorConcurrency = async (n: number) => {
      await pipeline.ask({ type: 'concurrency', mirror: n });
    };
    type PassResult = Awaited<ReturnType<typeof pass>>;
    /** Several first-sync rounds as one pass: counts summed, rates from the sums, peaks the highest. */
    const combine = (label: string, parts: PassResult[], accounts: number): PassResult => {
      const sum = (k: keyof PassResult) => parts.reduce((a, p) => a + (p[k] as number), 0);
      const seconds = sum('seconds');
      const copies = sum('imagesCopied');
      return {
        ...parts.at(-1)!,
        label,
        seconds,
        accountsPerMinute: accounts / (seconds / 60),
        imagesCopied: copies,
        imagesPerSecond: copies / seconds,
        copySeconds: sum('copySeconds'),
        imagesPerSecondCopying: copies / sum('copySeconds'),
        apiCalls: sum('apiCalls'),
        listingCalls: sum('listingCalls'),
        otherApiCalls: sum('otherApiCalls'),
        imageDownloads: sum('imageDownloads'),
        apiCallsPerAccount: sum('apiCalls') / accounts,
        imageDownloadsPerAccount: sum('imageDownloads') / accounts,
        uploads: sum('uploads'),
        feedWrites: sum('feedWrites'),
        bytesWritten: sum('bytesWritten'),
        failedJobs: sum('failedJobs'),
        cpuSeconds: sum('cpuSeconds'),
        gcSeconds: sum('gcSeconds'),
        childCpuSeconds: sum('childCpuSeconds'),
        machineCpuSeconds: sumKnown(parts.map((p) => p.machineCpuSeconds)),
        redisCpuSeconds: sumKnown(parts.map((p) => p.redisCpuSeconds)),
        benchCpuSeconds: sum('benchCpuSeconds'),
        peakRssMb: Math.max(...parts.map((p) => p.peakRssMb)),
        childPeakRssMb: Math.max(...parts.map((p) => p.childPeakRssMb)),
      };
    };
    /** The sum, or undefined when any part could not be measured (no /proc/stat, say). */
    const sumKnown = (xs: Array<number | undefined>) =>
      xs.every((x) => x !== undefined) ? xs.reduce((a, b) => a + b, 0) : undefined;
    const median = (xs: number[]) => {
      const v = [...xs].sort((a, b) => a - b);
      const m = Math.floor(v.length / 2);
      return v.length % 2 ? v[m]! : (v[m - 1]! + v[m]!) / 2;
    };

    // ---- an untimed warm-up of both sides: the first images of a process pay for JIT compiling,
    // sharp's codecs loading and connection pools opening; a worker in service has paid already ----
    if (warmUpIds.length) {
      const w = await pass('warm-up', warmUpIds);
      await limitRound(w.imagesCopied, args.concurrency);
      say(`  warm-up (not counted): ${w.imagesCopied} images through the pipeline and the limit`);
    }

    // ---- first sync: pipeline and limit rounds, alternating, at the chosen concurrency ----
    const roundGroups = groups(mainIds, args.limit ? args.rounds : 1);
    const pipelineRounds: PassResult[] = [];
    const limitRounds: Array<Awaited<ReturnType<typeof limitRound>>> = [];
    const ratios: number[] = [];
    for (const [i, ids] of roundGroups.entries()) {
      phaseNow = 'pipeline';
      const p = await pass(`first sync, round ${i + 1}`, ids);
      pipelineRounds.push(p);
      let line = `  round ${i + 1}: pipeline ${p.imagesCopied} images in ${p.seconds.toFixed(1)} s = ${p.imagesPerSecond.toFixed(1)} images/s, first copy at ${p.firstCopySeconds.toFixed(2)} s`;
      if (args.limit) {
        phaseNow = 'idle while the limit runs';
        const l = await limitRound(p.imagesCopied, args.concurrency);
        limitRounds.push(l);
        ratios.push(p.imagesPerSecondCopying / l.imagesPerSecond);
        line += ` (${p.imagesPerSecondCopying.toFixed(1)} until the last copy); limit ${l.imagesPerSecond.toFixed(1)} images/s; pipeline at ${((100 * p.imagesPerSecondCopying) / l.imagesPerSecond).toFixed(0)}%`;
      }
      say(line);
    }
    const first = combine('first sync', pipelineRounds, mainIds.length);
    say(
      `pass 1 (first sync, ${roundGroups.length} rounds): ${first.seconds.toFixed(1)} s, ${first.accountsPerMinute.toFixed(1)} accounts/min, ${first.imagesCopied} images copied = ${first.imagesPerSecond.toFixed(1)} images/s; ` +
        `${first.feedsPublished}/${accountIds.length} feeds published so far, ${first.failedJobs} failed jobs`,
    );
    say(
      `  per account: ${first.apiCallsPerAccount.toFixed(2)} API calls (${first.listingCalls} listing + ${first.otherApiCalls} other in total), ${first.imageDownloadsPerAccount.toFixed(2)} image downloads; ` +
        `uploads ${first.uploads} (${(first.bytesWritten / 1e6).toFixed(1)} MB), feed writes ${first.feedWrites}; peak RSS ${first.peakRssMb.toFixed(0)} MB`,
    );
    say(
      `  CPU: pipeline process ${first.cpuSeconds.toFixed(1)} s (${((first.cpuSeconds * 1000) / Math.max(1, first.imagesCopied)).toFixed(0)} ms per image, of which garbage collection pauses ${((first.gcSeconds * 1000) / Math.max(1, first.imagesCopied)).toFixed(1)} ms); simulator+s3rver child ${first.childCpuSeconds.toFixed(1)} s, child peak RSS ${first.childPeakRssMb.toFixed(0)} MB`,
    );

    // ---- the curve: throughput against concurrency, pipeline and limit ----
    const curve: Array<{
      concurrency: number;
      pipelineImagesPerSecond: number;
      limitImagesPerSecond: number;
      fractionOfLimit: number;
      images: number;
    }> = [];
    for (const [i, ids] of groups(curveIds, curveLevels.length).entries()) {
      const c = curveLevels[i]!;
      await setMirrorConcurrency(c);
      phaseNow = 'pipeline';
      const p = await pass(`curve ${c}`, ids);
      phaseNow = 'idle while the limit runs';
      const l = await limitRound(p.imagesCopied, c);
      curve.push({
        concurrency: c,
        pipelineImagesPerSecond: p.imagesPerSecondCopying,
        limitImagesPerSecond: l.imagesPerSecond,
        fractionOfLimit: p.imagesPerSecondCopying / l.imagesPerSecond,
        images: p.imagesCopied,
      });
      say(
        `  curve: concurrency ${String(c).padStart(2)}: pipeline ${p.imagesPerSecondCopying.toFixed(1)} images/s, limit ${l.imagesPerSecond.toFixed(1)} images/s (${p.imagesCopied} images, first copy at ${p.firstCopySeconds.toFixed(2)} s)`,
      );
    }
    if (curveLevels.length) await setMirrorConcurrency(args.concurrency);

    phaseNow = 'pipeline';
    const second = await pass('unchanged resync');
    say(
      `pass 2 (nothing changed at the source, all ${accountIds.length} accounts): ${second.seconds.toFixed(1)} s; API calls ${second.apiCalls} (listing ${second.listingCalls}, other ${second.otherApiCalls}), ` +
        `image downloads ${second.imageDownloads}, uploads ${second.uploads}, feed writes ${second.feedWrites}, images copied ${second.imagesCopied}, failed jobs ${second.failedJobs}`,
    );

    const runFormats = async (samples: Buffer[]) => {
      const n = Math.min(samples.length, args['format-samples']);
      const settings: Array<{ label: string; widths: number[]; formats: Array<'webp' | 'avif'> }> = [
        { label: 'old widths 320/640/1080, webp', widths: [320, 640, 1080], formats: ['webp'] },
        { label: 'ladder, webp (default)', widths: limits.variantWidths, formats: ['webp'] },
        { label: 'ladder, avif', widths: limits.variantWidths, formats: ['avif'] },
        { label: 'ladder, webp+avif', widths: limits.variantWidths, formats: ['webp', 'avif'] },
      ];
      const rows = [];
      for (const s of settings) {
        // One untimed image first: sharp's codecs load lazily.
        await processImage(samples[0]!, { maxPixels: limits.maxPixels, variantWidths: s.widths, formats: s.formats });
        let variantBytes = 0;
        let variants = 0;
        let originalBytes = 0;
        const before = cpuSeconds();
        for (let i = 0; i < n; i++) {
          const out = await processImage(samples[i]!, {
            maxPixels: limits.maxPixels,
            variantWidths: s.widths,
            formats: s.formats,
          });
          for (const v of out.variants) variantBytes += v.buffer.length;
          variants += out.variants.length;
          originalBytes += out.original.buffer.length;
        }
        const cpu = cpuSeconds() - before;
        const row = {
          label: s.label,
          images: n,
          cpuMsPerImage: (cpu * 1000) / n,
          variantsPerImage: variants / n,
          variantKbPerImage: variantBytes / n / 1024,
          originalKbPerImage: originalBytes / n / 1024,
        };
        rows.push(row);
        say(
          `  formats: ${row.label.padEnd(30)} ${row.cpuMsPerImage.toFixed(0).padStart(4)} ms CPU per image, ${row.variantsPerImage.toFixed(1)} variants, ` +
            `${row.variantKbPerImage.toFixed(1)} KB of variants per image (original ${row.originalKbPerImage.toFixed(1)} KB)`,
        );
      }
      return rows;
    };
    let limit;
    if (args.limit) {
      await loadSamples();
      const images = limitRounds.reduce((a, l) => a + l.images, 0);
      const seconds = limitRounds.reduce((a, l) => a + l.seconds, 0);
      limit = {
        images,
        samples: samples.length,
        seconds,
        imagesPerSecond: images / seconds,
        cpuSeconds: limitRounds.reduce((a, l) => a + l.cpuSeconds, 0),
        childCpuSeconds: limitRounds.reduce((a, l) => a + l.childCpuSeconds, 0),
        gcSeconds: limitRounds.reduce((a, l) => a + l.gcSeconds, 0),
        machineCpuSeconds: sumKnown(limitRounds.map((l) => l.machineCpuSeconds)),
        redisCpuSeconds: sumKnown(limitRounds.map((l) => l.redisCpuSeconds)),
        peakRssMb: Math.max(...limitRounds.map((l) => l.peakRssMb)),
        rounds: limitRounds.map((l) => l.imagesPerSecond),
        formats: await runFormats(samples),
      };
      say(
        `limit (sharp + storage alone, the same images as each round, concurrency ${args.concurrency}): ${limit.imagesPerSecond.toFixed(1)} images/s over ${limitRounds.length} rounds`,
      );
      // Where the difference goes: CPU per image on each side, the fake outside world included
      // (it shares the cores: the fake CDN and s3rver answer the pipeline, s3rver the limit).
      const perImage = (s: number, n: number) => ((s * 1000) / Math.max(1, n)).toFixed(0);
      say(
        `  CPU per image: pipeline ${perImage(first.cpuSeconds, first.imagesCopied)} ms + ${perImage(first.childCpuSeconds, first.imagesCopied)} ms in the fake CDN/s3rver; ` +
          `limit ${perImage(limit.cpuSeconds, images)} ms + ${perImage(limit.childCpuSeconds, images)} ms in s3rver; ` +
          `garbage collection pauses: pipeline ${((first.gcSeconds * 1000) / Math.max(1, first.imagesCopied)).toFixed(1)} ms, limit ${((limit.gcSeconds * 1000) / Math.max(1, images)).toFixed(1)} ms`,
      );
      if (first.machineCpuSeconds !== undefined && limit.machineCpuSeconds !== undefined) {
        // Everything that ran on the cores meanwhile: Redis and PostgreSQL work for the pipeline only.
        const rest = (m: number, ...known: number[]) => m - known.reduce((a, b) => a + b, 0);
        say(
          `  machine CPU per image (every process): pipeline ${perImage(first.machineCpuSeconds, first.imagesCopied)} ms ` +
            `(Redis ${perImage(first.redisCpuSeconds ?? 0, first.imagesCopied)} ms, this bench's polling ${perImage(first.benchCpuSeconds, first.imagesCopied)} ms, ` +
            `PostgreSQL and the rest ${perImage(rest(first.machineCpuSeconds, first.cpuSeconds, first.childCpuSeconds, first.redisCpuSeconds ?? 0, first.benchCpuSeconds), first.imagesCopied)} ms); ` +
            `limit ${perImage(limit.machineCpuSeconds, images)} ms (Redis ${perImage(limit.redisCpuSeconds ?? 0, images)} ms)`,
        );
      }
    } else say('limit phase skipped (--no-limit): no fraction of the limit in this run');
    // The share of the limit: the median of the rounds' ratios (each round's pipeline against the
    // limit measured right after it on the same images), with their spread.
    const fraction = ratios.length ? median(ratios) : undefined;
    const fractionSpread = ratios.length
      ? { min: Math.min(...ratios), max: Math.max(...ratios), rounds: ratios }
      : undefined;
    if (fractionSpread)
      say(
        `pipeline as a share of the limit: median ${(100 * fraction!).toFixed(0)}% over ${ratios.length} rounds (spread ${(100 * fractionSpread.min).toFixed(0)}-${(100 * fractionSpread.max).toFixed(0)}%)`,
      );
    clearInterval(memTimer);
    const charts: string[] = [];
    if (curve.length) {
      charts.push(
        await writeChart('bench/results/throughput-vs-concurrency.svg', {
          title: `First-sync throughput against mirror concurrency (${availableParallelism()} cores)`,
          xLabel: 'images copied at once (MIRROR_CONCURRENCY)',
          yLabel: 'images per second',
          series: [
            { name: 'pipeline', points: curve.map((c) => [c.concurrency, c.pipelineImagesPerSecond] as const) },
            {
              name: 'sharp + storage alone',
              points: curve.map((c) => [c.concurrency, c.limitImagesPerSecond] as const),
            },
          ],
        }),
      );
    }
    charts.push(
      await writeMemoryChart(
        memoryPoints,
        'bench/results/pipeline-memory.svg',
        'Pipeline process RSS over the benchmark',
      ),
    );
    say(`charts: ${charts.join(', ')}`);

    const pipe = await pipelineStats();
    // For sizing: what a synced account of this size costs in PostgreSQL and in the bucket.
    const dbBytes = await databaseBytes();
    const sizing = {
      postgresBytesPerAccount: (dbBytes - emptyDbBytes) / accountIds.length,
      postgresEmptySchemaBytes: emptyDbBytes,
      storageBytesPerImage: first.bytesWritten / Math.max(1, first.imagesCopied),
      objectsPerImage: first.uploads / Math.max(1, first.imagesCopied),
    };
    say(
      `sizing: PostgreSQL ${(sizing.postgresBytesPerAccount / 1024).toFixed(0)} KB per account of ${args.posts} posts (above the empty schema's ${(emptyDbBytes / 1e6).toFixed(1)} MB); ` +
        `bucket ${(sizing.storageBytesPerImage / 1024).toFixed(0)} KB in ${sizing.objectsPerImage.toFixed(1)} objects per image (original, variants, manifest)`,
    );
    const childFinal = await services.stats();
    const limitProcessMaxRssMb = process.resourceUsage().maxRSS / 1024;
    const at = pipe.atPeak;
    // The target is the pipeline process's: the kernel's high-water mark over its whole life.
    const maxRssMb = pipe.maxRssMb;
    say(
      `peak memory: pipeline process maxRSS ${maxRssMb.toFixed(0)} MB (sampled high-water mark ${at.rss.toFixed(0)} MB: V8 heap ${at.heapUsed.toFixed(0)} MB used of ${at.heapTotal.toFixed(0)} MB, ` +
        `external ${at.external.toFixed(0)} MB, the rest native: libvips, malloc arenas, code); this process (with the limit phase) maxRSS ${limitProcessMaxRssMb.toFixed(0)} MB; ` +
        `simulator+s3rver process maxRSS ${childFinal.maxRssMb.toFixed(0)} MB (its JPEG cache ${(childFinal.jpegCache.bytes / 1e6).toFixed(0)} MB)`,
    );

    const atTargetSize = args.accounts >= TARGETS.peakRssAt.accounts && args.posts >= TARGETS.peakRssAt.posts;
    const targets = {
      pipelineFractionOfLimit: {
        value: fraction,
        target: `>= ${TARGETS.fractionOfLimit}`,
        pass: fraction === undefined ? undefined : fraction >= TARGETS.fractionOfLimit,
      },
      peakMemory: {
        value: maxRssMb,
        target: `< ${TARGETS.peakRssMb} MB at ${TARGETS.peakRssAt.accounts}x${TARGETS.peakRssAt.posts}`,
        pass: maxRssMb < TARGETS.peakRssMb,
        note: atTargetSize ? undefined : `measured at ${args.accounts}x${args.posts}, not the target's size`,
      },
      unchangedResyncListingOnly: {
        value: {
          otherApiCalls: second.otherApiCalls,
          imageDownloads: second.imageDownloads,
          uploads: second.uploads,
          feedWrites: second.feedWrites,
        },
        target: 'only listing calls: 0 other API calls, 0 downloads, 0 uploads, 0 feed writes',
        pass:
          second.otherApiCalls === 0 && second.imageDownloads === 0 && second.uploads === 0 && second.feedWrites === 0,
      },
    };
    say(`targets:`);
    say(
      fraction === undefined
        ? `  ---- pipeline as a share of the sharp+storage limit: not measured (--no-limit)`
        : `  ${fraction >= TARGETS.fractionOfLimit ? 'PASS' : 'MISS'} pipeline at ${(fraction * 100).toFixed(0)}% of the sharp+storage limit (target >= ${TARGETS.fractionOfLimit * 100}%)`,
    );
    say(
      `  ${targets.peakMemory.pass ? 'PASS' : 'MISS'} peak memory ${maxRssMb.toFixed(0)} MB (target < ${TARGETS.peakRssMb} MB at 500x50${atTargetSize ? '' : `; this run is ${args.accounts}x${args.posts}`})`,
    );
    say(
      `  ${targets.unchangedResyncListingOnly.pass ? 'PASS' : 'MISS'} unchanged resync: ${second.listingCalls} listing calls, ${second.otherApiCalls} other calls, ${second.imageDownloads} downloads, ${second.uploads} uploads, ${second.feedWrites} feed writes`,
    );

    if (args.json) {
      process.stdout.write(
        JSON.stringify(
          {
            params: {
              ...args,
              variantWidths: limits.variantWidths,
              node: process.version,
              cores: availableParallelism(),
            },
            rssBeforeMb,
            first,
            rounds: pipelineRounds.map((p, i) => ({
              pipelineImagesPerSecond: p.imagesPerSecondCopying,
              limitImagesPerSecond: limitRounds[i]?.imagesPerSecond,
              fractionOfLimit: ratios[i],
            })),
            second,
            limit,
            fractionOfLimit: fraction,
            fractionSpread,
            curve,
            sizing,
            charts,
            pipeline: pipe,
            maxRssMb,
            limitProcessMaxRssMb,
            child: childFinal,
            targets,
          },
          null,
          2,
        ) + '\n',
      );
    }
  } finally {
    memory.stop();
    await cleanup();
  }
}

// A failure ends the run with one line (BENCH_DEBUG=1 for the stack). After Ctrl-C or a kill, the
// run's own queries fail against the database the signal handler is removing: say nothing more.
await main().catch((err: unknown) => {
  if (interrupted()) return;
  const message = (err as Error).message ?? String(err);
  process.stderr.write(
    `${process.env.BENCH_DEBUG ? ((err as Error).stack ?? message) : message.startsWith('bench') ? message : `bench: ${message}`}\n`,
  );
  process.exitCode = 1;
});
