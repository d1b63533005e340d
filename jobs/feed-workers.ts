import { DelayedError, FlowProducer, Worker, type Job } from 'bullmq';
import type { FeedDeps } from '../src/feeds/deps.ts';
import { RateLimitedError } from '../src/platform/errors.ts';
import { countRateLimitWait } from '../src/metrics/observe.ts';
import { MINUTE } from '../src/util/clock.ts';
import type { FlowSettings, FeedSyncJobDeps } from './feed-sync.ts';
import { queueProcessor } from './catalogue.ts';
import { QUEUE, bullConnection, type RedisSettings } from './queues.ts';

/**
 * The feed pipeline's BullMQ workers: feed-sync, mirror-media and publish-feed, and the
 * FlowProducer that links them. jobs/worker.ts starts them next to the token workers.
 */
export interface FeedWorkerDeps extends FeedDeps {
  redis: RedisSettings;
  concurrency?: { sync?: number; mirror?: number; publish?: number };
  flowSettings?: FlowSettings;
}

export interface RunningFeedWorkers {
  flows: FlowProducer;
  close(): Promise<void>;
}

/** App-wide limits (code 4, or a bare 429) pause the whole queue; a user's own limit delays only its job. */
const APP_WIDE_CODES = new Set([4, undefined]);
const DEFAULT_RATE_LIMIT_WAIT_MS = 5 * MINUTE;

export async function startFeedWorkers(deps: FeedWorkerDeps): Promise<RunningFeedWorkers> {
  const log = deps.logger.child({ component: 'feed-workers' });
  // Options, not clients: each Worker and the FlowProducer own their connection and close it.
  const conn = (forWorker = true) => bullConnection(deps.redis, forWorker);
  const flows = new FlowProducer({ connection: conn(false), prefix: deps.redis.prefix });
  const syncDeps: FeedSyncJobDeps = {
    ...deps,
    flows,
    redis: deps.redis,
    ...(deps.flowSettings ? { flowSettings: deps.flowSettings } : {}),
  };
  const common = { prefix: deps.redis.prefix };
  const runSync = queueProcessor('feedSync', syncDeps);

  const syncWorker: Worker = new Worker(
    QUEUE.feedSync,
    async (job: Job, token?: string) => {
      try {
        return await runSync(job);
      } catch (err) {
        if (!(err instanceof RateLimitedError)) throw err;
        // R-OWN-1: never retry in a tight loop; wait as long as the platform says (or 5 minutes).
        const waitMs = err.retryAfterMs ?? DEFAULT_RATE_LIMIT_WAIT_MS;
        log.warn({ accountId: job.data?.accountId, waitMs, code: err.code }, 'rate limited by the platform; backing off');
        countRateLimitWait(deps.metrics, err.operation);
        if (APP_WIDE_CODES.has(err.code)) {
          await syncWorker.rateLimit(waitMs);
          throw Worker.RateLimitError();
        }
        await job.moveToDelayed(Date.now() + waitMs, token);
        throw new DelayedError();
      }
    },
    { ...common, connection: conn(), concurrency: deps.concurrency?.sync ?? 2 },
  );
  const mirrorWorker = new Worker(QUEUE.mirrorMedia, queueProcessor('mirrorMedia', deps), {
    ...common,
    connection: conn(),
    concurrency: deps.concurrency?.mirror ?? 4,
  });
  const publishWorker = new Worker(QUEUE.publishFeed, queueProcessor('publishFeed', deps), {
    ...common,
    connection: conn(),
    concurrency: deps.concurrency?.publish ?? 2,
  });
  const workers = [syncWorker, mirrorWorker, publishWorker];
  for (const w of workers) {
    w.on('failed', (job, err) => {
      // Every failed attempt (BullMQ emits none for the rate-limit branch's delay/pause).
      deps.metrics?.jobFailures.inc({ queue: w.name });
      log.warn({ queue: w.name, jobId: job?.id, err }, 'job failed');
    });
    w.on('error', (err) => log.error({ queue: w.name, err }, 'worker error'));
  }
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  return {
    flows,
    async close() {
      await Promise.all(workers.map((w) => w.close()));
      await flows.close();
    },
  };
}
