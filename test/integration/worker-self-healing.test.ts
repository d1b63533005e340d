import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import type pg from 'pg';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { upsertAccount } from '../../src/store/accounts.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createPool } from '../../src/store/db.ts';
import { MIGRATION_LOCK_KEY, migrate } from '../../src/store/migrate.ts';
import { saveToken } from '../../src/store/tokens.ts';
import { DAY, FileClock } from '../../src/util/clock.ts';
import { refreshSchedulerId, syncSchedulerId } from '../../jobs/schedules.ts';
import { createQueue, QUEUE } from '../../jobs/queues.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { spawnFeedmirror, type Spawned } from '../support/processes.ts';
import { freePort, requireRedisServer, spawnRedis, stopRedis } from '../support/redis-server.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { dropQueues } from '../support/queues.ts';
import { until } from '../support/wait.ts';
import { workerEnv } from '../support/worker-env.ts';

/**
 * A real `feedmirror worker` process: Redis loses everything under it (FLUSHDB) and the schedules
 * come back from PostgreSQL within RECONCILE_INTERVAL_SECONDS; on SIGTERM a job that never ends
 * is cut off after SHUTDOWN_TIMEOUT_SECONDS and the worker exits.
 */
const T0 = Date.UTC(2026, 6, 1, 10);
const RECONCILE_SECONDS = 2;

describe('worker self-healing and bounded shutdown', () => {
  let sim: Simulator;
  let db: pg.Pool;
  let databaseUrl: string;
  let drop: () => Promise<void>;
  const running: Spawned[] = [];
  const dirs: string[] = [];
  const key = randomBytes(32).toString('base64');
  const clockFile = join(mkdtempSync(join(tmpdir(), 'fm-heal-clock-')), 'now');
  const accounts: string[] = [];
  const tokenOf = new Map<string, string>();

  beforeAll(async () => {
    registerSecretForAudit(key);
    sim = await startSimulator({ start: T0 });
    FileClock.write(clockFile, T0);
    const database = await freshDatabase('selfheal');
    databaseUrl = database.url;
    drop = database.drop;
    db = createPool(database.url, { max: 3 });
    await migrate(db);
    const cipher = TokenCipher.fromEnv(key);
    for (const name of ['heal.one', 'heal.two']) {
      const acc = sim.createAccount({ username: name, posts: 2 });
      const token = sim.issueLongLivedToken(acc.id);
      registerSecretForAudit(token);
      await upsertAccount(db, { id: acc.id, username: acc.username }, sim.clock.now());
      await saveToken(
        db,
        cipher,
        { accountId: acc.id, accessToken: token, obtainedAt: sim.clock.now(), expiresAt: new Date(T0 + 60 * DAY) },
        'imported',
      );
      accounts.push(acc.id);
      tokenOf.set(acc.id, token);
    }
  }, 60_000);

  afterEach(async () => {
    for (const w of running.splice(0)) {
      if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
      await w.exited;
    }
    // A worker killed while leading leaves the reconciler's lease to lapse on its own (its time
    // to live, up to a minute): the next test's worker would not lead until then.
    await db.query('DELETE FROM leases');
  });

  afterAll(async () => {
    await db?.end();
    await drop?.();
    await sim?.close();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  function startWorker(redis: { url: string; prefix: string }, extra: Record<string, string> = {}): Spawned {
    const storageDir = mkdtempSync(join(tmpdir(), 'fm-heal-storage-'));
    dirs.push(storageDir);
    const w = spawnFeedmirror(
      ['worker'],
      workerEnv({
        sim,
        databaseUrl,
        redis,
        key,
        clockFile,
        storageDir,
        extra: { MEDIA_VARIANT_WIDTHS: '160', ...extra },
      }),
    );
    running.push(w);
    return w;
  }

  /** Listing calls the platform received for one account (told apart by its token). */
  const listings = (accountId: string) =>
    sim.requests.filter((r) => r.path.endsWith('/me/media') && r.query.access_token === tokenOf.get(accountId)).length;

  it('Redis flushed under a running worker: within RECONCILE_INTERVAL_SECONDS every active account has its schedulers again and its next sync runs', async () => {
    requireRedisServer();
    const port = await freePort();
    const redisProc: ChildProcess | undefined = await spawnRedis(port);
    const redis = { url: `redis://127.0.0.1:${port}`, prefix: 'fmtest:heal' };
    const tokenRefresh = createQueue(QUEUE.tokenRefresh, redis);
    const feedSync = createQueue(QUEUE.feedSync, redis);
    const maintenance = createQueue(QUEUE.maintenance, redis);
    const admin = new Redis(port, '127.0.0.1');
    try {
      // Syncs every minute: a repaired scheduler keeps its account's place in the interval (spread by
      // a hash of the id, as scheduleAccount does), so the next sync comes within a minute.
      const worker = startWorker(redis, {
        RECONCILE_INTERVAL_SECONDS: String(RECONCILE_SECONDS),
        SYNC_INTERVAL_MINUTES: '1',
        METRICS_PORT: '0',
      });
      await until(() => worker.output().includes('worker started'), 'the worker to start', 30_000);
      const schedulerIds = async () =>
        [...(await tokenRefresh.getJobSchedulers()), ...(await feedSync.getJobSchedulers())].map((s) => s.key).sort();
      const expected = accounts.flatMap((id) => [refreshSchedulerId(id), syncSchedulerId(id)]).sort();
      await until(async () => (await schedulerIds()).length === expected.length, 'the schedulers at start');
      // Each account's first sync (the scheduler's first run is immediate).
      await until(() => accounts.every((id) => listings(id) >= 1), 'the first syncs', 30_000);

      await admin.flushdb();
      expect(await schedulerIds()).toEqual([]);
      const before = new Map(accounts.map((id) => [id, listings(id)]));
      const flushedAt = Date.now();

      await until(
        async () => JSON.stringify(await schedulerIds()) === JSON.stringify(expected),
        'the schedulers to come back',
        (RECONCILE_SECONDS + 8) * 1000,
      );
      // Within the interval (plus the time a tick takes on a loaded machine).
      expect(Date.now() - flushedAt).toBeLessThan((RECONCILE_SECONDS + 5) * 1000);
      // And every account's next sync runs.
      await until(() => accounts.every((id) => listings(id) > before.get(id)!), 'the next syncs', 80_000).catch(
        (err: Error) => {
          throw new Error(`${err.message}; the worker said:\n${worker.output().split('\n').slice(-25).join('\n')}`);
        },
      );
      // The day's jobs are back too, and the repairs are logged and counted.
      // (Waited for, not read once: on a loaded machine the pass that adds them may be the next one.)
      const dailyId = `expiry-sweep-${new Date(T0).toISOString().slice(0, 10)}`;
      await until(async () => (await maintenance.getJob(dailyId)) !== undefined, `${dailyId} back`, 20_000).catch(
        (err: Error) => {
          throw new Error(`${err.message}; the worker said:\n${worker.output().split('\n').slice(-25).join('\n')}`);
        },
      );
      await until(() => /reconciler repaired \d+ schedule/.test(worker.output()), 'the repairs in the log');
      const metricsUrl = /"url":"(http:\/\/127\.0\.0\.1:\d+)"[^\n]*worker metrics listening/.exec(worker.output())?.[1];
      expect(metricsUrl).toBeDefined();
      const text = await (await fetch(`${metricsUrl}/metrics`)).text();
      const added = Number(/feedmirror_schedule_repairs_total\{kind="scheduler_added"\} (\d+)/.exec(text)?.[1]);
      expect(added).toBe(expected.length);
      expect(worker.child.exitCode).toBeNull();
    } finally {
      admin.disconnect();
      for (const q of [tokenRefresh, feedSync, maintenance]) await q.close().catch(() => undefined);
      if (redisProc) await stopRedis(redisProc);
    }
  }, 150_000);

  it('Redis restarted without its data: the schedules come back right after it returns, long before the interval', async () => {
    requireRedisServer();
    const port = await freePort();
    let redisProc: ChildProcess | undefined = await spawnRedis(port);
    const redis = { url: `redis://127.0.0.1:${port}`, prefix: 'fmtest:back' };
    const tokenRefresh = createQueue(QUEUE.tokenRefresh, redis);
    const feedSync = createQueue(QUEUE.feedSync, redis);
    try {
      // An interval far beyond the test: only Redis's return can explain a repair.
      const worker = startWorker(redis, { RECONCILE_INTERVAL_SECONDS: '3600' });
      await until(() => worker.output().includes('worker started'), 'the worker to start', 30_000);
      const schedulerIds = async () =>
        [...(await tokenRefresh.getJobSchedulers()), ...(await feedSync.getJobSchedulers())].map((s) => s.key).sort();
      const expected = accounts.flatMap((id) => [refreshSchedulerId(id), syncSchedulerId(id)]).sort();
      await until(async () => (await schedulerIds()).length === expected.length, 'the schedulers at start');

      // Stopped, and started again from an empty folder: everything Redis held is gone.
      await stopRedis(redisProc);
      redisProc = await spawnRedis(port);
      const backAt = Date.now();
      await until(
        async () => JSON.stringify(await schedulerIds().catch(() => [])) === JSON.stringify(expected),
        'the schedulers after Redis came back',
        60_000, // a loaded machine: still far from the hour-long interval
      ).catch((err: Error) => {
        throw new Error(`${err.message}; the worker said:\n${worker.output().split('\n').slice(-15).join('\n')}`);
      });
      expect(Date.now() - backAt).toBeLessThan(60_000); // not the hour-long interval
      await until(
        () => worker.output().includes('Redis is back: reconciling the schedules now'),
        'the reason in the log',
      );
      expect(worker.child.exitCode).toBeNull();
    } finally {
      for (const q of [tokenRefresh, feedSync]) await q.close().catch(() => undefined);
      if (redisProc) await stopRedis(redisProc);
    }
  }, 150_000);

  it('SIGTERM while the worker is still starting: it finishes its start, then shuts down as on any SIGTERM (exit 0), not killed on the spot', async () => {
    const redis = redisForTest('startstop');
    // Another process holds the migration lock: the worker's start waits there, its jobs may
    // already run meanwhile in production (BullMQ takes them as soon as a Worker exists).
    const holder = await db.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`);
      const worker = startWorker(redis);
      await until(
        () => worker.output().includes('another process is migrating the database'),
        'the start waiting for the migration lock',
        30_000,
      );
      worker.child.kill('SIGTERM');
      await holder.query('COMMIT');
      const code = await worker.exited;
      expect(worker.child.signalCode).toBeNull();
      expect(code).toBe(0);
      expect(worker.output()).toContain('shutting down: running jobs may finish');
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
      await dropQueues(redis);
    }
  }, 60_000);

  it('SIGTERM with a job that never ends: the worker waits SHUTDOWN_TIMEOUT_SECONDS, logs the job it cut off, and exits', async () => {
    const redis = redisForTest('shutdown');
    // The listing of the first account never answers (and the HTTP timeout is far away).
    const stuck = accounts[0]!;
    sim.injectFault({
      match: (r) => r.path.endsWith('/me/media') && r.query.access_token === tokenOf.get(stuck),
      kind: 'timeout',
      times: 1,
    });
    const seen = listings(stuck);
    const worker = startWorker(redis, { SHUTDOWN_TIMEOUT_SECONDS: '2', HTTP_TIMEOUT_MS: '600000' });
    await until(() => listings(stuck) > seen, 'the stuck listing to start', 30_000);
    const syncQueue = createQueue(QUEUE.feedSync, redis);
    try {
      await until(async () => (await syncQueue.getActiveCount()) >= 1, 'the sync job to be active');
      const signalledAt = Date.now();
      worker.child.kill('SIGTERM');
      const code = await worker.exited;
      const took = Date.now() - signalledAt;
      expect(code).toBe(0);
      expect(took).toBeGreaterThanOrEqual(2_000); // it gave the job its time...
      expect(took).toBeLessThan(12_000); // ...and no more (2 s, plus closing, plus the exit guard)
      const out = worker.output();
      expect(out).toMatch(/shutdown timeout: 1 running job\(s\) cut off/);
      expect(out).toContain(`"accountId":"${stuck}"`);
      expect(out).toContain('"name":"feed-sync"');
    } finally {
      await syncQueue.obliterate({ force: true }).catch(() => undefined);
      await syncQueue.close();
    }
  }, 60_000);
});
