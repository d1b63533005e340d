import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setAccountStatus, upsertAccount } from '../../src/store/accounts.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { saveToken } from '../../src/store/tokens.ts';
import { DAY, MINUTE, ManualClock } from '../../src/util/clock.ts';
import { createLogger } from '../../src/util/logger.ts';
import { createMetrics } from '../../src/metrics/index.ts';
import { JOBS } from '../../jobs/catalogue.ts';
import {
  refreshSchedulerId,
  scheduleAccount,
  scheduleAccounts,
  syncSchedulerId,
  unscheduleAccount,
  type ScheduleSettings,
} from '../../jobs/schedules.ts';
import { createQueues, type Queues } from '../../jobs/queues.ts';
import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import { RECONCILE_LEASE, Reconciler, reconcileOnce, type ReconcileDeps } from '../../jobs/reconcile.ts';
import { acquireLease } from '../../src/store/locks.ts';
import { until } from '../support/wait.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { dropQueues } from '../support/queues.ts';

/** The reconciler against real Postgres and Redis: what it repairs, and that one process leads. */
const cipher = TokenCipher.fromEnv(randomBytes(32).toString('base64'));
const logger = createLogger({ level: 'silent' });
const clock = new ManualClock(Date.UTC(2026, 7, 3, 9));
const settings: ScheduleSettings = { refreshCheckEveryMs: 6 * 60 * MINUTE, syncEveryMs: 60 * MINUTE };
let pool: pg.Pool;
let drop: () => Promise<void>;
let queues: Queues;
const metrics = createMetrics({ processMetrics: false });

const deps = (): ReconcileDeps => ({
  db: pool,
  queues,
  schedules: settings,
  dailyJobs: [JOBS.expirySweep, JOBS.housekeeping],
  clock,
  logger,
  repairs: metrics.scheduleRepairs,
});

async function account(id: string, status: 'active' | 'reauth_required' = 'active'): Promise<void> {
  await upsertAccount(pool, { id, username: `u${id}` }, clock.now());
  await saveToken(
    pool,
    cipher,
    {
      accountId: id,
      accessToken: `IGAA${randomBytes(16).toString('hex')}`,
      obtainedAt: clock.now(),
      expiresAt: new Date(clock.now().getTime() + 50 * DAY),
    },
    'imported',
  );
  if (status !== 'active') await setAccountStatus(pool, id, status, 'code 190', { at: clock.now() });
}

beforeAll(async () => {
  const d = await freshDatabase('reconcile');
  drop = d.drop;
  pool = createPool(d.url);
  await migrate(pool);
  queues = createQueues(redisForTest('reconcile'));
});

afterAll(async () => {
  await dropQueues(queues);
  await pool?.end();
  await drop?.();
});

describe("a worker's start: every account's schedulers, only what differs written", () => {
  it('leaves right schedulers alone, and writes those absent, different or without their next job', async () => {
    const ids = ['3001', '3002', '3003', '3004', '3005'];
    await scheduleAccounts(queues, ids, settings);
    const nextJob = async (id: string) => {
      const s = await queues.feedSync.getJobScheduler(syncSchedulerId(id));
      return s ? queues.feedSync.getJob(`repeat:${syncSchedulerId(id)}:${s.next}`) : undefined;
    };
    const before = await nextJob('3001');
    expect(before).toBeTruthy();

    // A second start over the same accounts writes nothing: the next jobs are the same jobs.
    expect(await scheduleAccounts(queues, ids, settings)).toEqual({ unchanged: 10, written: 0 });
    expect((await nextJob('3001'))?.timestamp).toBe(before!.timestamp);

    // 3002's sync scheduler is gone, 3003's runs at another interval, 3004's next job was lost
    // (its scheduler still in Redis), 3005's refresh check carries other job options.
    await queues.feedSync.removeJobScheduler(syncSchedulerId('3002'));
    await scheduleAccount(queues, '3003', { ...settings, syncEveryMs: 5 * MINUTE });
    // Lost as Redis loses data (BullMQ will not remove a scheduler's job): its hash and its place in the delayed set.
    const lost = (await nextJob('3004'))!.id!;
    await (
      await queues.feedSync.getBackend().client
    )
      .pipeline()
      .runCommand('del', [queues.feedSync.toKey(lost)])
      .runCommand('zrem', [queues.feedSync.toKey('delayed'), lost])
      .exec();
    expect(await nextJob('3004')).toBeFalsy();
    await queues.tokenRefresh.upsertJobScheduler(
      refreshSchedulerId('3005'),
      { every: settings.refreshCheckEveryMs },
      { name: JOBS.tokenRefresh.name, data: { accountId: '3005' }, opts: { attempts: 9 } },
    );
    const firstRunsBefore = (await queues.feedSync.getJobs(['waiting', 'prioritized', 'delayed'])).filter((j) =>
      j.id?.startsWith('first-'),
    ).length;

    expect(await scheduleAccounts(queues, ids, settings)).toEqual({ unchanged: 6, written: 4 });
    expect((await queues.feedSync.getJobScheduler(syncSchedulerId('3003')))?.every).toBe(60 * MINUTE);
    expect(await nextJob('3004')).toBeTruthy();
    expect((await queues.tokenRefresh.getJobScheduler(refreshSchedulerId('3005')))?.template?.opts?.attempts).toBe(
      JOBS.tokenRefresh.options.attempts,
    );
    // The absent one ran once now, as a new account's does; the others did not.
    const firstRuns = (await queues.feedSync.getJobs(['waiting', 'prioritized', 'delayed'])).filter((j) =>
      j.id?.startsWith('first-'),
    );
    expect(firstRuns.length - firstRunsBefore).toBe(1);
    expect(firstRuns.some((j) => j.data.accountId === '3002')).toBe(true);
    expect(await scheduleAccounts(queues, ids, settings)).toEqual({ unchanged: 10, written: 0 });

    // These accounts are not in PostgreSQL: leave no stray schedulers or jobs to the reconciler's tests.
    for (const id of ids) await unscheduleAccount(queues, id);
    for (const j of await queues.feedSync.getJobs(['waiting', 'prioritized', 'delayed'])) await j.remove();
    for (const j of await queues.tokenRefresh.getJobs(['waiting', 'prioritized', 'delayed'])) await j.remove();
  });
});

describe('schedule reconciler', () => {
  it("adds what is missing, fixes a wrong interval, removes the schedulers of accounts that are not active, queues the day's jobs", async () => {
    await account('2001');
    await account('2002');
    await account('2003', 'reauth_required');
    // 2001 is complete but its sync runs every 5 minutes instead of 60; 2002 has nothing;
    // 2003 waits for its owner (R-TOK-10) and still has schedulers; 2999 no longer exists.
    await scheduleAccount(queues, '2001', { ...settings, syncEveryMs: 5 * MINUTE });
    await scheduleAccount(queues, '2003', settings);
    await scheduleAccount(queues, '2999', settings);

    const repairs = await reconcileOnce(deps());
    const by = (kind: string) =>
      repairs
        .filter((r) => r.kind === kind)
        .map((r) => r.id)
        .sort();
    expect(by('scheduler_added')).toEqual([syncSchedulerId('2002'), refreshSchedulerId('2002')].sort());
    expect(by('scheduler_updated')).toEqual([syncSchedulerId('2001')]);
    expect(by('scheduler_removed')).toEqual(
      [refreshSchedulerId('2003'), syncSchedulerId('2003'), refreshSchedulerId('2999'), syncSchedulerId('2999')].sort(),
    );
    expect(by('daily_job_added')).toEqual(['expiry-sweep-2026-08-03', 'housekeeping-2026-08-03']);
    expect((await queues.feedSync.getJobScheduler(syncSchedulerId('2001')))?.every).toBe(60 * MINUTE);

    const counted = (await metrics.scheduleRepairs.get()).values.reduce((n, v) => n + v.value, 0);
    expect(counted).toBe(repairs.length);
    // Nothing left to do: a second pass repairs nothing.
    expect(await reconcileOnce(deps())).toEqual([]);
  });

  it('only one process in the cluster reconciles (the holder of the lease); another takes over when it stops', async () => {
    const a = new Reconciler(deps(), { intervalMs: 3_600_000 });
    const b = new Reconciler(deps(), { intervalMs: 3_600_000 });
    await queues.tokenRefresh.removeJobScheduler(refreshSchedulerId('2001'));
    expect(await a.trigger()).toEqual([{ kind: 'scheduler_added', id: refreshSchedulerId('2001') }]);
    expect(a.leading).toBe(true);
    expect(await b.trigger()).toBeUndefined(); // not the leader: does nothing
    expect(b.leading).toBe(false);
    await a.stop();
    await queues.tokenRefresh.removeJobScheduler(refreshSchedulerId('2001'));
    expect(await b.trigger()).toEqual([{ kind: 'scheduler_added', id: refreshSchedulerId('2001') }]);
    await b.stop();
  });

  it("Redis back while a killed leader's lease still runs: the survivor repairs once the lease lapses, not at its next interval", async () => {
    // The leader was SIGKILLed: its lease row stays until it lapses, and nothing renews it.
    const leaseMs = 1_500;
    expect(await acquireLease(pool, RECONCILE_LEASE, 'killed-worker', leaseMs)).not.toBeNull();
    const watch = new EventEmitter();
    const survivor = new Reconciler(deps(), {
      intervalMs: 3_600_000,
      leaseMs,
      redis: watch as unknown as Redis,
    });
    survivor.start();
    try {
      await queues.tokenRefresh.removeJobScheduler(refreshSchedulerId('2001'));
      watch.emit('reconnecting');
      watch.emit('ready'); // Redis came back without the schedules; the survivor cannot lead yet
      await until(
        async () => (await queues.tokenRefresh.getJobScheduler(refreshSchedulerId('2001'))) !== undefined,
        "the survivor's repair once the killed leader's lease lapsed",
        15_000,
      );
      expect(survivor.leading).toBe(true);
    } finally {
      await survivor.stop();
    }
  });
});
