/**
 * One whole `feedmirror worker` in a process of its own, for the scale benchmarks (bench/scale.ts):
 * token refresh checks, feed sync, copy and publish, the daily jobs, and the start-up that
 * schedules every account, exactly as jobs/worker.ts starts them. Its RSS and CPU are the
 * worker's alone. Several of these may run against one Redis (the 1-vs-2-workers figure).
 *
 * IPC protocol (bench/ipc.ts):
 *   parent -> child  { id, type: 'stats' }  answer { id, stats: WorkerStats }
 *                    { id, type: 'close' }  answer { id }, then the process exits
 *   child -> parent  first message { type: 'ready', ready: { pid } } once the worker has started
 * Settings come in BENCH_* environment variables, validated below.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { loadConfig } from '../src/config.ts';
import { createMailer } from '../src/alerts/mailer.ts';
import type { FeedDeps } from '../src/feeds/deps.ts';
import { mirrorLimitsFromConfig } from '../src/mirror/copy.ts';
import { mirrorConcurrency } from '../src/mirror/concurrency.ts';
import { PlatformClient } from '../src/platform/client.ts';
import { AccountCallPacer } from '../jobs/call-pacer.ts';
import { createStorage, type S3Storage } from '../src/storage/index.ts';
import type { ObjectStorage, PutOptions } from '../src/storage/types.ts';
import { TokenCipher } from '../src/store/crypto.ts';
import { createPool } from '../src/store/db.ts';
import { DAY, FileClock, HOUR, systemClock, type Clock } from '../src/util/clock.ts';
import { applyHeapGrowthPercent } from '../src/util/heap.ts';
import { silentLogger } from '../src/util/logger.ts';
import { createQueues, redisClient } from '../jobs/queues.ts';
import { startWorker } from '../jobs/worker.ts';
import { S3RVER_CREDENTIALS } from '../test/support/s3.ts';
import { serveParent } from './ipc.ts';
import { MemorySampler, type MemoryStats } from './memory.ts';
import { quietNodeVersionWarning } from '../bin/quiet-node-warning.js';

// A benchmark's stderr is for its own progress: the AWS SDK's Node 20 notice is dropped.
quietNodeVersionWarning({ silent: true });

export interface WorkerStats extends MemoryStats {
  mediaPuts: number;
  feedPuts: number;
  /** Media keys this process uploaded more than once (a duplicate copy). */
  repeatedMediaKeys: number;
  /** Every media key this process uploaded (to find keys two processes both uploaded). */
  mediaKeys?: string[];
}

const settings = z.object({
  BENCH_DATABASE_URL: z.url(),
  BENCH_REDIS_URL: z.url(),
  BENCH_REDIS_PREFIX: z.string().min(1),
  BENCH_S3_ENDPOINT: z.url(),
  BENCH_BUCKET: z.string().min(1),
  BENCH_GRAPH_URL: z.url(),
  BENCH_OAUTH_TOKEN_URL: z.url(),
  BENCH_IMAGE_HOST: z.string().min(1),
  BENCH_CIPHER_KEY: z.string().min(1),
  /**
   * The daily verify (VERIFY_DAILY): the scale runs record their accounts' earlier copies as rows
   * only (no objects), so a verify in repair mode would copy every image again. Off there.
   */
  BENCH_VERIFY: z.enum(['repair', 'check', 'off']).default('repair'),
  /** A file clock shared with the bench (the downtime run moves time); unset: the system clock. */
  BENCH_CLOCK_FILE: z.string().optional(),
});

const request = z.discriminatedUnion('type', [
  z.object({ id: z.number(), type: z.literal('stats'), keys: z.boolean().optional() }),
  z.object({ id: z.number(), type: z.literal('close') }),
]);

async function main(): Promise<void> {
  const env = settings.parse(process.env);
  const memory = new MemorySampler();
  const clock: Clock = env.BENCH_CLOCK_FILE ? new FileClock(env.BENCH_CLOCK_FILE) : systemClock;
  const config = loadConfig({
    ...process.env,
    STORAGE_URL: `s3://${env.BENCH_BUCKET}`,
    S3_ENDPOINT: env.BENCH_S3_ENDPOINT,
    S3_FORCE_PATH_STYLE: 'true',
    MEDIA_ALLOWED_HOSTS: env.BENCH_IMAGE_HOST,
    OUTBOX_DIR: mkdtempSync(join(tmpdir(), 'fm-bench-outbox-')),
    SMTP_URL: '',
  });
  applyHeapGrowthPercent(config.HEAP_GROWTH_PERCENT);
  const mediaKeys = new Map<string, number>();
  let feedPuts = 0;
  const raw = createStorage(config, { credentials: S3RVER_CREDENTIALS });
  const storage = Object.create(raw) as ObjectStorage;
  storage.put = async (key: string, body: Buffer, opts: PutOptions) => {
    await raw.put(key, body, opts);
    if (key.startsWith('media/') && !key.endsWith('.json')) mediaKeys.set(key, (mediaKeys.get(key) ?? 0) + 1);
    else if (key.startsWith('feeds/')) feedPuts++;
  };
  const redis = { url: env.BENCH_REDIS_URL, prefix: env.BENCH_REDIS_PREFIX };
  const pacerRedis = redisClient(redis);
  const db = createPool(env.BENCH_DATABASE_URL, { max: 10 });
  const platform = new PlatformClient({
    graphUrl: env.BENCH_GRAPH_URL,
    apiVersion: 'v25.0',
    oauthTokenUrl: env.BENCH_OAUTH_TOKEN_URL,
    clock,
    pageSize: config.PAGE_SIZE,
    maxRetries: config.HTTP_MAX_RETRIES,
    timeoutMs: config.HTTP_TIMEOUT_MS,
    pacer: new AccountCallPacer({
      callsPerHour: config.PLATFORM_CALLS_PER_ACCOUNT_HOUR,
      prefix: redis.prefix,
      redis: () => pacerRedis,
    }),
  });
  const queues = createQueues(redis);
  const cipher = TokenCipher.fromEnv(env.BENCH_CIPHER_KEY);
  const feed: FeedDeps = {
    db,
    cipher,
    platform,
    storage,
    limits: mirrorLimitsFromConfig(config),
    clock,
    logger: silentLogger,
  };
  const worker = await startWorker({
    db,
    cipher,
    platform,
    mailer: createMailer(config, silentLogger, { clock }),
    clock,
    logger: silentLogger,
    redis,
    queues,
    publicUrl: config.PUBLIC_URL,
    schedules: {
      refreshCheckEveryMs: config.REFRESH_CHECK_HOURS * HOUR,
      syncEveryMs: config.SYNC_INTERVAL_MINUTES * 60_000,
    },
    refreshAfterMs: config.REFRESH_AFTER_DAYS * DAY,
    concurrency: config.WORKER_CONCURRENCY,
    mirrorConcurrency: mirrorConcurrency(config.MIRROR_CONCURRENCY),
    syncConcurrency: config.SYNC_CONCURRENCY,
    sweepCron: config.EXPIRY_SWEEP_CRON,
    verify: { mode: env.BENCH_VERIFY, orphanGraceMs: config.VERIFY_ORPHAN_GRACE_HOURS * HOUR },
    feed,
  });

  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    memory.stop();
    await worker.close();
    await Promise.all(Object.values(queues).map((q) => q.close()));
    await pacerRedis.quit().catch(() => undefined);
    (raw as S3Storage).close();
    await db.end();
  };

  const sendReady = serveParent(
    'bench/worker-process.ts',
    async (msg) => {
      const m = request.parse(msg);
      switch (m.type) {
        case 'stats': {
          let mediaPuts = 0;
          let repeated = 0;
          for (const n of mediaKeys.values()) {
            mediaPuts += n;
            if (n > 1) repeated++;
          }
          const stats: WorkerStats = {
            ...memory.stats(),
            mediaPuts,
            feedPuts,
            repeatedMediaKeys: repeated,
            ...(m.keys ? { mediaKeys: [...mediaKeys.keys()] } : {}),
          };
          return { stats };
        }
        case 'close':
          await close();
          return {};
      }
    },
    close,
  );
  sendReady({ pid: process.pid });
}

main().catch((err: unknown) => {
  process.stderr.write(`bench worker: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
