import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Job } from 'bullmq';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mirrorMediaJob } from '../../jobs/mirror-media.ts';
import { loadAccountHealth } from '../../src/accounts/health.ts';
import type { FeedDeps } from '../../src/feeds/deps.ts';
import { runSyncNow, syncAccount } from '../../src/feeds/sync.ts';
import { createApp } from '../../src/http/app.ts';
import type { Feed } from '../../src/schema/v1.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { feedKey } from '../../src/storage/keys.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { listMissingCopies, markMissingObjects } from '../../src/store/missing-copies.ts';
import { deleteMediaCopies, listMediaCopies, type MediaCopy } from '../../src/store/posts.ts';
import { FileClock, HOUR } from '../../src/util/clock.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { runVerify } from '../../src/verify/verify.ts';
import { importSimAccount } from '../support/accounts.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { dropQueues } from '../support/queues.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { workerEnv } from '../support/worker-env.ts';
import { noSleep, simPlatformClient } from '../support/sim-platform.ts';
import { runCli } from '../support/cli.ts';

/**
 * R-HLT-4: health knows what verify knows. An image a published feed points at and storage lacks
 * (deleted behind feedmirror's back) is recorded by whichever verify finds it; the account's
 * health fails naming it until the copy is made again, and the next sync (or a copy job's retry)
 * makes it again from renewed links (R-MED-8), even when the repair that found it met a rate limit.
 * The CLI in-process against PostgreSQL, Redis, a local storage folder served by `serve`'s own
 * app, and the simulator.
 */
const key = randomBytes(32).toString('base64');
const cipher = TokenCipher.fromEnv(key);
const redis = redisForTest('missingobj');
let sim: Simulator;
let db: pg.Pool;
let drop: () => Promise<void>;
let storageDir: string;
let storage: LocalStorage;
let server: Server;
let env: Record<string, string>;
let deps: FeedDeps;

/** Every call to the graph host (listings, single-media reads) answered "rate limited" (code 17). */
const graphCalls = /^\/graph\/v[\d.]+\//;

const cli = (...args: string[]) => runCli(args, env);
const healthFromCli = async (id: string) => {
  const r = await cli('accounts', 'list', '--json');
  expect(r.code, r.err).toBe(0);
  const list = JSON.parse(r.out) as Array<{
    id: string;
    health: { verdict: string; reasons: Array<{ kind: string; level: string; text: string }> };
  }>;
  return list.find((a) => a.id === id)!.health;
};
const readFeed = async (id: string) => JSON.parse((await storage.get(feedKey(id)))!.body.toString('utf8')) as Feed;
const keyOf = (url: string) => url.slice(env.MEDIA_PUBLIC_URL!.length);

beforeAll(async () => {
  registerSecretForAudit(key);
  sim = await startSimulator();
  const database = await freshDatabase('missingobj');
  drop = database.drop;
  db = createPool(database.url, { max: 4 });
  await migrate(db);
  storageDir = mkdtempSync(join(tmpdir(), 'fm-missingobj-'));
  const clockFile = join(storageDir, 'clock');
  FileClock.write(clockFile, sim.clock.now());
  // `serve`'s own app answers the copies at MEDIA_PUBLIC_URL, as it does for local storage.
  const app = createApp({ logger: silentLogger, storage: new LocalStorage(join(storageDir, 'objects')) });
  server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const publicUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
  storage = new LocalStorage(join(storageDir, 'objects'), publicUrl);
  env = workerEnv({
    sim,
    databaseUrl: database.url,
    redis,
    key,
    clockFile,
    storageDir: join(storageDir, 'objects'),
    extra: { LOG_LEVEL: 'warn', MEDIA_VARIANT_WIDTHS: '160', MEDIA_PUBLIC_URL: publicUrl },
  });
  deps = {
    db,
    cipher,
    platform: simPlatformClient(sim, { maxRetries: 0, sleep: noSleep }),
    storage,
    limits: {
      allowedHosts: [sim.imageHost],
      maxBytes: 1e7,
      maxPixels: 1e8,
      timeoutMs: 5_000,
      variantWidths: [160],
    },
    clock: sim.clock,
    logger: silentLogger,
  };
}, 60_000);

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await dropQueues({ url: redis.url, prefix: redis.prefix });
  await sim?.close();
  await db?.end();
  await drop?.();
  if (storageDir) await rm(storageDir, { recursive: true, force: true });
});

describe('an image deleted behind feedmirror’s back (R-HLT-4)', () => {
  afterEach(() => sim.clearFaults());
  it('verify names it; health fails naming it; the repair meets a rate limit; the next sync, right after the limit, copies it; health ok; the URL answers', async () => {
    const acc = sim.createAccount({ username: 'missing.shop', posts: 4 });
    await importSimAccount(db, cipher, sim, acc);
    const first = await cli('sync', acc.id, '--wait');
    expect(first.code, first.out + first.err).toBe(0);
    expect((await healthFromCli(acc.id)).verdict).toBe('ok');

    // One mirrored image, deleted: every site showing the feed now gets a 404 for it.
    const post = (await readFeed(acc.id)).posts.find((p) => p.thumbnailUrl?.startsWith(env.MEDIA_PUBLIC_URL!))!;
    const url = post.thumbnailUrl!;
    expect((await fetch(url)).status).toBe(200);
    await storage.delete(keyOf(url));
    expect((await fetch(url)).status).toBe(404);

    // The platform rate-limits the account: the repair's link renewal (R-MED-8) is refused.
    sim.injectFault({ kind: 'rate-limit', code: 17, status: 400, path: graphCalls, times: Infinity });
    const verify = await cli('verify', '--repair', '--json');
    expect(verify.code).toBe(1);
    const report = JSON.parse(verify.out) as {
      problems: Array<{ kind: string; key?: string }>;
      repaired: Array<{ kind: string }>;
    };
    expect(report.problems).toContainEqual(expect.objectContaining({ kind: 'object-missing', key: keyOf(url) }));
    expect(report.repaired.map((r) => r.kind)).toContain('repair-failed');

    // Health knows what verify knows: fail, naming the post and the object.
    const broken = await healthFromCli(acc.id);
    expect(broken.verdict).toBe('fail');
    const reason = broken.reasons.find((r) => r.kind === 'images_missing')!;
    expect(reason).toMatchObject({ level: 'fail' });
    expect(reason.text).toContain(`post ${post.id} cover, ${keyOf(url)}, found by verify`);
    expect((await fetch(url)).status).toBe(404);

    // The limit ends; the next sync (not tomorrow's repair) copies it again.
    sim.clearFaults();
    const again = await cli('sync', acc.id, '--wait');
    expect(again.code, again.out + again.err).toBe(0);
    expect(again.out).toMatch(/images copied 1, reused 0, links renewed [1-9]/);
    expect(await healthFromCli(acc.id)).toEqual({ verdict: 'ok', reasons: [] });
    const now = (await readFeed(acc.id)).posts.find((p) => p.id === post.id)!.thumbnailUrl!;
    const answer = await fetch(now);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^image\//);
    expect(await listMissingCopies(db, acc.id)).toEqual([]);
  }, 120_000);
});

describe('the mark, its reader and what clears it', () => {
  let accountId: string;
  let copies: MediaCopy[];
  const coverOf = (mediaId: string) => copies.find((c) => c.mediaId === mediaId && c.slot === 'cover')!;

  beforeAll(async () => {
    const acc = sim.createAccount({ username: 'marks.shop', posts: 3 });
    accountId = acc.id;
    await importSimAccount(db, cipher, sim, acc);
    expect((await runSyncNow(deps, accountId)).publish?.outcome).toBe('written');
    copies = (await listMediaCopies(db, accountId)).filter((c) => c.variants.length > 0);
    expect(copies.length).toBeGreaterThanOrEqual(2);
  }, 60_000);

  it('a size of a copy marks its copy; a key no copy names, and a copy saved after the check began, mark nothing', async () => {
    const [a, b] = copies as [MediaCopy, MediaCopy];
    const at = sim.clock.now();
    const marked = await markMissingObjects(
      db,
      accountId,
      [a.variants[0]!.key, `media/${accountId}/nobody/cover-0000.jpg`],
      { by: 'verify', at, checkedSince: at },
    );
    expect(marked).toBe(1);
    expect(await listMissingCopies(db, accountId)).toEqual([
      expect.objectContaining({ mediaId: a.mediaId, slot: a.slot, key: a.variants[0]!.key, foundBy: 'verify' }),
    ]);
    // b was saved after this check began: it was copied again while the check ran.
    const before = new Date(b.copiedAt.getTime() - 1);
    expect(await markMissingObjects(db, accountId, [b.key], { by: 'verify', at: before, checkedSince: before })).toBe(
      0,
    );
    // Marked again, the first finding stays.
    expect(
      await markMissingObjects(db, accountId, [a.key], {
        by: 'verify',
        at: new Date(at.getTime() + HOUR),
        checkedSince: new Date(at.getTime() + HOUR),
      }),
    ).toBe(0);
    expect((await listMissingCopies(db, accountId))[0]!.foundAt).toEqual(at);
  });

  it('a sync counts a marked copy as not copied; the copy job makes it again from renewed links, clears the mark, and health is ok', async () => {
    const marked = (await listMissingCopies(db, accountId))[0]!;
    const health = async () =>
      (await loadAccountHealth(db, { now: sim.clock.now(), syncIntervalMs: HOUR }, { accountId }))[0]!;
    expect((await health()).health.reasons.map((r) => r.kind)).toEqual(['images_missing']);
    await storage.delete(marked.key);

    const r = await syncAccount(deps, accountId);
    expect(r.outcome === 'synced' && r.copies.map((c) => `${c.mediaId}/${c.slot}`)).toEqual([
      `${marked.mediaId}/${marked.slot}`,
    ]);
    const reads = () => sim.requests.filter((q) => q.path.endsWith(`/${marked.mediaId}`)).length;
    const readsBefore = reads();
    const job = { attemptsMade: 0, attemptsStarted: 1, opts: { attempts: 5 } } as unknown as Job;
    const out = await mirrorMediaJob.process(deps, { accountId, mediaId: marked.mediaId, slot: marked.slot }, job);
    expect(out.outcome).toBe('copied');
    expect(reads()).toBe(readsBefore + 1); // its links renewed first (R-MED-8)
    expect(await storage.head(marked.key)).not.toBeNull();
    expect(await listMissingCopies(db, accountId)).toEqual([]);
    expect((await health()).health).toEqual({ verdict: 'ok', reasons: [] });
    // Once made, the next run of the same job finds it up to date.
    expect(
      (await mirrorMediaJob.process(deps, { accountId, mediaId: marked.mediaId, slot: marked.slot }, job)).outcome,
    ).toBe('up-to-date');
  });

  it('verify without repair marks; with a repair that copies it the mark is gone; a pruned post takes its mark along', async () => {
    const a = coverOf(copies[0]!.mediaId) ?? copies[0]!;
    await storage.delete(a.key);
    const found = await runVerify(deps, { trigger: 'cli', accountId });
    expect(found.problems).toContainEqual(expect.objectContaining({ kind: 'object-missing', key: a.key }));
    expect((await listMissingCopies(db, accountId)).map((m) => m.mediaId)).toEqual([a.mediaId]);

    const repaired = await runVerify(deps, { trigger: 'worker', accountId, repair: true });
    expect(repaired.ok).toBe(true);
    expect(await listMissingCopies(db, accountId)).toEqual([]);

    await storage.delete(a.key);
    await runVerify(deps, { trigger: 'cli', accountId });
    expect(await listMissingCopies(db, accountId)).toHaveLength(1);
    await deleteMediaCopies(db, accountId, a.mediaId);
    expect(await listMissingCopies(db, accountId)).toEqual([]);
  });
});
