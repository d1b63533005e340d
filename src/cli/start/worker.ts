import type { AppContext } from '../context.ts';
import type { Db } from '../../store/db.ts';
import { startWorker, type RunningWorker } from '../../../jobs/worker.ts';
import { startMetricsServer, type MetricsServer } from '../../http/metrics-server.ts';
import { applyHeapGrowthPercent } from '../../util/heap.ts';
import { mirrorConcurrency } from '../../mirror/concurrency.ts';
import { addSpans, startTracing } from '../../util/tracing.ts';
import { enableJobTelemetry } from '../../../jobs/telemetry.ts';
import { HOUR } from '../../util/clock.ts';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { WORKER_HEARTBEAT_MS, forgetWorker, recordWorkerSettings, touchWorker } from '../../store/worker-settings.ts';

export interface RunningWorkerProcess extends RunningWorker {
  /** The METRICS_PORT listener's address, when one was asked for. */
  metricsUrl?: string;
}

/** The worker on the context's configuration (also used by the demo). */
export async function startWorkerFromContext(ctx: AppContext): Promise<RunningWorkerProcess> {
  applyHeapGrowthPercent(ctx.config.HEAP_GROWTH_PERCENT);
  // Tracing first: every queue and worker built from here on carries BullMQ's telemetry.
  const tracing = ctx.config.OTEL_EXPORTER_OTLP_ENDPOINT
    ? await startTracing({
        endpoint: ctx.config.OTEL_EXPORTER_OTLP_ENDPOINT,
        serviceName: ctx.config.OTEL_SERVICE_NAME,
      })
    : undefined;
  if (tracing) {
    await enableJobTelemetry();
    ctx.logger.info({ endpoint: ctx.config.OTEL_EXPORTER_OTLP_ENDPOINT }, 'tracing on: spans go to the OTLP collector');
  }
  // Every service answers before a job is taken: a worker that cannot start exits non-zero.
  await ctx.ensureRedis();
  await ctx.ensureStorage();
  // With tracing on, every query and storage call is a span (patched in place; nothing when off).
  const db = addSpans(await ctx.migratedDb(), 'db', ['query']);
  await refuseKeysThatOpenNoToken(ctx, db);
  addSpans(ctx.storage, 'storage', ['put', 'get', 'head', 'delete', 'deletePrefix']);
  // R-DEL-1: before the first job, so a new storage is this deployment's before anything is written.
  await ctx.claimStorage();
  // Created before anything calls the platform, so every call is counted.
  const metrics = ctx.metrics;
  let metricsServer: MetricsServer | undefined;
  if (ctx.config.METRICS_PORT !== undefined) {
    // Listening first: a port in use is a start-up error, before any job is taken.
    metricsServer = await startMetricsServer({
      metrics,
      host: ctx.config.METRICS_HOST,
      port: ctx.config.METRICS_PORT,
      logger: ctx.logger,
    });
    ctx.logger.info({ url: metricsServer.url }, 'worker metrics listening (/metrics, /healthz)');
  }
  // R-SET-1: what this worker re-encodes and delivers with, where `media rebuild` and `webhooks add`
  // read it; refreshed while the worker runs, deleted when it stops.
  const workerId = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  await recordWorkerSettings(db, {
    workerId,
    host: hostname(),
    pid: process.pid,
    settings: {
      MEDIA_VARIANT_WIDTHS: ctx.config.MEDIA_VARIANT_WIDTHS,
      MEDIA_VARIANT_FORMATS: ctx.config.MEDIA_VARIANT_FORMATS,
      WEBHOOK_ALLOW_PRIVATE: ctx.config.WEBHOOK_ALLOW_PRIVATE,
    },
  });
  const heartbeat = setInterval(() => {
    touchWorker(db, workerId).catch((err: unknown) =>
      ctx.logger.warn({ err }, "could not refresh this worker's settings row"),
    );
  }, WORKER_HEARTBEAT_MS);
  heartbeat.unref();
  let worker: RunningWorker;
  try {
    worker = await startWorker({
      db,
      cipher: ctx.cipher,
      platform: ctx.platform,
      apps: ctx.apps,
      mailer: ctx.mailer,
      emailTemplates: ctx.emailTemplates,
      brand: ctx.brand,
      clock: ctx.clock,
      logger: ctx.logger,
      redis: ctx.redis,
      queues: ctx.queues,
      publicUrl: ctx.config.PUBLIC_URL,
      owners: ctx.ownerAlerts,
      schedules: ctx.schedules,
      refreshAfterMs: ctx.refreshAfterMs,
      concurrency: ctx.config.WORKER_CONCURRENCY,
      mirrorConcurrency: mirrorConcurrency(ctx.config.MIRROR_CONCURRENCY),
      syncConcurrency: ctx.config.SYNC_CONCURRENCY,
      sweepCron: ctx.config.EXPIRY_SWEEP_CRON,
      feed: { ...(await ctx.feedDeps()), metrics },
      lifecycle: ctx.lifecycle,
      metrics,
      // Per app (Standard Access: one app per client): an app-wide limit holds that app's calls only.
      holdApp: (app: string, ms: number) => ctx.pacer.holdApp(app, ms),
      platformWaits: {
        slowdownPercent: ctx.config.PLATFORM_SLOWDOWN_PERCENT,
        slowdownMaxMs: ctx.config.PLATFORM_SLOWDOWN_MAX_SECONDS * 1000,
      },
      reconcileIntervalMs: ctx.config.RECONCILE_INTERVAL_SECONDS * 1000,
      shutdownTimeoutMs: ctx.config.SHUTDOWN_TIMEOUT_SECONDS * 1000,
      eventRetentionDays: ctx.config.EVENT_RETENTION_DAYS,
      verify: {
        mode: ctx.config.VERIFY_DAILY,
        orphanGraceMs: ctx.config.VERIFY_ORPHAN_GRACE_HOURS * HOUR,
        widgets: ctx.widgetDeps,
        publishStatus: ctx.config.PUBLISH_STATUS,
      },
      webhooks: { allowPrivate: ctx.config.WEBHOOK_ALLOW_PRIVATE, timeoutMs: ctx.config.WEBHOOK_TIMEOUT_MS },
    });
  } catch (err) {
    clearInterval(heartbeat);
    await forgetWorker(db, workerId).catch(() => undefined);
    await metricsServer?.close();
    await tracing?.shutdown();
    throw err;
  }
  // R-WID-5: a widget whose republication was missed (storage down, a crash) is caught up; an
  // unchanged one costs a HEAD. In the background: the first job never waits for it.
  void (async () => {
    const { publishAllWidgets } = await import('../../widgets/publish.ts');
    const { listWidgets } = await import('../../store/widgets.ts');
    const ids = (await listWidgets(db)).map((w) => w.id);
    const out = await publishAllWidgets(ctx.widgetDeps, ids);
    const written = out.filter((o) => o.outcome === 'written').length;
    if (ids.length > 0) ctx.logger.info({ widgets: ids.length, written }, 'widgets checked at start');
  })().catch((err: unknown) => ctx.logger.warn({ err }, 'could not check the widgets at start'));
  return {
    ...(metricsServer ? { metricsUrl: metricsServer.url } : {}),
    reconciler: worker.reconciler,
    async close() {
      const result = await worker.close();
      clearInterval(heartbeat);
      await forgetWorker(db, workerId).catch((err: unknown) =>
        ctx.logger.warn({ err }, "could not delete this worker's settings row (it lapses after 90 s)"),
      );
      // Last: a final scrape can still see the counts of the jobs that just finished.
      await metricsServer?.close();
      await tracing?.shutdown(); // sends the spans still buffered
      return result;
    },
  };
}

/**
 * R-HLT-5: a worker whose TOKEN_ENCRYPTION_KEY opens none of the stored tokens (a wrong key, a key
 * dropped too early in a rotation) would fail every account's sync: it does not start. One line names the
 * key ids it holds and the ones the tokens need (ids, never keys; R-KEY-1); exit 1. Keys that open
 * some tokens and not others start: those accounts' jobs fail without marking the accounts
 * (src/util/error-kinds.ts), and `feedmirror doctor` names the tokens no key opens (R-KEY-2).
 */
async function refuseKeysThatOpenNoToken(ctx: AppContext, db: Db): Promise<void> {
  const { checkTokenKeys } = await import('../../store/secrets.ts');
  const { EncryptionKeyError } = await import('../../store/errors.ts');
  const { describeKeyEntry } = await import('../../store/crypto.ts');
  const found = await checkTokenKeys(db, ctx.cipher);
  if (found.tokens === 0 || found.opens) return;
  const held = ctx.cipher.keys().map(describeKeyEntry).join(', ');
  throw new EncryptionKeyError(
    `cannot start: TOKEN_ENCRYPTION_KEY (key ${held}) opens none of the ${found.tokens} stored token(s), sealed with key ${found.sealedWith.join(', ')}; every sync would fail. Put that key back in TOKEN_ENCRYPTION_KEY (docs/accounts.md)`,
  );
}
