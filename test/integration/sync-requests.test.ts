import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { FlowProducer } from 'bullmq';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOBS } from '../../jobs/catalogue.ts';
import { runJob } from '../../jobs/definition.ts';
import type { FeedSyncJobDeps } from '../../jobs/feed-sync.ts';
import { bullConnection, createQueues, type Queues } from '../../jobs/queues.ts';
import { reconcileOnce } from '../../jobs/reconcile.ts';
import { main } from '../../src/cli/main.ts';
import type { CliIO } from '../../src/cli/io.ts';
import { loadConfig } from '../../src/config.ts';
import { mirrorLimitsFromConfig } from '../../src/mirror/copy.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { createStorage } from '../../src/storage/index.ts';
import { getAccount, upsertAccount } from '../../src/store/accounts.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createPool } from '../../src/store/db.ts';
import { recordRunawayListing } from '../../src/store/listing-guard.ts';
import { migrate } from '../../src/store/migrate.ts';
import { listSyncRequests } from '../../src/store/sync-requests.ts';
import { saveToken } from '../../src/store/tokens.ts';
import { DAY, FileClock, HOUR, MINUTE } from '../../src/util/clock.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { dropQueues } from '../support/queues.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { workerEnv } from '../support/worker-env.ts';
import { simPlatformClient } from '../support/sim-platform.ts';

/**
 * R-NET-7: an operator's sync request (`feedmirror sync <id>`; the dashboard's button takes the same path,
 * jobs/sync-requests.ts) is recorded in PostgreSQL before it is queued. Redis restarted without
 * persistence (here: the queue's keys deleted) loses the job; the reconciler queues it again
 * under the same id; the worker's run clears the request. Before, the request was gone until
 * the account's next hourly run.
 */
const T0 = Date.UTC(2026, 5, 2, 8);
let sim: Simulator;
let db: pg.Pool;
let drop: () => Promise<void>;
let queues: Queues;
let flows: FlowProducer;
let env: Record<string, string>;
let jobDeps: FeedSyncJobDeps;
let accountId = '';
const dirs: string[] = [];
const redis = redisForTest('sync-requests');

function memoryIO(e: Record<string, string>): CliIO & { out: () => string } {
  let out = '';
  return {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: () => undefined },
    stdin: new PassThrough(),
    env: e,
    cwd: process.cwd(),
    out: () => out,
  };
}

beforeAll(async () => {
  const key = randomBytes(32).toString('base64');
  registerSecretForAudit(key);
  sim = await startSimulator({ start: T0 });
  const database = await freshDatabase('syncrequests');
  drop = database.drop;
  db = createPool(database.url, { max: 3 });
  await migrate(db);
  const acc = sim.createAccount({ username: 'requests.shop', posts: 4 });
  accountId = acc.id;
  const token = sim.issueLongLivedToken(acc.id);
  registerSecretForAudit(token);
  await upsertAccount(db, { id: acc.id, username: acc.username }, sim.clock.now());
  await saveToken(
    db,
    TokenCipher.fromEnv(key),
    { accountId: acc.id, accessToken: token, obtainedAt: sim.clock.now(), expiresAt: new Date(T0 + 60 * DAY) },
    'imported',
  );
  const clockDir = mkdtempSync(join(tmpdir(), 'fm-requests-clock-'));
  const storageDir = mkdtempSync(join(tmpdir(), 'fm-requests-storage-'));
  dirs.push(clockDir, storageDir);
  FileClock.write(join(clockDir, 'now'), T0);
  env = workerEnv({
    sim,
    databaseUrl: database.url,
    redis,
    key,
    clockFile: join(clockDir, 'now'),
    storageDir,
    extra: { LOG_LEVEL: 'warn' },
  });
  queues = createQueues(redis);
  flows = new FlowProducer({ connection: bullConnection(redis, false), prefix: redis.prefix });
  const config = loadConfig({ STORAGE_URL: storageDir, MEDIA_ALLOWED_HOSTS: sim.imageHost });
  jobDeps = {
    db,
    cipher: TokenCipher.fromEnv(key),
    platform: simPlatformClient(sim, { maxRetries: 0 }),
    storage: createStorage(config),
    limits: mirrorLimitsFromConfig(config),
    clock: sim.clock,
    logger: silentLogger,
    flows,
    redis,
  };
}, 60_000);

afterAll(async () => {
  await flows?.close();
  await dropQueues(queues);
  await db?.end();
  await drop?.();
  await sim?.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('manual sync requests survive a Redis that forgets', () => {
  it('feedmirror sync records the request; the reconciler queues it again after Redis lost it; running it clears it', async () => {
    const io = memoryIO(env);
    expect(await main(['sync', accountId], io)).toBe(0);
    const jobId = /queued \(job ([^)]+)\)/.exec(io.out())?.[1];
    expect(jobId).toMatch(/^manual-sync-/);
    expect(await listSyncRequests(db)).toEqual([{ accountId, jobId, requestedAt: new Date(T0), requestedBy: 'cli' }]);

    // Redis restarted without persistence: the queue and its jobs are gone.
    await queues.feedSync.obliterate({ force: true });
    expect(await queues.feedSync.getJob(jobId!)).toBeUndefined();

    const deps = {
      db,
      queues,
      schedules: { refreshCheckEveryMs: 6 * HOUR, syncEveryMs: 60 * MINUTE },
      dailyJobs: [],
      clock: sim.clock,
      logger: silentLogger,
    };
    const repairs = await reconcileOnce(deps);
    expect(repairs).toContainEqual({ kind: 'sync_request_requeued', id: jobId });
    const job = await queues.feedSync.getJob(jobId!);
    expect(job?.data).toEqual({ accountId });

    // Its scheduled listings are paused (a listing that would not end): an operator's request lists anyway.
    await recordRunawayListing(db, accountId, new Date(T0 + 4 * HOUR));
    const result = await runJob(JOBS.feedSync, jobDeps, job!);
    expect(result).toMatchObject({ outcome: 'synced', complete: true });
    expect((await getAccount(db, accountId))?.lastSyncAt).not.toBeNull();
    expect(await listSyncRequests(db)).toEqual([]);

    // Nothing pending: the next pass requeues nothing.
    expect((await reconcileOnce(deps)).filter((r) => r.kind === 'sync_request_requeued')).toEqual([]);
  });

  it('a request for an account that does not exist is one clear line, not a queued job', async () => {
    const io = memoryIO(env);
    const errors: string[] = [];
    const code = await main(['sync', '17841499999999999'], {
      ...io,
      stderr: { write: (s: string) => void errors.push(s) },
    });
    expect(code).not.toBe(0);
    expect(errors.join('')).toBe('no account with id 17841499999999999\n');
    expect(await listSyncRequests(db)).toEqual([]);
  });
});
