import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { pino } from 'pino';
import type { Queue } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import type { FeedDeps } from '../../src/feeds/deps.ts';
import { createMetrics } from '../../src/metrics/index.ts';
import { mirrorLimitsFromConfig } from '../../src/mirror/copy.ts';
import { AccountCallPacer } from '../../jobs/call-pacer.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { createStorage } from '../../src/storage/index.ts';
import { upsertAccount } from '../../src/store/accounts.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { saveToken } from '../../src/store/tokens.ts';
import { DAY, systemClock } from '../../src/util/clock.ts';
import { startFeedWorkers, type RunningFeedWorkers } from '../../jobs/feed-workers.ts';
import { createQueue, QUEUE, redisClient } from '../../jobs/queues.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { until } from '../support/wait.ts';
import { simPlatformClient } from '../support/sim-platform.ts';

/**
 * R-OWN-1: usage driven to the platform's limits. The simulator throttles as the platform does
 * (4 calls per second for the app: code 4; 1 per second per user: code 17; windows on the wall
 * clock, because BullMQ's delays are real time), feedmirror paces each account to 1 call per
 * second itself, and slows down when X-App-Usage passes 80%. Every sync must finish, none may
 * fail, and no job may wait while holding its lock (no "Missing lock", no stalled job).
 */
const ACCOUNTS = 6;
const SYNCS_PER_ACCOUNT = 2;
const WINDOW_MS = 1000;

describe('platform budget: pacing, slow-down, waits outside the job (R-OWN-1)', () => {
  let sim: Simulator;
  let db: pg.Pool;
  let drop: () => Promise<void>;
  let redisConn: Redis | Cluster;
  let workers: RunningFeedWorkers | undefined;
  let syncQueue: Queue;
  const redis = redisForTest('budget');
  const lines: string[] = [];
  const metrics = createMetrics();
  const accountIds: string[] = [];

  beforeAll(async () => {
    sim = await startSimulator({
      limits: { appCallsPerHour: 4, callsPerUserHour: 1, windowMs: WINDOW_MS, wallClock: true },
    });
    const database = await freshDatabase('budget');
    drop = database.drop;
    db = createPool(database.url, { max: 5 });
    await migrate(db);
    redisConn = redisClient(redis);
    const cipher = TokenCipher.fromEnv(randomBytes(32).toString('base64'));
    const config = loadConfig({
      STORAGE_URL: mkdtempSync(join(tmpdir(), 'fm-budget-')),
      MEDIA_ALLOWED_HOSTS: sim.imageHost,
    });
    const logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(s) });
    const platform = simPlatformClient(sim, {
      clock: systemClock,
      maxRetries: 0,
      logger,
      pacer: new AccountCallPacer({
        callsPerHour: 1,
        windowMs: WINDOW_MS,
        prefix: redis.prefix,
        redis: () => redisConn,
      }),
    });
    const deps: FeedDeps = {
      db,
      cipher,
      platform,
      storage: createStorage(config),
      limits: mirrorLimitsFromConfig(config),
      clock: systemClock,
      logger,
      metrics,
    };
    for (let i = 0; i < ACCOUNTS; i++) {
      // No posts: one listing call per sync, so the calls are what is measured, not image work.
      const acc = sim.createAccount({ username: `budget.${i}`, posts: 0 });
      await upsertAccount(db, { id: acc.id, username: acc.username }, new Date());
      await saveToken(
        db,
        cipher,
        {
          accountId: acc.id,
          accessToken: sim.issueLongLivedToken(acc.id),
          obtainedAt: new Date(),
          expiresAt: new Date(Date.now() + 60 * DAY),
        },
        'imported',
      );
      accountIds.push(acc.id);
    }
    syncQueue = createQueue(QUEUE.feedSync, redis);
    workers = await startFeedWorkers({
      ...deps,
      redis,
      concurrency: { sync: 4 },
      platformWaits: { slowdownMaxMs: 300, slowdownPercent: 80 },
    });
  }, 60_000);

  afterAll(async () => {
    await workers?.close();
    for (const name of [QUEUE.feedSync, QUEUE.mirrorMedia, QUEUE.publishFeed]) {
      const q = name === QUEUE.feedSync ? syncQueue : createQueue(name, redis);
      await q?.obliterate({ force: true }).catch(() => undefined);
      await q?.close();
    }
    await redisConn?.quit();
    await sim?.close();
    await db?.end();
    await drop?.();
  });

  it('every sync finishes, none fails, calls are held back and slowed down, and no job waits holding its lock', async () => {
    const started = Date.now();
    const jobs = accountIds.flatMap((accountId) =>
      Array.from({ length: SYNCS_PER_ACCOUNT }, (_, n) => ({
        name: 'feed-sync',
        data: { accountId },
        opts: { jobId: `budget-${accountId}-${n}` },
      })),
    );
    await syncQueue.addBulk(jobs);
    await until(
      async () => (await syncQueue.getJobCounts('completed')).completed === jobs.length,
      'every sync to complete',
      60_000,
    );
    const elapsed = Date.now() - started;

    const counts = await syncQueue.getJobCounts('failed', 'completed', 'delayed', 'waiting', 'active');
    expect(counts.failed).toBe(0);
    expect(counts.completed).toBe(jobs.length);

    const graph = sim.requests.filter((r) => r.host === 'graph');
    const ok = graph.filter((r) => r.status === 200);
    const throttled = graph.filter((r) => r.status === 400);
    // One listing call per sync went through; nothing was asked twice after succeeding.
    expect(ok.length).toBe(jobs.length);
    // The app allows 4 calls a second: 12 calls cannot have taken less than 2 windows.
    expect(elapsed).toBeGreaterThanOrEqual((jobs.length / 4 - 1) * WINDOW_MS);
    // Usage reached the platform's limit (it refused some calls), and the workers waited instead
    // of hammering: at most one refusal per job.
    expect(throttled.length).toBeGreaterThan(0);
    expect(throttled.length).toBeLessThanOrEqual(jobs.length);

    const waits =
      (await metrics.registry.getSingleMetric('feedmirror_rate_limit_waits_total')?.get())?.values.reduce(
        (a, v) => a + v.value,
        0,
      ) ?? 0;
    expect(waits).toBeGreaterThan(0);
    const logs = lines.map((l) => JSON.parse(l) as { msg: string; paced?: boolean; err?: { message?: string } });
    // The account's second sync was held back by feedmirror's own pacing before the platform refused it.
    expect(logs.some((l) => l.msg.includes('job is delayed') && l.paced === true)).toBe(true);
    // X-App-Usage passed 80%: the queue slowed down.
    expect(logs.some((l) => l.msg.includes('slowing down'))).toBe(true);
    // No job lost its lock while waiting, none stalled, none failed.
    const bad = logs.filter((l) =>
      /missing lock|stalled|job failed|worker error/i.test(`${l.msg} ${l.err?.message ?? ''}`),
    );
    expect(bad).toEqual([]);
  }, 90_000);
});
