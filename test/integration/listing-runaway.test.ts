import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import type { FeedDeps } from '../../src/feeds/deps.ts';
import { syncAccount, type SyncResult } from '../../src/feeds/sync.ts';
import { mirrorLimitsFromConfig } from '../../src/mirror/copy.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { createStorage } from '../../src/storage/index.ts';
import { getAccount, upsertAccount } from '../../src/store/accounts.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createPool } from '../../src/store/db.ts';
import { getListingGuard } from '../../src/store/listing-guard.ts';
import { migrate } from '../../src/store/migrate.ts';
import { listPosts } from '../../src/store/posts.ts';
import { saveToken } from '../../src/store/tokens.ts';
import { DAY, FileClock, HOUR } from '../../src/util/clock.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { runFeedmirror } from '../support/processes.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { workerEnv } from '../support/worker-env.ts';
import { simPlatformClient } from '../support/sim-platform.ts';

/**
 * R-NET-6: a listing that keeps paging past what the account can hold stops on its own, long
 * before the hourly budget (180 calls) is spent: on a cursor seen before, on pages that bring no
 * post not already read, or past a bound from the account's last complete listing. It ends
 * incomplete with one reason (nothing pruned), the account's error kind says why, and its
 * scheduled syncs wait longer each time (an operator's sync does not). The platform is the
 * simulator over HTTP, made to page forever (setEndlessPaging).
 */
const T0 = Date.UTC(2026, 4, 1, 9);
const PAGE_SIZE = 10;

let sim: Simulator;
let db: pg.Pool;
let drop: () => Promise<void>;
let deps: FeedDeps;
let key = '';
let databaseUrl = '';
const dirs: string[] = [];

async function connectAccount(username: string, posts: number): Promise<string> {
  const acc = sim.createAccount({ username, posts });
  await upsertAccount(db, { id: acc.id, username: acc.username }, sim.clock.now());
  const token = sim.issueLongLivedToken(acc.id);
  registerSecretForAudit(token);
  await saveToken(
    db,
    TokenCipher.fromEnv(key),
    { accountId: acc.id, accessToken: token, obtainedAt: sim.clock.now(), expiresAt: new Date(T0 + 60 * DAY) },
    'imported',
  );
  return acc.id;
}

/** Listing calls the simulator saw for this account's token since `from`. */
const listingCalls = (from: number) => sim.requests.slice(from).filter((r) => /\/media$/.test(r.path)).length;

function synced(r: SyncResult): Extract<SyncResult, { outcome: 'synced' }> {
  if (r.outcome !== 'synced') throw new Error(`expected a sync, got ${r.outcome}: ${r.reason}`);
  return r;
}

beforeAll(async () => {
  key = randomBytes(32).toString('base64');
  registerSecretForAudit(key);
  sim = await startSimulator({ start: T0 });
  const database = await freshDatabase('runaway');
  drop = database.drop;
  databaseUrl = database.url;
  db = createPool(database.url, { max: 3 });
  await migrate(db);
  const storageDir = mkdtempSync(join(tmpdir(), 'fm-runaway-'));
  dirs.push(storageDir);
  const config = loadConfig({ STORAGE_URL: storageDir, MEDIA_ALLOWED_HOSTS: sim.imageHost });
  deps = {
    db,
    cipher: TokenCipher.fromEnv(key),
    platform: simPlatformClient(sim, { maxRetries: 0, pageSize: PAGE_SIZE }),
    storage: createStorage(config),
    limits: mirrorLimitsFromConfig(config),
    clock: sim.clock,
    logger: silentLogger,
  };
}, 60_000);

afterAll(async () => {
  await db?.end();
  await drop?.();
  await sim?.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('R-NET-6 a listing that never ends', () => {
  it('a new cursor on every page: stopped after 3 pages, nothing pruned, kind listing_runaway; scheduled syncs back off, manual ones do not', async () => {
    const id = await connectAccount('runaway.cursor', 12);
    const first = synced(await syncAccount(deps, id));
    expect(first.complete).toBe(true);
    expect((await getListingGuard(db, id)).lastCompleteItems).toBe(12);

    sim.setEndlessPaging(id, 'new-cursor');
    let from = sim.requests.length;
    const r = synced(await syncAccount(deps, id));
    expect(r.complete).toBe(false);
    expect(r.pages).toBe(3);
    expect(listingCalls(from)).toBe(3);
    expect(r.pruned).toEqual([]);
    expect(r.error).toMatch(/2 pages in a row brought no post not already read; the listing is incomplete/);
    expect((await listPosts(db, id)).length).toBe(first.posts); // one copyright-flagged item is left out by policy
    const account = await getAccount(db, id);
    expect(account?.lastSyncErrorKind).toBe('listing_runaway');
    expect(account?.lastSyncError).toMatch(/scheduled syncs of this account wait until 2026-05-01T11:00:00\.000Z/);

    // The next hourly run: paused, no call made.
    sim.clock.advance(HOUR);
    from = sim.requests.length;
    const paused = await syncAccount(deps, id);
    expect(paused).toMatchObject({
      outcome: 'skipped',
      reason: expect.stringMatching(/^listing paused until 2026-05-01T11:00:00\.000Z after 1 listing/),
    });
    expect(listingCalls(from)).toBe(0);

    // Two hours after the first: it lists again, is stopped again, and waits four hours now.
    sim.clock.advance(HOUR);
    synced(await syncAccount(deps, id));
    expect((await getListingGuard(db, id)).pausedUntil?.toISOString()).toBe('2026-05-01T15:00:00.000Z');
    sim.clock.advance(3 * HOUR);
    expect((await syncAccount(deps, id)).outcome).toBe('skipped');

    // The operator's sync lists at once; once the platform ends its paging again, the pause is over.
    sim.setEndlessPaging(id, null);
    expect(synced(await syncAccount(deps, id, { manual: true })).complete).toBe(true);
    expect(await getListingGuard(db, id)).toEqual({ lastCompleteItems: 12, runaways: 0, pausedUntil: null });
    expect(synced(await syncAccount(deps, id)).complete).toBe(true);
  });

  it('the same cursor again and again: stopped at the second page', async () => {
    const id = await connectAccount('runaway.same', 12);
    sim.setEndlessPaging(id, 'same-cursor');
    const r = synced(await syncAccount(deps, id));
    expect(r.complete).toBe(false);
    expect(r.pages).toBe(2);
    expect(r.error).toMatch(/paging\.next repeats a cursor of an earlier page/);
    expect((await getAccount(db, id))?.lastSyncErrorKind).toBe('listing_runaway');
  });

  it('new posts on every page past twice the last complete listing plus 100: stopped there; the bound doubles for the next attempt', async () => {
    const id = await connectAccount('runaway.bound', 2);
    expect(synced(await syncAccount(deps, id)).complete).toBe(true);
    for (let i = 0; i < 150; i++) sim.addPost(id, { kind: 'image' });
    const r = synced(await syncAccount(deps, id));
    expect(r.complete).toBe(false);
    expect(r.error).toMatch(/more items than this account can plausibly hold \(104, from its last complete listing\)/);
    expect(r.posts).toBeGreaterThanOrEqual(104);
    expect(r.posts).toBeLessThan(104 + PAGE_SIZE);
    expect(r.pruned).toEqual([]);
    // After the pause the bound is 208: the account that really grew is listed to its end.
    sim.clock.advance(2 * HOUR);
    const again = synced(await syncAccount(deps, id));
    expect(again.complete).toBe(true);
    expect(again.posts).toBe(152);
    expect((await getListingGuard(db, id)).lastCompleteItems).toBe(152);
  });

  it('an account never listed completely stops at LISTING_MAX_ITEMS', async () => {
    const id = await connectAccount('runaway.ceiling', 40);
    const r = synced(await syncAccount({ ...deps, listingMaxItems: 25 }, id));
    expect(r.complete).toBe(false);
    expect(r.error).toMatch(/\(25, from its last complete listing\)/);
  });

  it('sync --wait (a real process) ends with its summary and exit 1, never a stack, after 3 listing calls', async () => {
    const id = await connectAccount('runaway.cli', 5);
    sim.setEndlessPaging(id, 'new-cursor');
    const clockDir = mkdtempSync(join(tmpdir(), 'fm-runaway-clock-'));
    dirs.push(clockDir);
    FileClock.write(join(clockDir, 'now'), sim.clock.now().getTime());
    const storageDir = mkdtempSync(join(tmpdir(), 'fm-runaway-cli-'));
    dirs.push(storageDir);
    const env = workerEnv({
      sim,
      databaseUrl,
      redis: redisForTest('runaway-cli'),
      key,
      clockFile: join(clockDir, 'now'),
      storageDir,
      extra: { LOG_LEVEL: 'warn', PAGE_SIZE: '4', MEDIA_VARIANT_WIDTHS: '160' },
    });
    const from = sim.requests.length;
    const run = await runFeedmirror(['sync', id, '--wait'], env, { timeoutMs: 60_000 });
    expect(run.code).toBe(1);
    expect(listingCalls(from)).toBe(3);
    const summary = run.stdout.split('\n').find((l) => l.startsWith('summary: '));
    expect(summary).toMatch(/^summary: INCOMPLETE \(nothing pruned\) listing, 3 pages/);
    expect(run.stdout).toMatch(
      /listing stopped early: media list: stopped after 3 pages and \d+ items: 2 pages in a row brought no post/,
    );
    expect(run.stderr).not.toMatch(/\n\s+at |Error:/);
  }, 90_000);
});
