import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { upsertAccount } from '../../src/store/accounts.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { getTokenInfo, saveToken } from '../../src/store/tokens.ts';
import { connectWithShortLivedToken } from '../../src/accounts/connect.ts';
import { DAY, FileClock } from '../../src/util/clock.ts';
import { createLogger } from '../../src/util/logger.ts';
import { hashTag } from '../../src/util/redis-target.ts';
import { AppContext } from '../../src/cli/context.ts';
import { LoginThrottle } from '../../src/http/throttle.ts';
import { readiness } from '../../src/http/health.ts';
import { RedisSessionStore, newSessionId } from '../../src/http/auth/session-store.ts';
import { AccountCallPacer } from '../../jobs/call-pacer.ts';
import { JOBS } from '../../jobs/catalogue.ts';
import { enqueue } from '../../jobs/enqueue.ts';
import { refreshSchedulerId, syncSchedulerId } from '../../jobs/schedules.ts';
import { describeRedis, pingRedis, redisClient, type RedisClient } from '../../jobs/queues.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { spawnFeedmirror, type Spawned } from '../support/processes.ts';
import { startRedisCluster, type LocalCluster } from '../support/redis-cluster.ts';
import { freshDatabase } from '../support/services.ts';
import { until } from '../support/wait.ts';
import { workerEnv } from '../support/worker-env.ts';

/**
 * R-SCL-1: feedmirror on a Redis Cluster of three masters, chosen by REDIS_URL=redis+cluster://.
 * A real `feedmirror worker` process connects to it; an account is connected, synced (its feed
 * published) and an old token refreshed; the master holding feedmirror's slot is restarted
 * without its data and the reconciler rebuilds the schedules; sessions, the login throttle and
 * the call pacer (multi-key transactions and scripts of our own) run on a cluster client. Every
 * key carries the `{prefix}` hash tag: without it BullMQ's scripts and our transactions fail
 * with CROSSSLOT.
 */
const T0 = Date.UTC(2026, 6, 1, 10);
const logger = createLogger({ level: 'silent' });

describe('Redis Cluster (R-SCL-1)', () => {
  let cluster: LocalCluster;
  let sim: Simulator;
  let ctx: AppContext;
  let drop: () => Promise<void>;
  let worker: Spawned | undefined;
  let env: Record<string, string>;
  const storageDir = mkdtempSync(join(tmpdir(), 'fm-cluster-storage-'));
  const clockFile = join(mkdtempSync(join(tmpdir(), 'fm-cluster-clock-')), 'now');
  const key = randomBytes(32).toString('base64');
  const clients: RedisClient[] = [];

  beforeAll(async () => {
    registerSecretForAudit(key);
    [cluster, sim] = await Promise.all([startRedisCluster(), startSimulator({ start: T0 })]);
    FileClock.write(clockFile, T0);
    const database = await freshDatabase('rediscluster');
    drop = database.drop;
    env = workerEnv({
      sim,
      databaseUrl: database.url,
      // The prefix as an operator leaves it: no braces. feedmirror adds the hash tag.
      redis: { url: cluster.url, prefix: `fmtest-cluster-${randomBytes(3).toString('hex')}` },
      key,
      clockFile,
      storageDir,
      extra: { RECONCILE_INTERVAL_SECONDS: '2', MEDIA_VARIANT_WIDTHS: '160', LOG_LEVEL: 'info' },
    });
    ctx = new AppContext(env, { logger });
  }, 60_000);

  afterAll(async () => {
    if (worker && worker.child.exitCode === null) {
      worker.child.kill('SIGKILL');
      await worker.exited;
    }
    for (const c of clients) c.disconnect();
    await ctx?.close();
    await drop?.();
    await sim?.close();
    await cluster?.stop();
    await rm(storageDir, { recursive: true, force: true });
  });

  it('the configuration picks the cluster and hash-tags the prefix; the probe names every node', async () => {
    expect(hashTag(`${ctx.redis.prefix}:feed-sync:wait`)).toBe(env.REDIS_PREFIX);
    expect(describeRedis(ctx.redis)).toBe(`cluster ${cluster.ports.map((p) => `127.0.0.1:${p}`).join(',')}`);
    await pingRedis(ctx.redis);
    const down = await pingRedis({ url: 'redis+cluster://127.0.0.1:1,127.0.0.1:2', prefix: '{x}' }, 1_000).catch(
      (e: Error) => e,
    );
    expect((down as Error).message).toMatch(/^cannot reach Redis at cluster 127\.0\.0\.1:1,127\.0\.0\.1:2 \(/);
  });

  it('a worker on the cluster: connect, sync and publish, refresh; a master restarted empty and the reconciler rebuilds the schedules', async () => {
    const db: pg.Pool = await ctx.migratedDb();
    const cipher = TokenCipher.fromEnv(key);
    // An account whose token is 31 days old: a refresh check queued on the cluster refreshes it.
    const old = sim.createAccount({ username: 'cluster.old', posts: 2 });
    const oldToken = sim.issueLongLivedToken(old.id);
    registerSecretForAudit(oldToken);
    await upsertAccount(db, { id: old.id, username: old.username }, sim.clock.now());
    await saveToken(
      db,
      cipher,
      {
        accountId: old.id,
        accessToken: oldToken,
        obtainedAt: new Date(T0),
        expiresAt: new Date(T0 + 60 * DAY),
      },
      'imported',
    );
    // 31 days on, for the platform and for the worker: the token is due.
    sim.clock.set(new Date(T0 + 31 * DAY));
    FileClock.write(clockFile, T0 + 31 * DAY);

    worker = spawnFeedmirror(['worker'], env);
    await until(() => worker!.output().includes('worker started'), 'the worker to start', 40_000).catch((e: Error) => {
      throw new Error(`${e.message}; the worker said:\n${worker!.output().slice(-3000)}`);
    });

    // Connected through the platform's exchange; the lifecycle schedules it on the cluster.
    const acc = sim.createAccount({ username: 'cluster.new', posts: 3 });
    await ctx.readyQueues();
    await connectWithShortLivedToken(
      { db, cipher, platform: ctx.platform, clock: ctx.clock, logger, lifecycle: ctx.lifecycle },
      sim.issueShortLivedToken(acc.id),
    );
    const feedOf = (id: string) => join(storageDir, 'feeds', `${id}.json`);
    const fail = (e: Error) => {
      throw new Error(`${e.message}; the worker said:\n${worker!.output().slice(-3000)}`);
    };
    await until(() => existsSync(feedOf(acc.id)) && existsSync(feedOf(old.id)), 'both feeds published', 40_000).catch(
      fail,
    );
    await enqueue(ctx.queues, JOBS.tokenRefresh, { accountId: old.id });
    await until(
      async () => ((await getTokenInfo(db, old.id))?.obtainedAt.getTime() ?? 0) >= T0 + 31 * DAY,
      'the old token refreshed',
      20_000,
    ).catch(fail);

    // The master that serves feedmirror's one slot loses everything.
    const q = ctx.queues;
    const schedulerIds = async () =>
      [...(await q.tokenRefresh.getJobSchedulers()), ...(await q.feedSync.getJobSchedulers())].map((s) => s.key).sort();
    const expected = [acc.id, old.id].flatMap((id) => [refreshSchedulerId(id), syncSchedulerId(id)]).sort();
    expect(await schedulerIds()).toEqual(expected);
    const master = await cluster.masterOf(`${ctx.redis.prefix}:feed-sync:meta`);
    await cluster.restart(master);
    await until(
      async () => JSON.stringify(await schedulerIds().catch(() => [])) === JSON.stringify(expected),
      'the reconciler to rebuild the schedules',
      30_000,
    ).catch(fail);
    // The schedules were lost with the master (no persistence), so their return is the reconciler's.
    await until(() => /reconciler repaired \d+ schedule/.test(worker!.output()), 'the repair in the log');
    expect(worker.output()).not.toMatch(/CROSSSLOT/);
    expect(worker.child.exitCode).toBeNull();
  }, 120_000);

  it('sessions, the login throttle, readiness and the call pacer run their transactions and scripts on a cluster client', async () => {
    const client = redisClient(ctx.redis);
    clients.push(client);
    const prefix = ctx.redis.prefix;

    const sessions = new RedisSessionStore(client, prefix);
    const ids = [newSessionId(), newSessionId()];
    const record = { user: 'admin', credentials: 'c1', createdAt: T0, seenAt: T0 };
    for (const id of ids) await sessions.create(id, record, 60_000);
    await sessions.create(newSessionId(), record, 60_000); // prunes the user's set (EXISTS over several keys)
    expect(await sessions.get(ids[0]!)).toEqual(record);
    await sessions.touch(ids[0]!, T0 + 1, 60_000);
    await sessions.delete(ids[1]!); // MULTI over the record and the user's set
    expect(await sessions.get(ids[1]!)).toBeNull();
    expect(await sessions.deleteAllOf('admin')).toBe(2); // DEL over several keys

    const throttle = new LoginThrottle({ redis: client, prefix });
    expect((await throttle.check('203.0.113.9', 'admin')).allowed).toBe(true);
    for (let i = 0; i < throttle.limits.perClient; i++) await throttle.fail('203.0.113.9', 'admin');
    const verdict = await throttle.check('203.0.113.9', 'admin');
    expect(verdict.allowed).toBe(false);
    expect(verdict.retryAfterSeconds).toBeGreaterThan(0);
    expect((await throttle.check('198.51.100.7', 'admin')).allowed).toBe(true);

    // What /readyz asks of Redis, on the cluster.
    const ready = await readiness({ redis: client, timeoutMs: 5_000 });
    expect(ready.status).toBe('ready');
    expect(ready.checks.redis?.ok).toBe(true);

    const pacer = new AccountCallPacer({ callsPerHour: 2, prefix, redis: () => client });
    expect(await pacer.take('1789')).toBe(0);
    expect(await pacer.take('1789')).toBe(0);
    expect(await pacer.take('1789')).toBeGreaterThan(0);
  });
});
