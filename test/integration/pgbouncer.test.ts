import { mkdtemp, cp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createPool } from '../../src/store/db.ts';
import { DEFAULT_MIGRATIONS_DIR, migrate } from '../../src/store/migrate.ts';
import { createLogger } from '../../src/util/logger.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { JOBS } from '../../jobs/catalogue.ts';
import { createQueues, type Queues } from '../../jobs/queues.ts';
import { Reconciler, type ReconcileDeps } from '../../jobs/reconcile.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { dropQueues } from '../support/queues.ts';
import { runFeedmirror } from '../support/processes.ts';
import { startPgBouncer, type Bouncer } from '../support/pgbouncer.ts';
import { until } from '../support/wait.ts';

/**
 * R-SCL-2: feedmirror behind PgBouncer in transaction pooling mode, where every transaction (and
 * every statement outside one) may run on another server connection. Session-level advisory
 * locks exclude nothing there; the migrations' transaction-scoped lock and the reconciler's
 * lease row must. Each test would fail with the session-level locks they replaced.
 */
const logger = createLogger({ level: 'silent' });
const clock = new ManualClock(Date.UTC(2026, 7, 3, 9));
const cleanups: Array<() => Promise<unknown>> = [];
let bouncer: Bouncer;

const shipped = async () => (await readdir(DEFAULT_MIGRATIONS_DIR)).filter((f) => f.endsWith('.sql')).sort();

/** A promise that fails with `what` after `ms` instead of hanging the file (a lock never released). */
function within<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    work,
    new Promise<never>(
      (_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: still waiting after ${ms} ms`)), ms)),
    ),
  ]).finally(() => clearTimeout(timer));
}

beforeAll(async () => {
  bouncer = await startPgBouncer(inject('databaseUrl'), { poolSize: 3 });
});

afterAll(async () => {
  // The pooler first: its server connections would otherwise hold the databases open.
  await bouncer?.stop();
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

describe('PostgreSQL through PgBouncer in transaction mode (R-SCL-2)', () => {
  it('two `feedmirror migrate` processes at once through the pooler: both succeed, each migration applied once', async () => {
    const d = await freshDatabase('pgbmigcli');
    cleanups.push(d.drop);
    const env = { DATABASE_URL: bouncer.url(d.url), LOG_LEVEL: 'warn' };
    const runs = await Promise.all([1, 2].map(() => runFeedmirror(['migrate', '--json'], env, { timeoutMs: 60_000 })));
    for (const r of runs) expect(r.code, r.stderr).toBe(0);
    const applied = runs.flatMap((r) => (JSON.parse(r.stdout) as { applied: string[] }).applied).sort();
    expect(applied).toEqual(await shipped());
    const pool = createPool(bouncer.url(d.url), { max: 1 });
    try {
      const { rows } = await pool.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY name');
      expect(rows.map((r) => r.name)).toEqual(await shipped());
    } finally {
      await pool.end();
    }
  }, 90_000);

  it('three migrators racing through the pooler over a slow migration apply each file exactly once', async () => {
    // Plain CREATE TABLE (no IF NOT EXISTS): a second run of a file fails loudly; the sleep makes
    // the three overlap for certain.
    const dir = await mkdtemp(join(tmpdir(), 'fm-pgb-migrations-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await cp(DEFAULT_MIGRATIONS_DIR, dir, { recursive: true });
    await writeFile(
      join(dir, '900_extra_one.sql'),
      'CREATE TABLE extra_one (id int PRIMARY KEY); SELECT pg_sleep(0.3);',
    );
    await writeFile(join(dir, '901_extra_two.sql'), 'CREATE TABLE extra_two (id int PRIMARY KEY);');
    const d = await freshDatabase('pgbmigrace');
    cleanups.push(d.drop);
    const pools = [1, 2, 3].map(() => createPool(bouncer.url(d.url), { max: 2 }));
    try {
      const results = await within(
        Promise.all(pools.map((p) => migrate(p, { dir }))),
        15_000,
        'three migrators through the pooler',
      );
      const applied = results.flatMap((r) => r.applied).sort();
      expect(applied).toEqual([...(await shipped()), '900_extra_one.sql', '901_extra_two.sql']);
      const { rows } = await pools[0]!.query<{ n: string }>('SELECT count(*) AS n FROM schema_migrations');
      expect(Number(rows[0]!.n)).toBe((await shipped()).length + 2);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });

  describe('the schedule reconciler, two workers through the pooler', () => {
    let url: string;
    let queues: Queues;
    const pools: pg.Pool[] = [];
    const poolFor = () => {
      const p = createPool(bouncer.url(url), { max: 2 });
      pools.push(p);
      return p;
    };
    const deps = (db: pg.Pool): ReconcileDeps => ({
      db,
      queues,
      schedules: { refreshCheckEveryMs: 6 * 3_600_000, syncEveryMs: 3_600_000 },
      dailyJobs: [JOBS.expirySweep, JOBS.housekeeping],
      clock,
      logger,
    });

    beforeAll(async () => {
      const d = await freshDatabase('pgbreconcile');
      cleanups.push(d.drop);
      url = d.url;
      const direct = createPool(url, { max: 1 });
      await migrate(direct);
      await direct.end();
      queues = createQueues(redisForTest('pgbouncer'));
    });

    afterAll(async () => {
      await dropQueues(queues);
      await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
    });

    it('runs once at a time: every round one of the two leads, and no two passes overlap', async () => {
      const a = new Reconciler(deps(poolFor()), { intervalMs: 3_600_000 });
      const b = new Reconciler(deps(poolFor()), { intervalMs: 3_600_000 });
      const passes: Array<{ who: string; start: number; end: number }> = [];
      const run = async (who: string, r: Reconciler) => {
        const start = performance.now();
        const repairs = await r.trigger();
        if (repairs !== undefined) passes.push({ who, start, end: performance.now() });
        return repairs;
      };
      try {
        for (let round = 0; round < 8; round++) {
          // Both at the same moment, as two workers' timers would fire.
          const [ra, rb] = await Promise.all([run('a', a), run('b', b)]);
          expect([ra, rb].filter((x) => x !== undefined)).toHaveLength(1);
          expect([a.leading, b.leading].filter(Boolean)).toHaveLength(1);
        }
        // The first pass queued the day's jobs; the others found nothing to repair.
        expect(passes).toHaveLength(8);
        expect(new Set(passes.map((p) => p.who)).size).toBe(1);
        const sorted = [...passes].sort((x, y) => x.start - y.start);
        for (let i = 1; i < sorted.length; i++) expect(sorted[i]!.start).toBeGreaterThanOrEqual(sorted[i - 1]!.end);
      } finally {
        await a.stop();
        await b.stop();
      }
    });

    it('a leader that stops hands over at once with a higher fence; one that dies is replaced once its lease lapses', async () => {
      const probe = poolFor();
      const fence = async () =>
        Number(
          (await probe.query<{ fence: string }>(`SELECT fence FROM leases WHERE name = 'feedmirror:reconcile'`)).rows[0]
            ?.fence,
        );
      const a = new Reconciler(deps(poolFor()), { intervalMs: 3_600_000, leaseMs: 1_500 });
      const b = new Reconciler(deps(poolFor()), { intervalMs: 3_600_000, leaseMs: 1_500 });
      expect(await a.trigger()).toBeDefined();
      const first = await fence();
      expect(await b.trigger()).toBeUndefined();
      await a.stop(); // released: b leads at its next tick, no waiting
      expect(await b.trigger()).toBeDefined();
      expect(await fence()).toBe(first + 1);

      // b "dies": its database connections are gone, so it can no longer renew its lease.
      const dying = pools.at(-1)!;
      await dying.end();
      const c = new Reconciler(deps(poolFor()), { intervalMs: 3_600_000, leaseMs: 1_500 });
      expect(await c.trigger()).toBeUndefined(); // b's lease still runs
      await until(async () => (await c.trigger()) !== undefined, 'the dead leader’s lease to lapse', 10_000);
      expect(b.leading).toBe(false);
      expect(await fence()).toBe(first + 2);
      await c.stop();
      await b.stop();
    });
  });
});
