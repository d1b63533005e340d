import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { Queue } from 'bullmq';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { startSmtpCapture, type SmtpCapture } from '../support/smtp.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { spawnFeedmirror, type Spawned } from '../support/processes.ts';
import { until } from '../support/wait.ts';
import { workerEnv } from '../support/worker-env.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { loadToken } from '../../src/store/tokens.ts';
import { listAccounts } from '../../src/store/accounts.ts';
import { connectWithShortLivedToken } from '../../src/accounts/connect.ts';
import { createLogger } from '../../src/util/logger.ts';
import { DAY, FileClock } from '../../src/util/clock.ts';
import { createQueue, QUEUE } from '../../jobs/queues.ts';
import { JOBS } from '../../jobs/catalogue.ts';
import { enqueueDaily } from '../../jobs/enqueue.ts';
import { noSleep, simPlatformClient } from '../support/sim-platform.ts';

/**
 * Three `feedmirror worker` processes against one Redis and one Postgres for 90 simulated days
 * with 50 accounts. Each day every account's refresh check is queued twice (as a
 * scheduler tick and a manual `feedmirror refresh` racing it) and every worker's cron queues the
 * day's sweep. Five accounts' refreshes always fail. Time moves through a file clock the workers
 * read and the simulator's clock; nothing sleeps.
 */
const ACCOUNTS = 50;
const FAILING = 5;
const DAYS = 90;

describe('three workers, 50 accounts, 90 simulated days (R-TOK-8, R-TOK-9)', () => {
  let sim: Simulator;
  let db: pg.Pool;
  let drop: () => Promise<void>;
  let smtp: SmtpCapture;
  let workers: Spawned[] = [];
  let tokenRefresh: Queue;
  let maintenance: Queue;
  const clockFile = join(mkdtempSync(join(tmpdir(), 'fm-clock-')), 'now');
  const redis = redisForTest('workers');
  const logger = createLogger({ name: 'multiprocess-test' });
  const key = randomBytes(32).toString('base64');
  const accountIds: string[] = [];
  const usernames = new Map<string, string>();
  const failingTokens = new Set<string>();
  const T0 = Date.UTC(2026, 3, 1, 10);

  beforeAll(async () => {
    registerSecretForAudit(key);
    sim = await startSimulator({ start: T0 });
    FileClock.write(clockFile, T0);
    const database = await freshDatabase('workers');
    drop = database.drop;
    db = createPool(database.url, { logger, max: 5 });
    await migrate(db, { logger });
    smtp = await startSmtpCapture();
    const cipher = TokenCipher.fromEnv(key);
    const platform = simPlatformClient(sim, { appId: sim.appId, appSecret: sim.appSecret, logger, sleep: noSleep });
    for (let i = 0; i < ACCOUNTS; i++) {
      const acc = sim.createAccount({ username: `shop${i}`, posts: 1 });
      await connectWithShortLivedToken(
        { db, cipher, platform, clock: sim.clock, logger },
        sim.issueShortLivedToken(acc.id),
      );
      accountIds.push(acc.id);
      usernames.set(acc.id, `shop${i}`);
    }
    for (const id of accountIds.slice(0, FAILING)) failingTokens.add((await loadToken(db, cipher, id))!.accessToken);
    sim.injectFault({
      match: (r) => r.path.endsWith('/refresh_access_token') && failingTokens.has(r.query.access_token ?? ''),
      kind: 'status',
      status: 500,
      times: Infinity,
    });

    const env = workerEnv({
      sim,
      databaseUrl: database.url,
      redis,
      key,
      clockFile,
      storageDir: mkdtempSync(join(tmpdir(), 'fm-storage-')),
      smtpUrl: smtp.url,
      extra: { EXPIRY_SWEEP_CRON: '* * * * * *' },
    });
    workers = [0, 1, 2].map(() => spawnFeedmirror(['worker'], env));
    tokenRefresh = createQueue(QUEUE.tokenRefresh, redis);
    maintenance = createQueue(QUEUE.maintenance, redis);
    await until(() => workers.every((w) => w.output().includes('worker started')), 'three workers to start', 30_000);
  }, 90_000);

  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGTERM');
    await Promise.all(workers.map((w) => w.exited));
    expect(workers.map((w) => w.output()).join('')).toContain('worker stopped');
    await tokenRefresh?.obliterate({ force: true }).catch(() => undefined);
    await maintenance?.obliterate({ force: true }).catch(() => undefined);
    await tokenRefresh?.close();
    await maintenance?.close();
    await smtp?.close();
    await db?.end();
    await drop?.();
    await sim?.close();
  });

  it('refreshes every account once per cycle, never twice, sends each alert once, and loses no account', async () => {
    for (let day = 1; day <= DAYS; day++) {
      const now = T0 + day * DAY;
      sim.clock.set(now);
      FileClock.write(clockFile, now);
      // A scheduler tick and a manual refresh racing it, for every account.
      await tokenRefresh.addBulk(
        accountIds.flatMap((id) =>
          ['tick', 'manual'].map((kind) => ({
            name: QUEUE.tokenRefresh,
            data: { accountId: id },
            opts: { jobId: `d${day}-${kind}-${id}`, attempts: 1 },
          })),
        ),
      );
      const sweepId = await enqueueDaily({ maintenance }, JOBS.expirySweep, new FileClock(clockFile));
      await until(async () => {
        const c = await tokenRefresh.getJobCounts('waiting', 'active', 'prioritized');
        return (c.waiting ?? 0) + (c.active ?? 0) + (c.prioritized ?? 0) === 0;
      }, `day ${day}'s refresh checks`);
      await until(async () => {
        const state = await (await maintenance.getJob(sweepId))?.getState();
        return state === 'completed' || state === 'failed';
      }, `day ${day}'s sweep`);
      expect(await (await maintenance.getJob(sweepId))!.getState()).toBe('completed');
    }

    // Every healthy account was refreshed at days 30, 60 and 90: three calls, no duplicate.
    const refreshCalls = sim.requests.filter((r) => r.path.endsWith('/refresh_access_token'));
    const healthyCalls = refreshCalls.filter((r) => !failingTokens.has(r.query.access_token ?? ''));
    expect(healthyCalls).toHaveLength((ACCOUNTS - FAILING) * 3);
    const { rows } = await db.query<{ account_id: string; n: string }>(
      `SELECT account_id, count(*) AS n FROM token_events WHERE kind = 'refreshed' GROUP BY account_id`,
    );
    const refreshed = new Map(rows.map((r) => [r.account_id, Number(r.n)]));
    for (const id of accountIds.slice(FAILING)) expect(refreshed.get(id), `refreshes of ${id}`).toBe(3);
    // Failing accounts were retried at most once a day while their token lived (R-TOK-7).
    const failingCalls = refreshCalls.length - healthyCalls.length;
    expect(failingCalls).toBeGreaterThan(FAILING * 25);
    expect(failingCalls).toBeLessThanOrEqual(FAILING * 31);

    // No account lost: all 50 are there; the healthy ones active and valid past day 90.
    const accounts = await listAccounts(db, sim.clock.now());
    expect(accounts).toHaveLength(ACCOUNTS);
    const byId = new Map(accounts.map((a) => [a.id, a]));
    for (const id of accountIds.slice(FAILING)) {
      expect(byId.get(id)!.status).toBe('active');
      expect(byId.get(id)!.daysLeft).toBeGreaterThanOrEqual(59);
    }
    for (const id of accountIds.slice(0, FAILING)) expect(byId.get(id)!.status).toBe('reauth_required');

    // Each failing account: one email at 14, 7, 3 and 1 days left and one "log in again"; nothing else, no duplicates.
    const perAccount = new Map<string, string[]>();
    for (const m of smtp.messages) {
      const user = [...usernames.values()].find((u) => new RegExp(`@${u}\\b`).test(m.subject));
      expect(user, `email subject names an account: ${m.subject}`).toBeDefined();
      perAccount.set(user!, [...(perAccount.get(user!) ?? []), m.subject]);
    }
    expect([...perAccount.keys()].sort()).toEqual(
      accountIds
        .slice(0, FAILING)
        .map((id) => usernames.get(id))
        .sort(),
    );
    for (const [user, subjects] of perAccount) {
      expect(subjects, `emails for ${user}`).toHaveLength(5);
      expect(new Set(subjects).size, `distinct emails for ${user}`).toBe(5);
    }
  }, 300_000);
});
