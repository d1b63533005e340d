import { FlowProducer, Worker } from 'bullmq';
import type { FeedDeps } from '../src/feeds/deps.ts';
import type { FlowSettings, FeedSyncJobDeps } from './feed-sync.ts';
import { queueProcessor } from './catalogue.ts';
import { QUEUE, bullConnection, ownedBy, redisOutage, watchRedis, type RedisSettings } from './queues.ts';
import { waitingOutsideJobs, type PlatformWaitSettings } from './rate-limits.ts';
import { telemetryOptions } from './telemetry.ts';

/**
 * The feed pipeline's BullMQ workers: feed-sync, mirror-media and publish-feed, and the
 * FlowProducer that links them. jobs/worker.ts starts them next to the token workers.
 */
export interface FeedWorkerDeps extends FeedDeps {
  redis: RedisSettings;
  concurrency?: { sync?: number; mirror?: number; publish?: number };
  flowSettings?: FlowSettings;
  /** How the queues slow down when the app's platform usage is high (R-OWN-1). */
  platformWaits?: PlatformWaitSettings;
  /** Hold one app's calls (per-app limits); without it an app-wide limit pauses the queue. */
  holdApp?: (app: string, ms: number) => Promise<void>;
}

export interface RunningFeedWorkers {
  flows: FlowProducer;
  /** The BullMQ Workers (the worker's bounded shutdown closes them itself). */
  workers: readonly Worker[];
  /** Change how many copies run at once, while running (the benchmark's concurrency curve). */
  setMirrorConcurrency(n: number): void;
  close(): Promise<void>;
}

export async function startFeedWorkers(deps: FeedWorkerDeps): Promise<RunningFeedWorkers> {
  const log = deps.logger.child({ component: 'feed-workers' });
  // Options, not clients: each Worker and the FlowProducer own their connection and close it.
  const conn = (forWorker = true) => bullConnection(deps.redis, forWorker);
  const flowConnection = conn(false);
  const flows = ownedBy(
    new FlowProducer({ ...telemetryOptions(), connection: flowConnection, prefix: deps.redis.prefix }),
    flowConnection,
  );
  flows.on('error', (err) => redisOutage(deps.redis, deps.logger).error(err, 'flow producer'));
  const syncDeps: FeedSyncJobDeps = {
    ...deps,
    flows,
    redis: deps.redis,
    ...(deps.flowSettings ? { flowSettings: deps.flowSettings } : {}),
  };
  const common = { ...telemetryOptions(), prefix: deps.redis.prefix };
  const runSync = queueProcessor('feedSync', syncDeps);

  // Platform limits become waits outside the job (jobs/rate-limits.ts, R-OWN-1): the sync and the
  // copy (its link renewal) call the platform; publishing does not.
  const waits = {
    logger: deps.logger,
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
    usage: () => deps.platform.lastUsage,
    ...(deps.platformWaits ? { settings: deps.platformWaits } : {}),
    ...(deps.holdApp ? { holdApp: deps.holdApp } : {}),
  };
  const syncWorker: Worker = new Worker(
    QUEUE.feedSync,
    waitingOutsideJobs(waits, () => syncWorker, runSync),
    { ...common, connection: conn(), concurrency: deps.concurrency?.sync ?? 2 },
  );
  const mirrorWorker: Worker = new Worker(
    QUEUE.mirrorMedia,
    waitingOutsideJobs(waits, () => mirrorWorker, queueProcessor('mirrorMedia', deps)),
    {
      ...common,
      connection: conn(),
      concurrency: deps.concurrency?.mirror ?? 4,
    },
  );
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
    watchRedis(w, redisOutage(deps.redis, deps.logger), `worker ${w.name}`);
  }
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  return {
    flows,
    workers,
    setMirrorConcurrency(n: number) {
      mirrorWorker.concurrency = n;
    },
    async close() {
      await Promise.all(workers.map((w) => w.close()));
      await flows.close();
    },
  };
}
