import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { Job, QueueEvents, type Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import type { FeedDeps } from '../../src/feeds/deps.ts';
import { createMetrics, type Metrics } from '../../src/metrics/index.ts';
import { parseExposition, type MetricFamily } from '../../src/metrics/exposition.ts';
import { platformCallObserver } from '../../src/metrics/observe.ts';
import { mirrorLimitsFromConfig } from '../../src/mirror/copy.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { createStorage } from '../../src/storage/index.ts';
import { upsertAccount } from '../../src/store/accounts.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { saveToken } from '../../src/store/tokens.ts';
import { connectWithShortLivedToken } from '../../src/accounts/connect.ts';
import { DAY, FileClock } from '../../src/util/clock.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { startFeedWorkers, type RunningFeedWorkers } from '../../jobs/feed-workers.ts';
import type { FeedSyncReturn } from '../../jobs/feed-sync.ts';
import { createQueue, QUEUE } from '../../jobs/queues.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { spawnFeedmirror, type Spawned } from '../support/processes.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { until } from '../support/wait.ts';
import { workerEnv } from '../support/worker-env.ts';
import { noSleep, simPlatformClient } from '../support/sim-platform.ts';

/**
 * The worker side of /metrics: the real feed pipeline (simulator, Postgres,
 * Redis, BullMQ, local-folder storage) counts into a Metrics instance, read back through the
 * strict exposition parser; and a real `feedmirror worker` with METRICS_PORT serves them.
 */

function value(
  families: Map<string, MetricFamily>,
  family: string,
  labels: Record<string, string> = {},
  sampleName = family,
): number {
  const f = families.get(family);
  const s = f?.samples.find(
    (x) => x.name === sampleName && Object.entries(labels).every(([k, v]) => x.labels[k] === v),
  );
  return s?.value ?? 0;
}

describe('worker metrics, counted by the real pipeline', () => {
  const cipher = TokenCipher.fromEnv(randomBytes(32).toString('base64'));
  const storageDir = mkdtempSync(join(tmpdir(), 'fm-metrics-'));
  let db: pg.Pool;
  let dropDb: () => Promise<void>;
  let sim: Simulator;
  let metrics: Metrics;
  let deps: FeedDeps;
  let accountId: string;
  let workers: RunningFeedWorkers;
  let syncQueue: Queue;
  let publishQueue: Queue;
  let mirrorQueue: Queue;
  let syncEvents: QueueEvents;
  let publishEvents: QueueEvents;
  const scrape = async () => parseExposition(await metrics.metricsText());

  beforeAll(async () => {
    const fresh = await freshDatabase('metricsworker');
    dropDb = fresh.drop;
    db = createPool(fresh.url, { max: 5 });
    await migrate(db);
    sim = await startSimulator();
    const config = loadConfig({
      STORAGE_URL: storageDir,
      MEDIA_PUBLIC_URL: 'http://media.example.test/',
      MEDIA_ALLOWED_HOSTS: sim.imageHost,
      MEDIA_VARIANT_WIDTHS: '320',
    });
    metrics = createMetrics({ processMetrics: false });
    const platform = simPlatformClient(sim, {
      pageSize: 4,
      maxRetries: 0,
      sleep: noSleep,
      observer: platformCallObserver(metrics),
    });
    deps = {
      db,
      cipher,
      platform,
      storage: createStorage(config),
      limits: mirrorLimitsFromConfig(config),
      clock: sim.clock,
      logger: silentLogger,
      metrics,
    };
    const acc = sim.createAccount({ username: 'metrics.shop', posts: 6 });
    accountId = acc.id;
    await upsertAccount(db, { id: acc.id, username: acc.username }, sim.clock.now());
    const token = sim.issueLongLivedToken(acc.id);
    await saveToken(
      db,
      cipher,
      {
        accountId,
        accessToken: token,
        obtainedAt: sim.clock.now(),
        expiresAt: new Date(sim.clock.now().getTime() + 60 * DAY),
      },
      'imported',
    );

    const redis = redisForTest('metricsworker');
    workers = await startFeedWorkers({ ...deps, redis });
    syncQueue = createQueue(QUEUE.feedSync, redis);
    publishQueue = createQueue(QUEUE.publishFeed, redis);
    mirrorQueue = createQueue(QUEUE.mirrorMedia, redis);
    syncEvents = new QueueEvents(QUEUE.feedSync, { connection: { url: redis.url }, prefix: redis.prefix });
    publishEvents = new QueueEvents(QUEUE.publishFeed, { connection: { url: redis.url }, prefix: redis.prefix });
    await Promise.all([syncEvents.waitUntilReady(), publishEvents.waitUntilReady()]);
  });

  afterAll(async () => {
    await workers?.close();
    for (const q of [syncQueue, publishQueue, mirrorQueue]) {
      await q?.obliterate({ force: true }).catch(() => undefined);
      await q?.close();
    }
    await Promise.all([syncEvents?.close(), publishEvents?.close()]);
    await sim?.close();
    await db?.end();
    await dropDb?.();
    await rm(storageDir, { recursive: true, force: true });
  });

  it('a sync counts platform calls by operation, a sync duration with outcome ok, and every image upload with its bytes', async () => {
    const job = await syncQueue.add(QUEUE.feedSync, { accountId });
    const result = (await job.waitUntilFinished(syncEvents, 20_000)) as FeedSyncReturn;
    expect(result.outcome).toBe('synced');
    if (result.outcome !== 'synced') return;
    expect(result.pages).toBeGreaterThan(1);
    const parent = await Job.fromId(publishQueue, result.publishJobId!);
    expect(((await parent!.waitUntilFinished(publishEvents, 20_000)) as { outcome: string }).outcome).toBe('written');

    const m = await scrape();
    // One request per page, each reported once.
    expect(value(m, 'feedmirror_platform_calls_total', { operation: 'media_list', outcome: 'ok' })).toBe(result.pages);
    expect(
      value(m, 'feedmirror_sync_duration_seconds', { outcome: 'ok' }, 'feedmirror_sync_duration_seconds_count'),
    ).toBe(1);
    expect(
      value(m, 'feedmirror_sync_duration_seconds', { outcome: 'ok' }, 'feedmirror_sync_duration_seconds_sum'),
    ).toBeGreaterThan(0);

    // Every copy written is one upload, counted once, with the bytes stored for it.
    const { rows } = await db.query<{ n: string; bytes: string }>(
      'SELECT count(*) AS n, coalesce(sum(bytes), 0) AS bytes FROM media_copies WHERE account_id = $1',
      [accountId],
    );
    const copies = Number(rows[0]!.n);
    expect(copies).toBeGreaterThan(5);
    expect(copies).toBe(result.copyJobs);
    expect(value(m, 'feedmirror_images_copied_total')).toBe(copies);
    expect(value(m, 'feedmirror_images_copied_bytes_total')).toBe(Number(rows[0]!.bytes));
    expect(value(m, 'feedmirror_images_copied_bytes_total')).toBeGreaterThan(0);
    for (const queue of [QUEUE.feedSync, QUEUE.mirrorMedia, QUEUE.publishFeed])
      expect(value(m, 'feedmirror_job_failures_total', { queue })).toBe(0);
  });

  it('an unchanged resync uploads nothing: images copied stays where it was', async () => {
    const before = value(await scrape(), 'feedmirror_images_copied_total');
    sim.clock.advance(60 * 60 * 1000);
    const job = await syncQueue.add(QUEUE.feedSync, { accountId });
    const result = (await job.waitUntilFinished(syncEvents, 20_000)) as FeedSyncReturn;
    expect(result.outcome === 'synced' && result.copies.length).toBe(0);
    const m = await scrape();
    expect(value(m, 'feedmirror_images_copied_total')).toBe(before);
    expect(
      value(m, 'feedmirror_sync_duration_seconds', { outcome: 'ok' }, 'feedmirror_sync_duration_seconds_count'),
    ).toBe(2);
  });

  it('a failed job is counted under its queue', async () => {
    const before = value(await scrape(), 'feedmirror_job_failures_total', { queue: QUEUE.feedSync });
    // A payload the processor refuses: the job fails for real in the worker.
    const job = await syncQueue.add(QUEUE.feedSync, { accountId: '../not an id' }, { attempts: 1 });
    await expect(job.waitUntilFinished(syncEvents, 20_000)).rejects.toThrow(/account id/);
    await until(
      async () => value(await scrape(), 'feedmirror_job_failures_total', { queue: QUEUE.feedSync }) === before + 1,
      'the failure to be counted',
      5_000,
    );
  });

  it('R-OWN-1: a rate-limited listing is counted as a rate_limited call, a rate-limit wait and a rate_limited sync', async () => {
    const failuresBefore = value(await scrape(), 'feedmirror_job_failures_total', { queue: QUEUE.feedSync });
    sim.clock.advance(60 * 60 * 1000);
    sim.injectFault({ path: '/media', kind: 'rate-limit', code: 17 });
    const job = await syncQueue.add(QUEUE.feedSync, { accountId });
    // A user's own limit (code 17) delays only this job, by the platform's estimate.
    await until(async () => (await job.getState()) === 'delayed', 'the rate-limited job to be delayed', 20_000);
    const m = await scrape();
    expect(value(m, 'feedmirror_platform_calls_total', { operation: 'media_list', outcome: 'rate_limited' })).toBe(1);
    expect(value(m, 'feedmirror_rate_limit_waits_total', { operation: 'media_list' })).toBe(1);
    expect(
      value(
        m,
        'feedmirror_sync_duration_seconds',
        { outcome: 'rate_limited' },
        'feedmirror_sync_duration_seconds_count',
      ),
    ).toBe(1);
    // A back-off is not a failure.
    expect(value(m, 'feedmirror_job_failures_total', { queue: QUEUE.feedSync })).toBe(failuresBefore);
    await job.remove().catch(() => undefined);
  });
});

describe('`feedmirror worker` with METRICS_PORT', () => {
  const key = randomBytes(32).toString('base64');
  const T0 = Date.UTC(2026, 4, 1, 10);
  let sim: Simulator;
  let db: pg.Pool;
  let drop: () => Promise<void>;
  let worker: Spawned | undefined;
  let feedSync: Queue | undefined;

  afterAll(async () => {
    if (worker) {
      worker.child.kill('SIGKILL');
      await worker.exited;
    }
    await feedSync?.obliterate({ force: true }).catch(() => undefined);
    await feedSync?.close();
    await db?.end();
    await drop?.();
    await sim?.close();
  });

  it('serves /metrics (strictly parseable, with the platform calls of its own jobs) and /healthz', async () => {
    registerSecretForAudit(key);
    sim = await startSimulator({ start: T0 });
    const clockFile = join(mkdtempSync(join(tmpdir(), 'fm-clock-')), 'now');
    FileClock.write(clockFile, T0);
    const database = await freshDatabase('metricsproc');
    drop = database.drop;
    db = createPool(database.url);
    await migrate(db);
    const cipher = TokenCipher.fromEnv(key);
    const platform = simPlatformClient(sim, { appId: sim.appId, appSecret: sim.appSecret, sleep: noSleep });
    const acc = sim.createAccount({ username: 'metrics.proc', posts: 2 });
    await connectWithShortLivedToken(
      { db, cipher, platform, clock: sim.clock, logger: silentLogger },
      sim.issueShortLivedToken(acc.id),
    );

    const redis = redisForTest('metricsproc');
    feedSync = createQueue(QUEUE.feedSync, redis);
    const storageDir = mkdtempSync(join(tmpdir(), 'fm-storage-'));
    // Port 0: any free port; the worker logs the address it bound.
    worker = spawnFeedmirror(
      ['worker'],
      workerEnv({
        sim,
        databaseUrl: database.url,
        redis,
        key,
        clockFile,
        storageDir,
        extra: { METRICS_PORT: '0', METRICS_HOST: '127.0.0.1' },
      }),
    );
    let url = '';
    await until(
      () => {
        const m = /"url":"(http:\/\/127\.0\.0\.1:\d+)".*worker metrics listening/.exec(worker!.output());
        if (m) url = m[1]!;
        return url !== '';
      },
      'the worker metrics listener',
      30_000,
    );

    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });

    // The start-up catch-up schedules the account; its first feed-sync runs at once.
    let families = new Map<string, MetricFamily>();
    await until(
      async () => {
        const res = await fetch(`${url}/metrics`);
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
        families = parseExposition(await res.text());
        return (
          value(
            families,
            'feedmirror_sync_duration_seconds',
            { outcome: 'ok' },
            'feedmirror_sync_duration_seconds_count',
          ) >= 1
        );
      },
      'the worker to count its first sync',
      30_000,
    );
    expect(
      value(families, 'feedmirror_platform_calls_total', { operation: 'media_list', outcome: 'ok' }),
    ).toBeGreaterThanOrEqual(1);
    // Process metrics under the same prefix; the cluster-wide gauges stay the server's.
    expect(families.has('feedmirror_process_cpu_seconds_total')).toBe(true);
    expect(families.get('feedmirror_jobs')?.samples ?? []).toEqual([]);
  }, 60_000);
});
