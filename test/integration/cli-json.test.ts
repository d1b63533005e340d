import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { FileClock } from '../../src/util/clock.ts';
import { createQueue, QUEUE } from '../../jobs/queues.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { runFeedmirror } from '../support/processes.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { workerEnv } from '../support/worker-env.ts';

/**
 * Real `feedmirror` processes at LOG_LEVEL=debug: with --json, standard output is exactly one JSON
 * document (every log line went to standard error), so `| jq` works whatever the log level.
 */
describe('--json output stays parseable at LOG_LEVEL=debug', () => {
  let sim: Simulator;
  let env: Record<string, string>;
  let drop: () => Promise<void>;
  let storageDir: string;
  const redis = redisForTest('clijson');
  const key = randomBytes(32).toString('base64');
  let accountId = '';
  let logs = '';

  beforeAll(async () => {
    registerSecretForAudit(key);
    sim = await startSimulator();
    const database = await freshDatabase('clijson');
    drop = database.drop;
    const clockFile = join(mkdtempSync(join(tmpdir(), 'fm-clijson-clock-')), 'now');
    FileClock.write(clockFile, sim.clock.now());
    storageDir = mkdtempSync(join(tmpdir(), 'fm-clijson-'));
    env = workerEnv({ sim, databaseUrl: database.url, redis, key, clockFile, storageDir, extra: { LOG_LEVEL: 'debug', MEDIA_VARIANT_WIDTHS: '160' } });
  });

  afterAll(async () => {
    for (const name of Object.values(QUEUE)) {
      const q = createQueue(name, { url: redis.url, prefix: redis.prefix });
      await q.obliterate({ force: true }).catch(() => undefined);
      await q.close();
    }
    await drop?.();
    await sim?.close();
    if (storageDir) await rm(storageDir, { recursive: true, force: true });
  });

  const json = async (args: string[], opts: { stdin?: string; code?: number } = {}) => {
    const r = await runFeedmirror(args, env, { stdin: opts.stdin ?? '' });
    expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(opts.code ?? 0);
    logs += r.stderr;
    return JSON.parse(r.stdout) as Record<string, unknown> & unknown[];
  };

  it('migrate, accounts add/list, sync --wait, feeds get, refresh, check-expiry, keys rotate, validate', async () => {
    expect((await json(['migrate', '--json'])).current).toMatch(/^\d{3}/);
    const acc = sim.createAccount({ username: 'json.shop', posts: 3 });
    const token = sim.issueShortLivedToken(acc.id);
    const added = await json(['accounts', 'add', '--json'], { stdin: token });
    expect(added.id).toBe(acc.id);
    accountId = acc.id;
    const list = await json(['accounts', 'list', '--json']);
    expect((list as unknown as Array<{ id: string }>).map((a) => a.id)).toEqual([acc.id]);
    const synced = await json(['sync', accountId, '--wait', '--json']);
    expect(synced).toMatchObject({ accountId, outcome: 'synced', posts: 3 });
    const feed = await json(['feeds', 'get', accountId, '--json']);
    expect((feed.posts as unknown[]).length).toBe(3);
    // A token younger than 24 hours is not refreshed (exit 1), and says so in JSON.
    expect((await json(['refresh', accountId, '--json'], { code: 1 })).outcome).toBe('not-due');
    expect((await json(['check-expiry', '--json'])).checked).toBe(1);
    expect((await json(['keys', 'rotate', '--json'])).rotated).toBe(0);
    const fixture = fileURLToPath(new URL('../fixtures/feed-v1-valid.json', import.meta.url));
    expect((await json(['validate', fixture, '--json'])).valid).toBe(true);
    // The commands did log at debug level, to stderr only.
    expect(logs).toMatch(/"level":20,/);
    expect(logs).toMatch(/"level":30,/);
  }, 180_000);
});
