/**
 * The pipeline under measurement, in a process of its own: the feed workers `feedmirror worker`
 * runs (jobs/feed-workers.ts: feed-sync -> mirror-media children -> publish-feed parent) with the
 * same dependencies, and nothing else. Its RSS and CPU are therefore the worker's alone: not the
 * bench's bookkeeping, not the fake platform's, not the sharp-alone limit phase's.
 *
 * IPC protocol (bench/ipc.ts):
 *   parent -> child  { id, type: 'phase' }  answer { id }                      (starts a new RSS high-water mark)
 *                    { id, type: 'stats' }  answer { id, stats: PipelineStats }
 *                    { id, type: 'close' }  answer { id }, then the process exits
 *                    { id, type: 'concurrency', mirror }  answer { id }      (copies at once, from now on)
 *   child -> parent  first message { type: 'ready', ready: { pid } } once the workers are listening
 * Settings come in environment variables (BENCH_*), validated below; the token cipher key is the
 * bench's own throwaway key for its throwaway database.
 */
import { z } from 'zod';
import { loadConfig } from '../src/config.ts';
import type { FeedDeps } from '../src/feeds/deps.ts';
import { mirrorLimitsFromConfig } from '../src/mirror/copy.ts';
import { PlatformClient } from '../src/platform/client.ts';
import { createStorage, type S3Storage } from '../src/storage/index.ts';
import type { ObjectStorage, PutOptions } from '../src/storage/types.ts';
import { TokenCipher } from '../src/store/crypto.ts';
import { createPool } from '../src/store/db.ts';
import { ManualClock } from '../src/util/clock.ts';
import { applyHeapGrowthPercent } from '../src/util/heap.ts';
import { silentLogger } from '../src/util/logger.ts';
import { startFeedWorkers } from '../jobs/feed-workers.ts';
import { S3RVER_CREDENTIALS } from '../test/support/s3.ts';
import { serveParent } from './ipc.ts';
import { MemorySampler, type MemoryStats } from './memory.ts';
import { quietNodeVersionWarning } from '../bin/quiet-node-warning.js';

// A benchmark's stderr is for its own progress: the AWS SDK's Node 20 notice is dropped.
quietNodeVersionWarning({ silent: true });

export interface PutCounts {
  mediaPuts: number;
  feedPuts: number;
  otherPuts: number;
  bytes: number;
}

export interface PipelineStats extends MemoryStats {
  puts: PutCounts;
}

/** The real storage, counting what is written (uploads vs feed writes). */
function counting(inner: ObjectStorage, counts: PutCounts): ObjectStorage {
  const s = Object.create(inner) as ObjectStorage;
  s.put = async (key: string, body: Buffer, opts: PutOptions) => {
    await inner.put(key, body, opts);
    if (key.startsWith('media/')) counts.mediaPuts++;
    else if (key.startsWith('feeds/')) counts.feedPuts++;
    else counts.otherPuts++;
    counts.bytes += body.length;
  };
  return s;
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
  BENCH_CLOCK_MS: z.coerce.number().int().positive(),
  BENCH_CIPHER_KEY: z.string().min(1),
  BENCH_CONCURRENCY: z.coerce.number().int().positive(),
});

const request = z.discriminatedUnion('type', [
  z.object({ id: z.number(), type: z.literal('phase') }),
  z.object({ id: z.number(), type: z.literal('stats') }),
  z.object({ id: z.number(), type: z.literal('close') }),
  z.object({ id: z.number(), type: z.literal('concurrency'), mirror: z.number().int().positive() }),
]);

async function main(): Promise<void> {
  const env = settings.parse(process.env);
  const memory = new MemorySampler();
  const clock = new ManualClock(env.BENCH_CLOCK_MS);
  const config = loadConfig({
    STORAGE_URL: `s3://${env.BENCH_BUCKET}`,
    S3_ENDPOINT: env.BENCH_S3_ENDPOINT,
    S3_FORCE_PATH_STYLE: 'true',
    MEDIA_ALLOWED_HOSTS: env.BENCH_IMAGE_HOST,
    // The worker's default, or HEAP_GROWTH_PERCENT from the bench's environment to compare.
    ...(process.env.HEAP_GROWTH_PERCENT !== undefined ? { HEAP_GROWTH_PERCENT: process.env.HEAP_GROWTH_PERCENT } : {}),
    // The ladder and formats from the bench's environment, to compare them.
    ...(process.env.MEDIA_VARIANT_WIDTHS ? { MEDIA_VARIANT_WIDTHS: process.env.MEDIA_VARIANT_WIDTHS } : {}),
    ...(process.env.MEDIA_VARIANT_FORMATS ? { MEDIA_VARIANT_FORMATS: process.env.MEDIA_VARIANT_FORMATS } : {}),
  });
  applyHeapGrowthPercent(config.HEAP_GROWTH_PERCENT); // as `feedmirror worker` does
  const puts: PutCounts = { mediaPuts: 0, feedPuts: 0, otherPuts: 0, bytes: 0 };
  const raw = createStorage(config, { credentials: S3RVER_CREDENTIALS });
  const db = createPool(env.BENCH_DATABASE_URL, { max: 10 });
  const platform = new PlatformClient({
    graphUrl: env.BENCH_GRAPH_URL,
    apiVersion: 'v25.0',
    oauthTokenUrl: env.BENCH_OAUTH_TOKEN_URL,
    clock,
    pageSize: config.PAGE_SIZE,
    maxRetries: 2,
    sleep: async () => undefined,
  });
  const deps: FeedDeps = {
    db,
    cipher: TokenCipher.fromEnv(env.BENCH_CIPHER_KEY),
    platform,
    storage: counting(raw, puts),
    limits: mirrorLimitsFromConfig(config),
    clock,
    logger: silentLogger,
  };
  const workers = await startFeedWorkers({
    ...deps,
    redis: { url: env.BENCH_REDIS_URL, prefix: env.BENCH_REDIS_PREFIX },
    concurrency: { sync: 2, mirror: env.BENCH_CONCURRENCY, publish: 2 },
  });

  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    memory.stop();
    await workers.close();
    (raw as S3Storage).close();
    await db.end();
  };

  const sendReady = serveParent(
    'bench/pipeline-process.ts',
    async (msg) => {
      const m = request.parse(msg);
      switch (m.type) {
        case 'phase':
          memory.phase();
          return {};
        case 'stats':
          return { stats: { ...memory.stats(), puts: { ...puts } } satisfies PipelineStats };
        case 'close':
          await close();
          return {};
        case 'concurrency':
          workers.setMirrorConcurrency(m.mirror);
          return {};
      }
    },
    close,
  );
  sendReady({ pid: process.pid });
}

main().catch((err: unknown) => {
  process.stderr.write(`bench pipeline: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
