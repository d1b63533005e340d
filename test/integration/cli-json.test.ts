import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { FileClock } from '../../src/util/clock.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { runFeedmirror } from '../support/processes.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { workerEnv } from '../support/worker-env.ts';
import { dropQueues } from '../support/queues.ts';

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
    env = workerEnv({
      sim,
      databaseUrl: database.url,
      redis,
      key,
      clockFile,
      storageDir,
      extra: { LOG_LEVEL: 'debug', MEDIA_VARIANT_WIDTHS: '160' },
    });
  });

  afterAll(async () => {
    await dropQueues({ url: redis.url, prefix: redis.prefix });
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

  it('webhooks add/list/rotate/deliveries/remove and media rebuild, as JSON; bad input exits 2 with one line', async () => {
    // Private addresses are refused by default (exit 2, one clear line).
    const refused = await runFeedmirror(['webhooks', 'add', 'http://127.0.0.1:9/hook'], env, { stdin: '' });
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split('\n').at(-1)).toMatch(
      /private or local address.*; set WEBHOOK_ALLOW_PRIVATE=true/,
    );
    const allowed = { ...env, WEBHOOK_ALLOW_PRIVATE: 'true' };
    const addRun = await runFeedmirror(
      ['webhooks', 'add', 'http://127.0.0.1:9/hook', '--events', 'feed.updated,account.removed', '--json'],
      allowed,
      { stdin: '' },
    );
    expect(addRun.code, addRun.stderr).toBe(0);
    const added = JSON.parse(addRun.stdout) as { id: string; secret: string; events: string[] };
    expect(added.id).toMatch(/^wh_[a-z0-9]+$/);
    expect(added.secret).toMatch(/^whsec_/);
    expect(added.events).toEqual(['feed.updated', 'account.removed']);
    const list = (await json(['webhooks', 'list', '--json'])) as unknown as Array<{ id: string; url: string }>;
    expect(list.map((e) => e.id)).toEqual([added.id]);
    expect(JSON.stringify(list)).not.toContain(added.secret); // never listed
    const rotated = await json(['webhooks', 'rotate', added.id, '--json']);
    expect(rotated.secret).not.toBe(added.secret);
    expect(await json(['webhooks', 'deliveries', added.id, '--json'])).toEqual([]);
    expect(
      (
        await runFeedmirror(['webhooks', 'add', 'https://example.com/x', '--events', 'feed.deleted'], env, {
          stdin: '',
        })
      ).code,
    ).toBe(2);
    expect((await runFeedmirror(['webhooks', 'remove', 'nope'], env, { stdin: '' })).code).toBe(2);
    // keys rotate re-seals webhook secrets too (none sealed with an older key here).
    expect((await json(['keys', 'rotate', '--json'])).webhookSecrets).toBe(0);
    expect((await json(['webhooks', 'remove', added.id, '--json'])).removed).toBe(true);

    const rebuild = await json(['media', 'rebuild', '--account', accountId, '--json']);
    expect((rebuild.queued as Array<{ accountId: string }>).map((q) => q.accountId)).toEqual([accountId]);
    expect((await runFeedmirror(['media', 'rebuild', '--account', '999'], env, { stdin: '' })).code).toBe(1);
    const raw = await runFeedmirror(['feeds', 'get', accountId, '--raw-links', '--json'], env, { stdin: '' });
    expect(raw.code, raw.stderr).toBe(0);
    expect(JSON.stringify(JSON.parse(raw.stdout))).toMatch(/oe=/);
  }, 180_000);
});
