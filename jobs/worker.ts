import { Worker } from 'bullmq';
import cron from 'node-cron';
import type pg from 'pg';
import type { Logger } from '../src/util/logger.ts';
import type { Clock } from '../src/util/clock.ts';
import type { PlatformClient } from '../src/platform/client.ts';
import type { TokenCipher } from '../src/store/crypto.ts';
import type { Mailer } from '../src/alerts/mailer.ts';
import { alertReauthRequired } from '../src/alerts/sweep.ts';
import { listAccounts } from '../src/store/accounts.ts';
import { QUEUE, bullConnection, type Queues, type RedisSettings } from './queues.ts';
import { JOBS, accountSchedules, enqueueDaily, queueProcessor, scheduleAccount, type ScheduleSettings } from './catalogue.ts';
import { AccountLifecycle } from '../src/accounts/lifecycle.ts';
import type { TokenRefreshDeps } from '../src/accounts/token-refresh.ts';
import type { MaintenanceDeps } from './maintenance.ts';
import { startFeedWorkers } from './feed-workers.ts';
import type { PlatformWaitSettings } from './rate-limits.ts';
import type { FeedDeps } from '../src/feeds/deps.ts';
import type { PipelineMetrics } from '../src/metrics/index.ts';
import { publishWidget } from '../src/widget/index.ts';

/**
 * `feedmirror worker`: the BullMQ workers, the daily sweep's cron, and a start-up catch-up
 * (every active account's schedulers exist; today's sweep is queued). Any number of these
 * processes may run against the same Redis and Postgres.
 */
export interface WorkerDeps {
  db: pg.Pool;
  cipher: TokenCipher;
  platform: PlatformClient;
  mailer: Mailer;
  clock: Clock;
  logger: Logger;
  redis: RedisSettings;
  queues: Pick<Queues, 'tokenRefresh' | 'maintenance'> & Partial<Queues>;
  publicUrl: string;
  schedules: ScheduleSettings;
  refreshAfterMs: number;
  concurrency: number;
  /** node-cron expression for queuing the daily sweep (UTC). */
  sweepCron: string;
  /** The feed pipeline (sync, copy, publish); without it the worker only keeps tokens alive. */
  feed?: FeedDeps;
  /** Account state changes; by default one on this worker's queues, mailer and metrics. */
  lifecycle?: AccountLifecycle;
  /** Job failures of every queue this worker runs; handed to the feed pipeline unless it has its own. */
  metrics?: PipelineMetrics;
  /** How the feed queues slow down when the app's platform usage is high (R-OWN-1). */
  platformWaits?: PlatformWaitSettings;
}

export interface RunningWorker {
  close(): Promise<void>;
}

export async function startWorker(deps: WorkerDeps): Promise<RunningWorker> {
  const log = deps.logger.child({ component: 'worker' });
  const alertDeps = { db: deps.db, mailer: deps.mailer, clock: deps.clock, logger: deps.logger, publicUrl: deps.publicUrl };
  // Every account state change of this process, with its effects (R-TOK-10: stop the schedules
  // and tell the operator at once).
  const lifecycle =
    deps.lifecycle ??
    new AccountLifecycle({
      db: deps.db,
      clock: deps.clock,
      logger: deps.logger,
      schedules: accountSchedules(deps.queues, deps.schedules),
      alertReauth: (accountId) => alertReauthRequired(alertDeps, accountId),
      ...(deps.metrics?.accountTransitions ? { transitions: deps.metrics.accountTransitions } : {}),
    });
  const sweepDeps = { ...alertDeps, lifecycle };

  const refreshDeps: TokenRefreshDeps = {
    db: deps.db,
    cipher: deps.cipher,
    platform: deps.platform,
    clock: deps.clock,
    logger: deps.logger,
    refreshAfterMs: deps.refreshAfterMs,
    lifecycle,
  };
  const refreshWorker = new Worker(QUEUE.tokenRefresh, queueProcessor('tokenRefresh', refreshDeps), {
    connection: bullConnection(deps.redis),
    prefix: deps.redis.prefix,
    concurrency: deps.concurrency,
  });

  const maintenanceDeps: MaintenanceDeps = { ...sweepDeps, ...(deps.feed ? { storage: deps.feed.storage } : {}) };
  const maintenanceWorker = new Worker(QUEUE.maintenance, queueProcessor('maintenance', maintenanceDeps), {
    connection: bullConnection(deps.redis),
    prefix: deps.redis.prefix,
    concurrency: 1,
  });

  const feedWorkers = deps.feed
    ? await startFeedWorkers({
        ...deps.feed,
        ...(deps.metrics && !deps.feed.metrics ? { metrics: deps.metrics } : {}),
        redis: deps.redis,
        concurrency: { mirror: deps.concurrency },
        lifecycle,
        ...(deps.platformWaits ? { platformWaits: deps.platformWaits } : {}),
      })
    : undefined;
  // The widget script sits next to the feeds; publishing is idempotent (unchanged: no write).
  if (deps.feed) await publishWidget(deps.feed.storage).catch((err) => log.warn({ err }, 'could not publish the widget script'));

  for (const w of [refreshWorker, maintenanceWorker]) {
    w.on('failed', (job, err) => {
      deps.metrics?.jobFailures.inc({ queue: w.name });
      log.warn({ queue: w.name, jobId: job?.id, err }, 'job failed');
    });
    w.on('error', (err) => log.error({ queue: w.name, err }, 'worker error'));
  }

  // Catch up: a worker that was down when something was due acts as soon as it starts.
  const accounts = await listAccounts(deps.db, deps.clock.now(), { status: 'active', withTokenOnly: true });
  for (const a of accounts) await scheduleAccount(deps.queues, a.id, deps.schedules);
  // The daily jobs: one each per day across all workers (de-duplicated job ids).
  const queueDailyJobs = async () => {
    await enqueueDaily(deps.queues, JOBS.expirySweep, deps.clock);
    if (deps.feed) await enqueueDaily(deps.queues, JOBS.mediaSweep, deps.clock);
  };
  await queueDailyJobs();
  const task = cron.schedule(
    deps.sweepCron,
    () => {
      queueDailyJobs().catch((err) => log.error({ err }, 'could not queue the daily sweeps'));
    },
    { timezone: 'UTC' },
  );
  log.info({ accounts: accounts.length, pid: process.pid }, 'worker started');

  return {
    async close() {
      await task.stop();
      // Running jobs finish; jobs not yet taken stay in Redis for the next worker.
      await Promise.all([refreshWorker.close(), maintenanceWorker.close(), feedWorkers?.close()]);
      log.info('worker stopped');
    },
  };
}
