import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { upsertAccount } from '../../src/store/accounts.ts';
import { forgetWorker, liveWorkers, recordWorkerSettings } from '../../src/store/worker-settings.ts';
import { createQueue, QUEUE } from '../../jobs/queues.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { memoryIO } from '../support/memory-io.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { runCli } from '../support/cli.ts';

/**
 * R-SET-1: `feedmirror media rebuild` and `feedmirror webhooks add` act on work the workers do
 * with their own settings. `media rebuild` queues work the workers do with their own settings, so it
 * uses the settings the running workers recorded, and refuses with one line when this environment
 * sets others or the workers disagree. (test/journeys/media-rebuild.test.ts runs it with real
 * workers; here the recorded rows are written directly to cover each case.)
 */
describe('commands and the settings the workers run with', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let pool: ReturnType<typeof createPool>;
  const redis = redisForTest('cli-media-rebuild');
  let env: NodeJS.ProcessEnv;
  const widths = [160, 240, 360, 540, 810, 1215, 1820, 2730];

  beforeAll(async () => {
    db = await freshDatabase('cli_media');
    pool = createPool(db.url);
    await migrate(pool);
    await upsertAccount(pool, { id: 'acct-m', username: 'acct-m' }, new Date());
    const key = randomBytes(32).toString('base64');
    registerSecretForAudit(key);
    env = {
      DATABASE_URL: db.url,
      REDIS_URL: redis.url,
      REDIS_PREFIX: redis.prefix,
      TOKEN_ENCRYPTION_KEY: key,
      LOG_LEVEL: 'silent',
    };
  });

  afterAll(async () => {
    const q = createQueue(QUEUE.mirrorMedia, redis);
    await q.obliterate({ force: true });
    await q.close();
    await pool.end();
    await db.drop();
  });

  const run = (extra: NodeJS.ProcessEnv = {}) => runCli(['media', 'rebuild', '--json'], { ...env, ...extra });
  const worker = (id: string, formats: string[]) =>
    recordWorkerSettings(pool, {
      workerId: id,
      host: 'test',
      pid: 1,
      settings: { MEDIA_VARIANT_WIDTHS: widths, MEDIA_VARIANT_FORMATS: formats, WEBHOOK_ALLOW_PRIVATE: false },
    });

  it('no worker running: queues with this environment settings and says who will use them', async () => {
    const r = await run({ MEDIA_VARIANT_FORMATS: 'webp,avif' });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ formats: ['webp', 'avif'], workers: 0 });
  });

  it('refuses in one line when this environment sets formats the running workers do not use', async () => {
    await worker('w1', ['webp']);
    const r = await run({ MEDIA_VARIANT_FORMATS: 'webp,avif' });
    expect(r.code).toBe(1);
    const line =
      "media rebuild: the running workers re-encode with MEDIA_VARIANT_FORMATS=webp, not MEDIA_VARIANT_FORMATS=webp,avif as set here: set it in the workers' environment and restart them, then run media rebuild again";
    expect(r.err).toBe(`${line}\n`);
    // --json: the same error as one JSON object on stdout.
    expect(JSON.parse(r.out)).toEqual({ error: { kind: 'failed', message: line } });
  });

  it('uses the workers settings when this environment sets none, and the job carries them', async () => {
    await worker('w1', ['webp', 'avif']);
    const r = await run();
    expect(r.code).toBe(0);
    const out = JSON.parse(r.out) as { formats: string[]; workers: number; queued: Array<{ jobId: string }> };
    expect(out).toMatchObject({ formats: ['webp', 'avif'], widths, workers: 1 });
    const q = createQueue(QUEUE.mirrorMedia, redis);
    expect((await q.getJob(out.queued[0]!.jobId))!.data).toEqual({
      accountId: 'acct-m',
      widths,
      formats: ['webp', 'avif'],
    });
    await q.close();
    const plain = memoryIO({ env });
    expect(await main(['media', 'rebuild'], plain)).toBe(0);
    expect(plain.out()).toMatch(
      /^queued a media rebuild for 1 account \(widths 160,240,360,540,810,1215,1820,2730, formats webp,avif: the settings of the running worker\)/,
    );
  });

  it('refuses when the running workers disagree, naming each setting and how many run it', async () => {
    await worker('w2', ['webp']);
    const r = await run();
    expect(r.code).toBe(1);
    expect(r.err).toMatch(
      /^media rebuild: the running workers re-encode with different settings \(1 with .*formats webp,avif; 1 with .*formats webp\)/,
    );
  });

  it('a worker that stopped is forgotten; one not seen for 90 s is not counted', async () => {
    await forgetWorker(pool, 'w2');
    await pool.query("UPDATE worker_settings SET seen_at = now() - interval '91 seconds' WHERE worker_id = 'w1'");
    expect(await liveWorkers(pool)).toEqual([]);
    expect(JSON.parse((await run()).out)).toMatchObject({ workers: 0, formats: ['webp'] });
  });

  it('webhooks add: a private endpoint allowed here but refused by a running worker is refused now, in one line', async () => {
    const add = (extra: NodeJS.ProcessEnv) =>
      runCli(['webhooks', 'add', 'http://127.0.0.1:9/hook'], { ...env, ...extra });
    await pool.query('DELETE FROM worker_settings');
    await worker('w3', ['webp']); // WEBHOOK_ALLOW_PRIVATE false
    const refused = await add({ WEBHOOK_ALLOW_PRIVATE: 'true' });
    expect(refused.code).not.toBe(0);
    expect(refused.err).toContain(
      "webhook URL http://127.0.0.1:9 is a private or local address: WEBHOOK_ALLOW_PRIVATE=true here, but a running worker refuses to deliver to it; set WEBHOOK_ALLOW_PRIVATE=true in the workers' environment and restart them",
    );
    expect(refused.err.trim().split('\n')).toHaveLength(1);
    await recordWorkerSettings(pool, {
      workerId: 'w3',
      host: 'test',
      pid: 1,
      settings: { MEDIA_VARIANT_WIDTHS: widths, MEDIA_VARIANT_FORMATS: ['webp'], WEBHOOK_ALLOW_PRIVATE: true },
    });
    expect((await add({ WEBHOOK_ALLOW_PRIVATE: 'true' })).code).toBe(0);
  });
});
