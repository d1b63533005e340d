import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { memoryIO } from '../support/memory-io.ts';
import { main } from '../../src/cli/main.ts';
import { createQueue, QUEUE } from '../../jobs/queues.ts';
import { FileClock } from '../../src/util/clock.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';
import { dropQueues } from '../support/queues.ts';

/**
 * `feedmirror accounts add|list|remove`, `refresh` and the start-up errors an operator meets:
 * a malformed token response, a wrong or malformed encryption key, an unreachable database.
 * Each gives a clear error, names what is wrong, and loses nothing.
 */
describe('feedmirror accounts and operator errors (R-TOK-11, R-TOK-13)', () => {
  let sim: Simulator;
  let env: NodeJS.ProcessEnv;
  let drop: () => Promise<void>;
  const redis = redisForTest('cli');
  const key = randomBytes(32).toString('base64');
  const clockFile = join(mkdtempSync(join(tmpdir(), 'fm-cli-clock-')), 'now');

  beforeAll(async () => {
    registerSecretForAudit(key);
    sim = await startSimulator();
    const database = await freshDatabase('cli');
    drop = database.drop;
    env = {
      DATABASE_URL: database.url,
      REDIS_URL: redis.url,
      REDIS_PREFIX: redis.prefix,
      GRAPH_URL: sim.graphUrl,
      OAUTH_TOKEN_URL: sim.oauthTokenUrl,
      APP_ID: sim.appId,
      APP_SECRET: sim.appSecret,
      TOKEN_ENCRYPTION_KEY: key,
      STORAGE_URL: mkdtempSync(join(tmpdir(), 'fm-cli-')),
      HTTP_MAX_RETRIES: '0',
      LOG_LEVEL: 'silent',
      // The commands run on the simulator's time.
      FEEDMIRROR_CLOCK_FILE: clockFile,
    };
    FileClock.write(clockFile, sim.clock.now());
  });

  afterAll(async () => {
    await dropQueues({ url: redis.url, prefix: redis.prefix });
    await drop();
    await sim.close();
  });

  it('accounts add reads the token from stdin, exchanges it and prints id, handle and expiry as JSON (R-TOK-1, R-TOK-4)', async () => {
    const acc = sim.createAccount({ username: 'cafe.luna', posts: 1 });
    const io = memoryIO({ env, stdin: `${sim.issueShortLivedToken(acc.id)}\n` });
    expect(await main(['accounts', 'add', '--json'], io)).toBe(0);
    const printed = JSON.parse(io.out()) as { id: string; username: string; expiresAt: string };
    expect(printed).toMatchObject({ id: acc.id, username: 'cafe.luna' });
    expect(new Date(printed.expiresAt).getTime() - sim.clock.now().getTime()).toBeGreaterThan(59 * 24 * 3600_000);
    // Its jobs are scheduled.
    const q = createQueue(QUEUE.tokenRefresh, { url: redis.url, prefix: redis.prefix });
    expect((await q.getJobSchedulers()).map((s) => s.key)).toContain(`token-refresh:${acc.id}`);
    await q.close();

    const list = memoryIO({ env });
    expect(await main(['accounts', 'list', '--json'], list)).toBe(0);
    expect(JSON.parse(list.out())).toEqual([
      expect.objectContaining({ id: acc.id, username: 'cafe.luna', status: 'active', daysLeft: 59 }),
    ]);
  });

  it('refuses an empty stdin, and a personal account with what to change (R-TOK-13)', async () => {
    const empty = memoryIO({ env, stdin: '' });
    expect(await main(['accounts', 'add'], empty)).toBe(2);
    expect(empty.err()).toMatch(/no token on standard input/);

    const personal = sim.createAccount({ username: 'just.me', accountType: 'PERSONAL', posts: 0 });
    const io = memoryIO({ env, stdin: sim.issueShortLivedToken(personal.id) });
    expect(await main(['accounts', 'add'], io)).toBe(1);
    expect(io.err()).toMatch(/personal account.*professional/i);
  });

  it('a malformed token response is a clear error and stores nothing (R-TOK-3)', async () => {
    const acc = sim.createAccount({ username: 'broken.reply', posts: 0 });
    sim.injectFault({ path: '/access_token', match: (r) => r.host === 'graph', kind: 'malformed-json', times: 5 });
    const io = memoryIO({ env, stdin: sim.issueShortLivedToken(acc.id) });
    expect(await main(['accounts', 'add'], io)).toBe(1);
    expect(io.err()).toMatch(/token exchange|exchange/i);
    sim.clearFaults();
    const list = memoryIO({ env });
    await main(['accounts', 'list', '--json'], list);
    expect((JSON.parse(list.out()) as Array<{ id: string }>).map((a) => a.id)).not.toContain(acc.id);
  });

  it('a malformed encryption key is refused at start, naming the variable and not the value', async () => {
    const io = memoryIO({ env: { ...env, TOKEN_ENCRYPTION_KEY: 'not-a-key-xyz' }, stdin: 'sometoken' });
    expect(await main(['accounts', 'add'], io)).toBe(1);
    expect(io.err()).toMatch(/TOKEN_ENCRYPTION_KEY/);
    expect(io.err()).not.toContain('not-a-key-xyz');
  });

  it('a wrong encryption key names the key id it needs and leaves the stored token intact', async () => {
    const list = memoryIO({ env });
    await main(['accounts', 'list', '--json'], list);
    const [first] = JSON.parse(list.out()) as Array<{ id: string }>;
    const otherKey = randomBytes(32).toString('base64');
    registerSecretForAudit(otherKey);
    const wrong = memoryIO({ env: { ...env, TOKEN_ENCRYPTION_KEY: otherKey } });
    sim.clock.advance(2 * 24 * 3600_000);
    FileClock.write(clockFile, sim.clock.now());
    expect(await main(['refresh', first!.id], wrong)).toBe(1);
    expect(wrong.err(), wrong.out()).toMatch(/key/i);
    // With the right key the same token still refreshes.
    const right = memoryIO({ env });
    expect(await main(['refresh', first!.id], right)).toBe(0);
    expect(right.out()).toMatch(/refreshed; the token is now valid until/);
  });

  it('an unreachable database is named, without its password: exit 3 (unavailable)', async () => {
    const io = memoryIO({ env: { ...env, DATABASE_URL: 'postgres://feedmirror:s3cretpw@127.0.0.1:1/feedmirror' } });
    expect(await main(['accounts', 'list'], io)).toBe(3);
    expect(io.err()).toMatch(/cannot reach PostgreSQL at 127\.0\.0\.1:1/);
    expect(io.err()).not.toContain('s3cretpw');
  });

  it('accounts remove deletes the token and stops the jobs', async () => {
    const acc = sim.createAccount({ username: 'to.remove', posts: 0 });
    expect(await main(['accounts', 'add'], memoryIO({ env, stdin: sim.issueShortLivedToken(acc.id) }))).toBe(0);
    const io = memoryIO({ env });
    expect(await main(['accounts', 'remove', acc.id], io)).toBe(0);
    expect(io.out()).toMatch(/token is deleted and its jobs stopped/);
    const q = createQueue(QUEUE.tokenRefresh, { url: redis.url, prefix: redis.prefix });
    expect((await q.getJobSchedulers()).map((s) => s.key)).not.toContain(`token-refresh:${acc.id}`);
    await q.close();
    expect(await main(['accounts', 'remove', acc.id], memoryIO({ env }))).toBe(1);
  });

  it('accounts add caps standard input at 8 KB with a clear error, touching nothing', async () => {
    const io = memoryIO({
      env: { ...env, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' },
      stdin: 'x'.repeat(9 * 1024),
    });
    expect(await main(['accounts', 'add'], io)).toBe(2);
    expect(io.err()).toMatch(/standard input is larger than 8192 bytes \(8 KB\): give the token alone/);
    expect(io.out()).toBe('');
  });

  it('accounts add commits the account and its token before any job exists; when Redis goes away after the commit it says so in one line and the reconciler schedules it (first sync at once)', async () => {
    const target = new URL(redis.url);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
    try {
      // The check's connection gets through; every later one (the queues') is dropped.
      proxy.acceptOnly(1);
      const acc = sim.createAccount({ username: 'half.way', posts: 0 });
      const proxied = { ...env, REDIS_URL: `redis://127.0.0.1:${proxy.port}` };
      const io = memoryIO({ env: proxied, stdin: sim.issueShortLivedToken(acc.id) });
      expect(await main(['accounts', 'add', '--json'], io)).toBe(0);
      expect(JSON.parse(io.out())).toMatchObject({ id: acc.id, username: 'half.way', scheduled: false });
      const said = io
        .err()
        .split('\n')
        .filter((l) => l.startsWith('@half.way'));
      expect(said).toHaveLength(1);
      expect(said[0]).toMatch(
        /^@half\.way is connected, but its jobs could not be created now \(Redis did not answer\); a running `feedmirror worker` creates them within RECONCILE_INTERVAL_SECONDS/,
      );
      // Connected: listed, with its token.
      const list = memoryIO({ env });
      await main(['accounts', 'list', '--json'], list);
      const listed = (JSON.parse(list.out()) as Array<{ id: string; status: string; expiresAt: string | null }>).find(
        (a) => a.id === acc.id,
      );
      expect(listed).toMatchObject({ status: 'active' });
      expect(listed?.expiresAt).not.toBeNull();
      // The worker's reconciler heals it from PostgreSQL, and its first sync runs now, not at its slot.
      const { reconcileOnce } = await import('../../jobs/reconcile.ts');
      const { createQueues } = await import('../../jobs/queues.ts');
      const { createLogger } = await import('../../src/util/logger.ts');
      const { createPool } = await import('../../src/store/db.ts');
      const queues = createQueues({ url: redis.url, prefix: redis.prefix });
      const db = createPool(env.DATABASE_URL!);
      try {
        const repairs = await reconcileOnce({
          db,
          queues,
          schedules: { refreshCheckEveryMs: 6 * 3600_000, syncEveryMs: 3600_000 },
          dailyJobs: [],
          clock: sim.clock,
          logger: createLogger({ level: 'silent' }),
        });
        expect(repairs).toEqual(
          expect.arrayContaining([
            { kind: 'scheduler_added', id: `token-refresh:${acc.id}` },
            { kind: 'scheduler_added', id: `feed-sync:${acc.id}` },
          ]),
        );
        const waiting = await queues.feedSync.getJobs(['waiting', 'prioritized']);
        expect(waiting.some((j) => j.id?.startsWith(`first-feed-sync-${acc.id}-`))).toBe(true);
      } finally {
        await Promise.all(Object.values(queues).map((q) => q.close()));
        await db.end();
      }
    } finally {
      await proxy.close();
    }
  }, 30_000);
});
