import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FlowProducer, Job } from 'bullmq';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { feedSyncJob } from '../../jobs/feed-sync.ts';
import { statusOnlyLifecycle } from '../../src/accounts/lifecycle.ts';
import { refreshAccountToken } from '../../src/accounts/token-refresh.ts';
import { mirrorMediaJob } from '../../jobs/mirror-media.ts';
import { loadConfig } from '../../src/config.ts';
import type { FeedDeps } from '../../src/feeds/deps.ts';
import { syncAccount } from '../../src/feeds/sync.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { createStorage } from '../../src/storage/index.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { listCopyFailures } from '../../src/store/copy-failures.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { getTokenInfo } from '../../src/store/tokens.ts';
import { FileClock, HOUR } from '../../src/util/clock.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { importSimAccount } from '../support/accounts.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { closedPort } from '../support/closed-port.ts';
import { runFeedmirror } from '../support/processes.ts';
import { dropQueues } from '../support/queues.ts';
import { S3RVER_CREDENTIALS } from '../support/s3.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { workerEnv } from '../support/worker-env.ts';
import { noSleep, simPlatformClient } from '../support/sim-platform.ts';
import { runCli } from '../support/cli.ts';

/**
 * R-HLT-5: a local failure is not the account's. A command or worker that cannot reach Redis or
 * storage, or whose TOKEN_ENCRYPTION_KEY opens no token, exits with its documented code (3: a
 * service is unreachable; 1: a configuration value rejected) and one line, and records nothing
 * against any account: `accounts list --json` reads the same before and after. What the platform
 * answers (a rate limit) still is the account's, said in words a person reads.
 */
const key = randomBytes(32).toString('base64');
const wrongKey = randomBytes(32).toString('base64');
const cipher = TokenCipher.fromEnv(key);
const redis = redisForTest('localfail');
let sim: Simulator;
let db: pg.Pool;
let drop: () => Promise<void>;
let dir: string;
let clockFile: string;
let env: Record<string, string>;
let deps: FeedDeps;
let accountId: string;
let port: number;

const cli = (args: string[], over: Record<string, string> = {}) => runCli(args, { ...env, ...over });
/** The account as `accounts list --json` shows it: its last sync and its health. */
const listed = async (id = accountId) => {
  const r = await cli(['accounts', 'list', '--json']);
  expect(r.code, r.err).toBe(0);
  return (JSON.parse(r.out) as Array<{ id: string }>).find((a) => a.id === id)!;
};
/** The account before a local failure: healthy (what follows must leave it so). */
const healthyBefore = async () => {
  const a = await listed();
  expect((a as unknown as { health: { verdict: string } }).health.verdict).toBe('ok');
  return a;
};
const lines = (s: string) => s.split('\n').filter((l) => l.trim() !== '');

beforeAll(async () => {
  registerSecretForAudit(key);
  registerSecretForAudit(wrongKey);
  sim = await startSimulator();
  const database = await freshDatabase('localfail');
  drop = database.drop;
  db = createPool(database.url, { max: 4 });
  await migrate(db);
  dir = mkdtempSync(join(tmpdir(), 'fm-localfail-'));
  clockFile = join(dir, 'clock');
  FileClock.write(clockFile, sim.clock.now());
  env = workerEnv({
    sim,
    databaseUrl: database.url,
    redis,
    key,
    clockFile,
    storageDir: join(dir, 'objects'),
    extra: { LOG_LEVEL: 'warn', MEDIA_VARIANT_WIDTHS: '160' },
  });
  deps = {
    db,
    cipher,
    platform: simPlatformClient(sim, { maxRetries: 0, sleep: noSleep }),
    storage: new LocalStorage(join(dir, 'objects'), env.MEDIA_PUBLIC_URL),
    limits: { allowedHosts: [sim.imageHost], maxBytes: 1e7, maxPixels: 1e8, timeoutMs: 5_000, variantWidths: [160] },
    clock: sim.clock,
    logger: silentLogger,
  };
  port = await closedPort();
  const acc = sim.createAccount({ username: 'healthy.shop', posts: 3 });
  accountId = acc.id;
  await importSimAccount(db, cipher, sim, acc);
  const first = await cli(['sync', accountId, '--wait']);
  expect(first.code, first.out + first.err).toBe(0);
  expect(((await listed()) as unknown as { health: { verdict: string } }).health.verdict).toBe('ok');
}, 60_000);

afterAll(async () => {
  await dropQueues({ url: redis.url, prefix: redis.prefix });
  await sim?.close();
  await db?.end();
  await drop?.();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('a local failure is not the account’s (R-HLT-5)', () => {
  it('sync --wait with Redis on a closed port: one line naming Redis and where, exit 3, the account as it was', async () => {
    const before = await healthyBefore();
    const r = await cli(['sync', accountId, '--wait'], { REDIS_URL: `redis://127.0.0.1:${port}` });
    expect(r.code).toBe(3);
    expect(r.out).toBe('');
    expect(lines(r.err)).toEqual([expect.stringMatching(new RegExp(`cannot reach Redis at 127\\.0\\.0\\.1:${port}`))]);
    expect(r.err).not.toMatch(/max retries per request/i);
    expect(await listed()).toEqual(before);
  }, 60_000);

  it('sync --wait with a wrong TOKEN_ENCRYPTION_KEY: one line naming the key ids, exit 1 (kind configuration), the account as it was', async () => {
    const before = await healthyBefore();
    const r = await cli(['sync', accountId, '--wait'], { TOKEN_ENCRYPTION_KEY: wrongKey });
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
    expect(lines(r.err)).toEqual([
      expect.stringMatching(
        /^feedmirror sync: the token of account \d+ was encrypted with key [0-9a-f]{8}, which TOKEN_ENCRYPTION_KEY does not contain \(it holds [0-9a-f]{8}\)/,
      ),
    ]);
    const json = await cli(['sync', accountId, '--wait', '--json'], { TOKEN_ENCRYPTION_KEY: wrongKey });
    expect(json.code).toBe(1);
    expect((JSON.parse(json.out) as { error: { kind: string } }).error.kind).toBe('configuration');
    expect(await listed()).toEqual(before);
  }, 60_000);

  it('the worker with a wrong key refuses to start: exit 1, one line naming the key ids, nothing synced', async () => {
    const before = await healthyBefore();
    const r = await runFeedmirror(['worker'], { ...env, TOKEN_ENCRYPTION_KEY: wrongKey }, { timeoutMs: 30_000 });
    expect(r.code, r.stdout + r.stderr).toBe(1);
    // Log lines are JSON; the one line a person reads is not.
    const said = lines(r.stdout + r.stderr).filter((l) => !l.startsWith('{'));
    expect(said).toEqual([
      expect.stringMatching(
        /^feedmirror worker: cannot start: TOKEN_ENCRYPTION_KEY \(key [0-9a-f]{8}\) opens none of the 1 stored token\(s\), sealed with key [0-9a-f]{8}; every sync would fail/,
      ),
    ]);
    expect(await listed()).toEqual(before);
  }, 60_000);

  it("the worker's jobs, mid-run, with a key that does not open this account's token: the job fails, nothing recorded", async () => {
    const other = { ...deps, cipher: TokenCipher.fromEnv(wrongKey) };
    const before = await healthyBefore();
    const job = { id: 'scheduled-1', attemptsMade: 0, opts: { attempts: 3 }, updateProgress: async () => undefined };
    await expect(
      feedSyncJob.process({ ...other, flows: {} as FlowProducer, redis }, { accountId }, job as unknown as Job),
    ).rejects.toThrow(/TOKEN_ENCRYPTION_KEY does not contain/);
    expect(await listed()).toEqual(before);
  });

  it('storage unreachable under a sync and a copy job: they fail saying so, and nothing is recorded against the account', async () => {
    const config = loadConfig({
      STORAGE_URL: 's3://feedmirror-down/x',
      S3_ENDPOINT: `http://127.0.0.1:${port}`,
      S3_FORCE_PATH_STYLE: 'true',
      MEDIA_PUBLIC_URL: 'http://media.example.test/',
    });
    const down = {
      ...deps,
      storage: createStorage(config, { credentials: S3RVER_CREDENTIALS, maxAttempts: 1, requestTimeoutMs: 2_000 }),
    };
    await healthyBefore();
    // A new post, read and stored while storage answered: its cover waits for its copy job.
    sim.addPost(accountId, { kind: 'image', caption: 'new while storage is away' });
    const read = await syncAccount(deps, accountId);
    expect(read.outcome === 'synced' && read.copies.length).toBe(1);
    const copy = (read as Extract<typeof read, { outcome: 'synced' }>).copies[0]!;
    const before = await listed();

    // The sync of an operator checks its feed object (one HEAD): storage does not answer.
    await expect(syncAccount(down, accountId, { checkFeed: true })).rejects.toThrow(/feedmirror-down.*ECONNREFUSED/);
    const job = { attemptsMade: 0, attemptsStarted: 1, opts: { attempts: 5 } } as unknown as Job;
    await expect(
      mirrorMediaJob.process(down, { accountId, mediaId: copy.mediaId, slot: copy.slot }, job),
    ).rejects.toThrow(/feedmirror-down.*ECONNREFUSED/);
    expect(await listCopyFailures(db, accountId)).toEqual([]);
    expect(await listed()).toEqual(before);
  }, 60_000);

  it('PostgreSQL refusing to write the renewed token (out of disk): the renewal fails, nothing recorded against the account', async () => {
    // Last of these: it moves the clocks a day on, past every account's next sync.
    const acc = sim.createAccount({ username: 'renewing.shop', posts: 1 });
    await importSimAccount(db, cipher, sim, acc);
    // The platform renews tokens once they are a day old (R-TOK-5).
    sim.clock.advance(25 * HOUR);
    FileClock.write(clockFile, sim.clock.now());
    const before = await listed(acc.id);
    // Writing a new token fails as a full disk makes it fail (SQLSTATE 53100); the rest writes.
    await db.query(`CREATE FUNCTION fm_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = '53100'; END $$`);
    await db.query(`CREATE TRIGGER fm_disk_full BEFORE UPDATE ON tokens FOR EACH ROW
      WHEN (OLD.ciphertext IS DISTINCT FROM NEW.ciphertext) EXECUTE FUNCTION fm_disk_full()`);
    try {
      await expect(
        refreshAccountToken(
          {
            db,
            cipher,
            platform: deps.platform,
            clock: sim.clock,
            logger: silentLogger,
            lifecycle: statusOnlyLifecycle({ db, clock: sim.clock, logger: silentLogger }),
          },
          { accountId: acc.id, force: true },
        ),
      ).rejects.toThrow(/No space left on device/);
    } finally {
      await db.query('DROP TRIGGER fm_disk_full ON tokens; DROP FUNCTION fm_disk_full()');
    }
    expect(await listed(acc.id)).toEqual(before);
    expect((await getTokenInfo(db, acc.id))?.refreshFailures).toBe(0);
  });
});

describe('sync in words a person reads', () => {
  it('sync of an account that does not exist: "no account with id …", kind not_found, like every command', async () => {
    const r = await cli(['sync', '123', '--wait']);
    expect(r.code).toBe(1);
    expect(lines(r.err)).toEqual(['no account with id 123']);
    const queued = await cli(['sync', '123', '--json']);
    expect(queued.code).toBe(1);
    expect(JSON.parse(queued.out)).toEqual({ error: { kind: 'not_found', message: 'no account with id 123' } });
  });

  it('sync --wait during a rate limit: "rate-limited until <time>; the worker retries then"', async () => {
    sim.injectFault({ kind: 'rate-limit', code: 17, status: 400, path: /\/media$/, regainMinutes: 2 });
    const r = await cli(['sync', accountId, '--wait']);
    expect(r.code).toBe(1);
    const until = new Date(new FileClock(clockFile).now().getTime() + 2 * 60_000);
    const at = `${until.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
    expect(r.out).toMatch(
      new RegExp(
        `^summary: rate-limited until ${at} \\(in 2 min; platform code 17\\); the worker retries then \\(job [^)]+\\); nothing was pruned$`,
        'm',
      ),
    );
    expect(r.out + r.err).not.toMatch(/RateLimitedError/);
  });
});
