import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { Queue } from 'bullmq';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { spawnFeedmirror, type Spawned } from '../support/processes.ts';
import { until } from '../support/wait.ts';
import { freePort, requireRedisServer, spawnRedis, stopRedis } from '../support/redis-server.ts';
import { workerEnv } from '../support/worker-env.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { getTokenInfo, loadToken } from '../../src/store/tokens.ts';
import { listEvents } from '../support/events.ts';
import { PlatformClient } from '../../src/platform/client.ts';
import { connectWithShortLivedToken } from '../../src/accounts/connect.ts';
import { createLogger } from '../../src/util/logger.ts';
import { DAY, FileClock } from '../../src/util/clock.ts';
import { createQueue, QUEUE } from '../../jobs/queues.ts';
import { noSleep, simPlatformClient } from '../support/sim-platform.ts';

/**
 * A worker killed (SIGKILL) between the platform's answer to a refresh and the database write,
 * and Redis restarted under a running worker.
 */
const logger = createLogger({ name: 'worker-resilience' });
const T0 = Date.UTC(2026, 4, 1, 10);

describe('worker resilience', () => {
  let sim: Simulator;
  let db: pg.Pool;
  let drop: () => Promise<void>;
  let cipher: TokenCipher;
  let platform: PlatformClient;
  let accountId: string;
  let databaseUrl: string;
  const key = randomBytes(32).toString('base64');
  const clockFile = join(mkdtempSync(join(tmpdir(), 'fm-clock-')), 'now');
  const running: Spawned[] = [];
  const queues: Queue[] = [];

  beforeEach(async () => {
    registerSecretForAudit(key);
    sim = await startSimulator({ start: T0 });
    FileClock.write(clockFile, T0);
    const database = await freshDatabase('resilience');
    databaseUrl = database.url;
    drop = database.drop;
    db = createPool(database.url, { logger });
    await migrate(db, { logger });
    cipher = TokenCipher.fromEnv(key);
    platform = simPlatformClient(sim, { appId: sim.appId, appSecret: sim.appSecret, logger, sleep: noSleep });
    const acc = sim.createAccount({ username: 'florist', posts: 2 });
    accountId = (
      await connectWithShortLivedToken(
        { db, cipher, platform, clock: sim.clock, logger },
        sim.issueShortLivedToken(acc.id),
      )
    ).id;
  });

  afterEach(async () => {
    for (const w of running.splice(0)) {
      w.child.kill('SIGKILL');
      await w.exited;
    }
    for (const q of queues.splice(0)) {
      await q.obliterate({ force: true }).catch(() => undefined);
      await q.close();
    }
    await db.end();
    await drop();
    await sim.close();
  });

  function startWorker(redis: { url: string; prefix: string }): Spawned {
    const w = spawnFeedmirror(
      ['worker'],
      workerEnv({ sim, databaseUrl, redis, key, clockFile, storageDir: mkdtempSync(join(tmpdir(), 'fm-storage-')) }),
    );
    running.push(w);
    return w;
  }

  function moveTo(at: number) {
    sim.clock.set(at);
    FileClock.write(clockFile, at);
  }

  it('a worker killed after the platform answered a refresh but before the write: the stored token still works and the next run succeeds (R-TOK-6, R-TOK-7)', async () => {
    const redis = redisForTest('sigkill');
    const before = await loadToken(db, cipher, accountId);
    moveTo(T0 + 30 * DAY);
    // The platform issues the new token, but its answer never reaches the worker.
    sim.injectFault({ path: '/refresh_access_token', kind: 'answered-unsent', times: 1 });
    const first = startWorker(redis); // its start-up catch-up runs the due refresh check at once
    await until(
      () => sim.requests.some((r) => r.path.endsWith('/refresh_access_token') && r.status === 200),
      'the platform to answer the refresh',
      30_000,
    );
    first.child.kill('SIGKILL');
    await first.exited;
    running.splice(running.indexOf(first), 1);

    // Nothing was written: the stored token is the old one, and the platform still accepts it.
    const after = await loadToken(db, cipher, accountId);
    expect(after).toEqual(before);
    await expect(platform.getProfile(after!.accessToken)).resolves.toMatchObject({ id: accountId });

    // The next run refreshes it.
    startWorker(redis);
    const tokenRefresh = createQueue(QUEUE.tokenRefresh, redis);
    queues.push(tokenRefresh);
    await tokenRefresh.add(QUEUE.tokenRefresh, { accountId }, { jobId: 'after-crash' });
    await until(
      async () => (await getTokenInfo(db, accountId))!.generation === before!.generation + 1,
      'the refresh after the crash',
      30_000,
    );
    const info = await getTokenInfo(db, accountId);
    expect(info!.expiresAt.getTime()).toBeGreaterThan(before!.expiresAt.getTime());
    expect((await listEvents(db, accountId)).filter((e) => e.kind === 'refreshed')).toHaveLength(1);
  }, 60_000);

  it('Redis restarted under a running worker: it reconnects, the schedules are still there and jobs run (R-TOK-8)', async () => {
    requireRedisServer();
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'fm-redis-'));
    const startRedis = () => spawnRedis(port, dir);
    let redisProc = await startRedis();
    try {
      const redis = { url: `redis://127.0.0.1:${port}`, prefix: 'fmtest:restart' };
      const worker = startWorker(redis);
      const tokenRefresh = createQueue(QUEUE.tokenRefresh, redis);
      const feedSync = createQueue(QUEUE.feedSync, redis);
      queues.push(tokenRefresh, feedSync);
      await until(() => worker.output().includes('worker started'), 'the worker to start', 30_000);
      await until(async () => (await tokenRefresh.getJobSchedulers()).length === 1, 'the refresh scheduler');
      expect((await feedSync.getJobSchedulers()).map((s) => s.key)).toEqual([`feed-sync:${accountId}`]);

      await stopRedis(redisProc);
      redisProc = await startRedis();

      // Same schedules after the restart (Redis persisted them), and the worker takes new jobs.
      expect((await tokenRefresh.getJobSchedulers()).map((s) => s.key)).toEqual([`token-refresh:${accountId}`]);
      expect((await feedSync.getJobSchedulers()).map((s) => s.key)).toEqual([`feed-sync:${accountId}`]);
      moveTo(T0 + 30 * DAY);
      const job = await tokenRefresh.add(QUEUE.tokenRefresh, { accountId }, { jobId: 'after-restart' });
      await until(async () => (await job.getState()) === 'completed', 'the job after the restart to complete', 30_000);
      expect(((await tokenRefresh.getJob('after-restart'))!.returnvalue as { outcome: string }).outcome).toBe(
        'refreshed',
      );
      expect(worker.child.exitCode).toBeNull(); // the worker survived the outage
    } finally {
      for (const q of queues.splice(0)) await q.close().catch(() => undefined);
      await stopRedis(redisProc);
    }
  }, 60_000);
});
