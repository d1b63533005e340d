import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { FileClock } from '../../src/util/clock.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { closedPort } from '../support/closed-port.ts';
import { runFeedmirror, type Finished } from '../support/processes.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { workerEnv } from '../support/worker-env.ts';
import { dropQueues } from '../support/queues.ts';

/**
 * Fail fast, clearly (real processes): with Redis, PostgreSQL or the storage unreachable, a
 * command exits non-zero within 10 s, printing at most 3 lines that name what is down and where,
 * with no stack trace and no credentials. worker and serve that cannot start exit non-zero.
 */
const PASSWORD = 'pw-never-printed-7f3a';
/**
 * One at a time, each measured against the start-up time of `feedmirror --version` right before
 * it: the machine is shared (load far above its 2 cores at times), and what must stay under 10 s
 * is the command's own time, not Node and tsx loading.
 */
async function oneByOne(tasks: Array<() => Promise<Finished>>): Promise<Finished[]> {
  const out: Finished[] = [];
  for (const task of tasks) {
    const baseline = await runFeedmirror(['--version'], {});
    const r = await task();
    out.push({ ...r, ms: r.ms - baseline.ms });
  }
  return out;
}

const lines = (r: Finished) => (r.stdout + r.stderr).split('\n').filter((l) => l.trim() !== '');

function expectFailFast(r: Finished, what: RegExp, label: string): void {
  const all = r.stdout + r.stderr;
  expect(r.code, `${label}: ${all}`).not.toBe(0);
  expect(r.code, `${label}: ${all}`).not.toBeNull();
  expect(r.ms, label).toBeLessThan(10_000);
  expect(lines(r).length, `${label}: ${all}`).toBeLessThanOrEqual(3);
  expect(all, label).toMatch(what);
  expect(all, label).not.toMatch(/\n\s+at /);
  expect(all, label).not.toContain(PASSWORD);
}

describe('a service unreachable: one clear line, exit non-zero within 10 s', () => {
  let sim: Simulator;
  let env: Record<string, string>;
  let databaseUrl: string;
  let drop: () => Promise<void>;
  let storageDir: string;
  let port: number;
  const redis = redisForTest('unavail');
  const key = randomBytes(32).toString('base64');

  beforeAll(async () => {
    registerSecretForAudit(key);
    registerSecretForAudit(PASSWORD);
    sim = await startSimulator();
    const database = await freshDatabase('unavail');
    databaseUrl = database.url;
    drop = database.drop;
    const clockFile = join(mkdtempSync(join(tmpdir(), 'fm-unavail-clock-')), 'now');
    FileClock.write(clockFile, sim.clock.now());
    storageDir = mkdtempSync(join(tmpdir(), 'fm-unavail-'));
    env = workerEnv({ sim, databaseUrl, redis, key, clockFile, storageDir, extra: { LOG_LEVEL: 'info' } });
    port = await closedPort();
  });

  afterAll(async () => {
    await dropQueues({ url: redis.url, prefix: redis.prefix });
    await drop?.();
    await sim?.close();
    if (storageDir) await rm(storageDir, { recursive: true, force: true });
  });

  it('Redis down: sync, accounts add/remove, refresh and worker name Redis and its address; accounts add stores nothing and never uses the token', async () => {
    const down = { ...env, REDIS_URL: `redis://:${PASSWORD}@127.0.0.1:${port}` };
    const acc = sim.createAccount({ username: 'not.yet', posts: 1 });
    const token = sim.issueShortLivedToken(acc.id);
    registerSecretForAudit(token);
    const runs = await oneByOne([
      () => runFeedmirror(['sync', acc.id], down),
      () => runFeedmirror(['accounts', 'remove', acc.id], down),
      () => runFeedmirror(['accounts', 'add'], down, { stdin: token }),
      () => runFeedmirror(['refresh', acc.id], down),
      () => runFeedmirror(['worker'], down),
    ]);
    // (serve starts without Redis and answers 503 in words: test/security/login-throttle-sessions.test.ts)
    const labels = ['sync', 'accounts remove', 'accounts add', 'refresh', 'worker'];
    runs.forEach((r, i) => {
      expectFailFast(r, new RegExp(`cannot reach Redis at 127\\.0\\.0\\.1:${port}`), labels[i]!);
      expect(r.code, labels[i]).toBe(3);
    });
    // accounts add: nothing stored, and the short-lived token was never exchanged (still good).
    const c = new pg.Client({ connectionString: databaseUrl });
    await c.connect();
    try {
      // Redis is checked first: not even the migrations ran, so no account can be there.
      const { rows } = await c.query<{ t: string | null }>("SELECT to_regclass('accounts')::text AS t");
      if (rows[0]!.t) expect((await c.query('SELECT count(*)::int AS n FROM accounts')).rows[0].n).toBe(0);
    } finally {
      await c.end();
    }
    expect(sim.requests.filter((r) => r.path.includes('access_token')).length).toBe(0);
  }, 120_000);

  it('PostgreSQL down: accounts list, migrate, check-expiry, accounts add, worker and serve name PostgreSQL and its address, never the password', async () => {
    const down = { ...env, DATABASE_URL: `postgres://feedmirror:${PASSWORD}@127.0.0.1:${port}/feedmirror` };
    const cmds = [['accounts', 'list'], ['migrate'], ['check-expiry'], ['accounts', 'add'], ['worker'], ['serve']];
    const runs = await oneByOne(
      cmds.map(
        (c) => () => runFeedmirror(c, c[0] === 'serve' ? { ...down, PORT: '0' } : down, { stdin: 'IGQVJtoken' }),
      ),
    );
    runs.forEach((r, i) => {
      expectFailFast(r, new RegExp(`cannot reach PostgreSQL at 127\\.0\\.0\\.1:${port}`), cmds[i]!.join(' '));
      expect(r.code).toBe(3);
    });
  }, 120_000);

  it('storage down (S3 endpoint refusing): feeds get, sync --wait and worker name the bucket and endpoint', async () => {
    const down = {
      ...env,
      STORAGE_URL: 's3://feedmirror-test/x',
      S3_ENDPOINT: `http://127.0.0.1:${port}`,
      S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: PASSWORD,
    };
    const cmds = [['feeds', 'get', '17841400000000001'], ['sync', '17841400000000001', '--wait'], ['worker']];
    const runs = await oneByOne(cmds.map((c) => () => runFeedmirror(c, down)));
    runs.forEach((r, i) => {
      expectFailFast(
        r,
        new RegExp(`S3 bucket s3://feedmirror-test/x/ at http://127\\.0\\.0\\.1:${port} is not reachable`),
        cmds[i]!.join(' '),
      );
      expect(r.code).toBe(3);
    });
  }, 120_000);

  it('SMTP down: check-expiry names the mail server and its address, never the password', async () => {
    const down = { ...env, SMTP_URL: `smtp://ops:${PASSWORD}@127.0.0.1:${port}`, ALERT_EMAIL_TO: 'ops@example.test' };
    const [r] = await oneByOne([() => runFeedmirror(['check-expiry'], down)]);
    expectFailFast(r!, new RegExp(`cannot reach SMTP at 127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\)`), 'check-expiry');
    expect(r!.code).toBe(3);
  }, 60_000);

  it('a worker whose configuration is incomplete says so in one line and exits 1, touching nothing', async () => {
    const r = await runFeedmirror(['worker'], {
      ...env,
      SMTP_URL: `smtp://ops:${PASSWORD}@127.0.0.1:${port}`,
      ALERT_EMAIL_TO: '',
      REDIS_URL: `redis://127.0.0.1:${port}`,
    });
    expectFailFast(r, /feedmirror worker: cannot start: ALERT_EMAIL_TO: required when SMTP_URL is set/, 'worker');
    expect(r.code).toBe(1);
  });
});
