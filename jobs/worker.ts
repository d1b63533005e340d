import type { PlatformApps } from '../src/accounts/apps.ts';
import { Worker, type Job } from 'bullmq';
import cron from 'node-cron';
import type pg from 'pg';
import type { Logger } from '../src/util/logger.ts';
import type { Clock } from '../src/util/clock.ts';
import type { PlatformClient } from '../src/platform/client.ts';
import type { TokenCipher } from '../src/store/crypto.ts';
import type { Mailer } from '../src/alerts/mailer.ts';
import type { Brand, EmailTemplates } from '../src/alerts/templates.ts';
import { alertReauthRequired } from '../src/alerts/sweep.ts';
import type { OwnerAlertSettings } from '../src/alerts/owner.ts';
import { listScheduledAccountIds } from '../src/store/accounts.ts';
import {
  QUEUE,
  type QueueKey,
  bullConnection,
  redisClient,
  redisOutage,
  watchRedis,
  type Queues,
  type RedisSettings,
} from './queues.ts';
import { Reconciler } from './reconcile.ts';
import type { AnyJobDefinition } from './definition.ts';
import { JOBS, checkQueueCoverage, queueProcessor } from './catalogue.ts';
import { enqueueDaily } from './enqueue.ts';
import { accountSchedules, scheduleAccounts, type ScheduleSettings } from './schedules.ts';
import { AccountLifecycle } from '../src/accounts/lifecycle.ts';
import type { TokenRefreshDeps } from '../src/accounts/token-refresh.ts';
import type { MaintenanceDeps } from './maintenance.ts';
import { scheduleCheck } from './verify-schedules.ts';
import { DEFAULT_ORPHAN_GRACE_MS } from '../src/verify/verify.ts';
import { startFeedWorkers } from './feed-workers.ts';
import type { PlatformWaitSettings } from './rate-limits.ts';
import { telemetryOptions } from './telemetry.ts';
import type { FeedDeps } from '../src/feeds/deps.ts';
import type { PipelineMetrics } from '../src/metrics/index.ts';
import { publishWidget } from '../src/embed/index.ts';
import type { WidgetDeps } from '../src/widgets/publish.ts';
import type { DeliverDeps } from '../src/webhooks/deliver.ts';
import { webhookBackoff, WEBHOOK_RETRY_DELAYS_MS } from './webhook-delivery.ts';
import { requeuePendingDeliveries, webhookEventSink } from './webhook-events.ts';

/**
 * `feedmirror worker`: the BullMQ workers, the daily sweep's cron, and a start-up catch-up
 * (every active account's schedulers exist; today's sweep is queued). Any number of these
 * processes may run against the same Redis and Postgres.
 */
export interface WorkerDeps {
  db: pg.Pool;
  cipher: TokenCipher;
  platform: PlatformClient;
  /** Each account's refresh through its own app's client. */
  apps?: PlatformApps;
  mailer: Mailer;
  clock: Clock;
  logger: Logger;
  redis: RedisSettings;
  queues: Pick<Queues, 'tokenRefresh' | 'maintenance'> & Partial<Queues>;
  publicUrl: string;
  schedules: ScheduleSettings;
  refreshAfterMs: number;
  /** Token-refresh jobs at once. */
  concurrency: number;
  /** Image copies at once (default: concurrency). */
  mirrorConcurrency?: number;
  /** Feed syncs and publishes at once (default 8). */
  syncConcurrency?: number;
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
  /** Hold one app's calls for a while (per-app limits, jobs/call-pacer.ts). */
  holdApp?: (app: string, ms: number) => Promise<void>;
  /** How often the leader compares the schedules in Redis with PostgreSQL (RECONCILE_INTERVAL_SECONDS). */
  reconcileIntervalMs?: number;
  /** How long running jobs may finish after close() is called (SHUTDOWN_TIMEOUT_SECONDS). */
  shutdownTimeoutMs?: number;
  /** Account events older than this are deleted by the daily housekeeping (EVENT_RETENTION_DAYS). */
  eventRetentionDays?: number;
  /** The daily verify (VERIFY_DAILY; default repair, 24 h orphan grace); needs the feed pipeline. */
  verify?: {
    mode: 'repair' | 'check' | 'off';
    orphanGraceMs: number;
    /** What widgets are published with: the daily verify checks and republishes them (and the widget script). */
    widgets?: WidgetDeps;
    /** PUBLISH_STATUS: the daily verify checks the status documents follow it (absent: not checked). */
    publishStatus?: boolean;
  };
  /** The email templates (EMAIL_TEMPLATES_DIR over the built-in ones) and BRAND_*; default: built-in, feedmirror's look. */
  emailTemplates?: EmailTemplates;
  brand?: Brand;
  /** Owner alerts (OWNER_ALERTS, RECONNECT_LINK_TTL); absent: alerts go to the operator only. */
  owners?: OwnerAlertSettings;
  /** Outgoing webhooks (needs queues.webhooks): delivery settings; the retry delays are for tests. */
  webhooks?: { allowPrivate: boolean; timeoutMs: number; retryDelaysMs?: readonly number[]; concurrency?: number };
}

/** A job that was still running when the shutdown timeout ran out. */
export interface CutOffJob {
  queue: string;
  id: string | undefined;
  name: string;
  accountId?: string;
}

export interface RunningWorker {
  /**
   * Stop taking jobs; running ones may finish for up to the shutdown timeout. Then the rest is
   * cut off (their locks lapse and BullMQ's stalled-job check hands them to another worker) and
   * listed in the log and in the result. BullMQ's own close() never times out by itself.
   */
  close(): Promise<{ cutOff: CutOffJob[] }>;
  /** The schedule reconciler (tests trigger it; it runs on its own interval). */
  readonly reconciler: Reconciler;
}

/** The queue a Worker runs, by its key in QUEUE. */
function queueKeyOf(w: Worker): QueueKey {
  const key = (Object.keys(QUEUE) as QueueKey[]).find((k) => QUEUE[k] === w.name);
  if (!key) throw new Error(`a worker runs ${w.name}, which is not a queue of QUEUE`);
  return key;
}

/** The account a job is for, when its payload names one (payloads are job-specific). */
function accountIdOf(job: Job): { accountId?: string } {
  const accountId: unknown = (job.data as { accountId?: unknown } | undefined)?.accountId;
  return typeof accountId === 'string' ? { accountId } : {};
}

export async function startWorker(deps: WorkerDeps): Promise<RunningWorker> {
  const log = deps.logger.child({ component: 'worker' });
  // Webhook events from every service this worker runs (feed.updated, token.expiring, account.reauth_required).
  const webhookQueue = deps.queues.webhooks;
  // Every process that alerts emits the same events (the expiry sweep's token.expiring, with its
  // email): a worker without the webhook queue still records them for the next worker to deliver.
  const events = webhookEventSink({
    db: deps.db,
    queues: webhookQueue ? { webhooks: webhookQueue } : {},
    clock: deps.clock,
    logger: deps.logger,
  });
  const alertDeps = {
    db: deps.db,
    mailer: deps.mailer,
    clock: deps.clock,
    logger: deps.logger,
    publicUrl: deps.publicUrl,
    events,
    ...(deps.emailTemplates ? { emailTemplates: deps.emailTemplates } : {}),
    ...(deps.brand ? { brand: deps.brand } : {}),
    ...(deps.owners ? { owners: deps.owners } : {}),
  };
  // Every account state change of this process, with its effects (R-TOK-10: stop the schedules
  // and tell the operator at once).
  const lifecycle =
    deps.lifecycle ??
    new AccountLifecycle({
      db: deps.db,
      clock: deps.clock,
      logger: deps.logger,
      schedules: accountSchedules(deps.queues, deps.schedules),
      events,
      alertReauth: (accountId) => alertReauthRequired(alertDeps, accountId),
      ...(deps.metrics?.accountTransitions ? { transitions: deps.metrics.accountTransitions } : {}),
    });
  const sweepDeps = { ...alertDeps, lifecycle };

  const refreshDeps: TokenRefreshDeps = {
    db: deps.db,
    cipher: deps.cipher,
    platform: deps.platform,
    ...(deps.apps ? { apps: deps.apps } : {}),
    clock: deps.clock,
    logger: deps.logger,
    refreshAfterMs: deps.refreshAfterMs,
    lifecycle,
  };
  const refreshWorker = new Worker(QUEUE.tokenRefresh, queueProcessor('tokenRefresh', refreshDeps), {
    ...telemetryOptions(),
    connection: bullConnection(deps.redis),
    prefix: deps.redis.prefix,
    concurrency: deps.concurrency,
  });

  const verifyMode = deps.verify?.mode ?? 'repair';
  const maintenanceDeps: MaintenanceDeps = {
    ...sweepDeps,
    eventRetentionDays: deps.eventRetentionDays ?? 365,
    ...(deps.feed ? { storage: deps.feed.storage } : {}),
    ...(deps.feed?.deleteCap ? { deleteCap: deps.feed.deleteCap } : {}),
    ...(deps.feed && verifyMode !== 'off'
      ? {
          verify: {
            // The feed pipeline as this worker runs it (its events and metrics), and the schedules
            // as the reconciler compares them.
            deps: {
              ...deps.feed,
              ...(!deps.feed.events ? { events } : {}),
              ...(deps.metrics && !deps.feed.metrics ? { metrics: deps.metrics } : {}),
              lifecycle,
              schedules: scheduleCheck({ db: deps.db, queues: deps.queues, schedules: deps.schedules }),
              ...(deps.verify?.widgets ? { widgets: deps.verify.widgets } : {}),
              ...(deps.verify?.publishStatus !== undefined ? { publishStatus: deps.verify.publishStatus } : {}),
            },
            repair: verifyMode === 'repair',
            orphanGraceMs: deps.verify?.orphanGraceMs ?? DEFAULT_ORPHAN_GRACE_MS,
          },
        }
      : {}),
  };
  const maintenanceWorker = new Worker(QUEUE.maintenance, queueProcessor('maintenance', maintenanceDeps), {
    ...telemetryOptions(),
    connection: bullConnection(deps.redis),
    prefix: deps.redis.prefix,
    concurrency: 1,
  });

  const webhookDeps: DeliverDeps = {
    db: deps.db,
    cipher: deps.cipher,
    clock: deps.clock,
    logger: deps.logger,
    allowPrivate: deps.webhooks?.allowPrivate ?? false,
    timeoutMs: deps.webhooks?.timeoutMs ?? 10_000,
  };
  const webhookWorker = webhookQueue
    ? new Worker(QUEUE.webhooks, queueProcessor('webhooks', webhookDeps), {
        ...telemetryOptions(),
        connection: bullConnection(deps.redis),
        prefix: deps.redis.prefix,
        concurrency: deps.webhooks?.concurrency ?? 4,
        // The retry schedule over 24 hours (webhook-delivery.ts).
        settings: { backoffStrategy: webhookBackoff(deps.webhooks?.retryDelaysMs ?? WEBHOOK_RETRY_DELAYS_MS) },
      })
    : undefined;

  const feedWorkers = deps.feed
    ? await startFeedWorkers({
        ...deps.feed,
        ...(!deps.feed.events ? { events } : {}),
        ...(deps.metrics && !deps.feed.metrics ? { metrics: deps.metrics } : {}),
        redis: deps.redis,
        concurrency: {
          mirror: deps.mirrorConcurrency ?? deps.concurrency,
          sync: deps.syncConcurrency ?? 8,
          publish: deps.syncConcurrency ?? 8,
        },
        lifecycle,
        ...(deps.platformWaits ? { platformWaits: deps.platformWaits } : {}),
        ...(deps.holdApp ? { holdApp: deps.holdApp } : {}),
      })
    : undefined;
  // The widget script sits next to the feeds; publishing is idempotent (unchanged: no write).
  if (deps.feed)
    await publishWidget(deps.feed.storage).catch((err: unknown) =>
      log.warn({ err }, 'could not publish the widget script'),
    );

  for (const w of [refreshWorker, maintenanceWorker, ...(webhookWorker ? [webhookWorker] : [])]) {
    w.on('failed', (job, err) => {
      deps.metrics?.jobFailures.inc({ queue: w.name });
      log.warn({ queue: w.name, jobId: job?.id, err }, 'job failed');
    });
    // Connection errors: one line when Redis goes away, one when it is back (not one per retry).
    watchRedis(w, redisOutage(deps.redis, deps.logger), `worker ${w.name}`);
  }
  const workers: Worker[] = [
    refreshWorker,
    maintenanceWorker,
    ...(feedWorkers?.workers ?? []),
    ...(webhookWorker ? [webhookWorker] : []),
  ];
  // Every queue with jobs has a Worker here, and every Worker has jobs (catalogue.ts), except the
  // queues this process leaves to others on purpose.
  try {
    checkQueueCoverage(workers.map(queueKeyOf), [
      ...(deps.feed ? [] : (['feedSync', 'mirrorMedia', 'publishFeed'] as const)),
      ...(webhookQueue ? [] : (['webhooks'] as const)),
    ]);
  } catch (err) {
    await Promise.all(workers.map((w) => w.close()));
    await feedWorkers?.flows.close();
    throw err;
  }
  // What runs now, for the shutdown's "cut off" list.
  const active = new Map<string, CutOffJob>();
  for (const w of workers) {
    const key = (job: Job) => `${w.name}:${job.id}`;
    w.on('active', (job) =>
      active.set(key(job), {
        queue: w.name,
        id: job.id,
        name: job.name,
        ...accountIdOf(job),
      }),
    );
    w.on('completed', (job) => active.delete(key(job)));
    w.on('failed', (job) => job && active.delete(key(job)));
  }

  // The daily jobs: one each per day across all workers (de-duplicated job ids).
  const dailyJobs: AnyJobDefinition[] = [
    JOBS.expirySweep,
    JOBS.housekeeping,
    ...(deps.feed ? [JOBS.mediaSweep] : []),
    ...(maintenanceDeps.verify ? [JOBS.verify] : []),
  ];
  const queueDailyJobs = async () => {
    for (const def of dailyJobs) await enqueueDaily(deps.queues, def, deps.clock);
  };
  // Catch up: a worker that was down when something was due acts as soon as it starts (every
  // active account's schedulers upserted, today's daily jobs queued).
  // Only what differs is written (scheduleAccounts): upserting every scheduler at every start
  // would rewrite two schedulers per account that are already right.
  const accountIds = await listScheduledAccountIds(deps.db);
  const scheduled = await scheduleAccounts(deps.queues, accountIds, deps.schedules);
  log.info({ accounts: accountIds.length, ...scheduled }, 'account schedules checked');
  await queueDailyJobs();
  // From then on the leader repairs what Redis loses (reconcile.ts).
  const redisWatch = redisClient(deps.redis);
  redisWatch.on('error', () => undefined); // reconnects on its own; the workers log Redis errors
  const reconciler = new Reconciler(
    {
      db: deps.db,
      queues: deps.queues,
      schedules: deps.schedules,
      dailyJobs,
      clock: deps.clock,
      logger: log,
      ...(deps.metrics?.scheduleRepairs ? { repairs: deps.metrics.scheduleRepairs } : {}),
    },
    { intervalMs: deps.reconcileIntervalMs ?? 300_000, redis: redisWatch },
  );
  reconciler.start();
  void reconciler.trigger(); // takes the lead at once if nobody holds it
  // Deliveries recorded but not queued (Redis lost, a crash between the two) get their jobs back.
  if (webhookQueue) {
    const requeued = await requeuePendingDeliveries(deps.db, { webhooks: webhookQueue });
    if (requeued > 0) log.info({ requeued }, 'pending webhook deliveries queued again');
  }
  const task = cron.schedule(
    deps.sweepCron,
    () => {
      queueDailyJobs().catch((err: unknown) => log.error({ err }, 'could not queue the daily sweeps'));
    },
    { timezone: 'UTC' },
  );
  log.info({ accounts: accountIds.length, pid: process.pid }, 'worker started');

  const shutdownTimeoutMs = deps.shutdownTimeoutMs ?? 30_000;
  return {
    reconciler,
    async close() {
      await task.stop();
      await reconciler.stop();
      redisWatch.disconnect();
      // Running jobs finish (up to the timeout); jobs not yet taken stay in Redis for the next worker.
      const closing = Promise.all(workers.map((w) => w.close()));
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        closing.then(() => false),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), shutdownTimeoutMs);
        }),
      ]);
      clearTimeout(timer);
      const cutOff = timedOut ? [...active.values()] : [];
      if (timedOut) {
        log.warn(
          { cutOff, shutdownTimeoutSeconds: shutdownTimeoutMs / 1000 },
          `shutdown timeout: ${cutOff.length} running job(s) cut off; another worker takes them over once their lock lapses`,
        );
        // Stop waiting: BullMQ keeps its first close() promise (a second close(true) returns the
        // same one), so the cut-off jobs are abandoned with the process, which exits next.
        closing.catch(() => undefined);
      }
      await feedWorkers?.flows.close();
      log.info({ cutOff: cutOff.length }, 'worker stopped');
      return { cutOff };
    },
  };
}
