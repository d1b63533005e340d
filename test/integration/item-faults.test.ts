import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FeedDeps } from '../../src/feeds/deps.ts';
import { validateFeed } from '../../src/schema/validate.ts';
import type { Simulator } from '../../src/simulator/index.ts';
import { getAccount, listAccounts } from '../../src/store/accounts.ts';
import { listPosts } from '../../src/store/posts.ts';
import { syncSummary } from '../../src/accounts/sync-summary.ts';
import { loadAccountHealth } from '../../src/accounts/health.ts';
import type { FeedSyncReturn } from '../../jobs/feed-sync.ts';
import { createQueues, type Queues } from '../../jobs/queues.ts';
import { main } from '../../src/cli/main.ts';
import { memoryIO } from '../support/memory-io.ts';
import { redisForTest } from '../support/services.ts';
import { dropQueues } from '../support/queues.ts';
import { importSimAccount } from '../support/accounts.ts';
import { openFeedStage, type FeedStage } from '../support/feed-stage.ts';
import { syncThroughWorkers } from '../support/worker-sync.ts';

/**
 * One bad item from the platform never stops an account: a page holds one item with a malformed
 * id (`1799.1`, as seen in the wild) and one with no timestamp; the others are published, the
 * account shows the skipped items and why, and the next sync is not blocked.
 */
let stage: FeedStage;
let db: pg.Pool;
let dbUrl: string;
let sim: Simulator;
let deps: FeedDeps;
let storageDir: string;
let accountId: string;
let queues: Queues;
const redis = redisForTest('itemfaults');

beforeAll(async () => {
  stage = await openFeedStage('itemfaults');
  ({ db, databaseUrl: dbUrl, sim, deps, storageDir } = stage);
  const acc = sim.createAccount({ username: 'glitchy.shop', posts: 4 });
  accountId = acc.id;
  await importSimAccount(db, stage.cipher, sim, acc);
  queues = createQueues(redis);
});

afterAll(async () => {
  await dropQueues(queues);
  await stage?.close();
});

async function syncThroughTheWorkers(): Promise<FeedSyncReturn> {
  return syncThroughWorkers(deps, redis, queues, accountId);
}

async function readFeed() {
  const v = validateFeed(JSON.parse(await readFile(join(storageDir, 'feeds', `${accountId}.json`), 'utf8')));
  if (!v.ok) throw new Error(JSON.stringify(v.problems));
  return v.feed;
}

describe('one bad item never stops an account', () => {
  it('a malformed id and an item without timestamp are skipped with their reasons; the other posts are published', async () => {
    const good = sim.posts(accountId).map((p) => p.id);
    sim.addRawItem(accountId, {
      id: '1799.1',
      media_type: 'IMAGE',
      media_url: 'https://example.invalid/x.jpg',
      permalink: 'https://www.instagram.com/p/x/',
      timestamp: '2026-01-01T00:00:00+0000',
    });
    sim.addRawItem(accountId, {
      id: '17990000000000777',
      media_type: 'IMAGE',
      media_url: 'https://example.invalid/y.jpg',
      permalink: 'https://www.instagram.com/p/y/',
    });
    sim.addRawItem(accountId, { id: '17990000000000778', media_type: 'IMAGE', like_count: 'many' }); // wrong type: malformed in the listing

    const result = await syncThroughTheWorkers();
    expect(result.outcome).toBe('synced');
    if (result.outcome !== 'synced') return;
    expect(result.complete).toBe(true);
    expect(result.dropped.map((d) => d.id).sort()).toEqual(['1799.1', '17990000000000777', '17990000000000778']);

    // The others are published.
    const feed = await readFeed();
    expect(feed.demo).toBe(false);
    expect(feed.posts.map((p) => p.id).sort()).toEqual([...good].sort());
    expect((await listPosts(db, accountId)).map((p) => p.mediaId).sort()).toEqual([...good].sort());

    // The account shows the skipped items and why, never "ok".
    const account = (await getAccount(db, accountId))!;
    expect(account.lastSyncError).toBeNull();
    expect(account.skippedItems).toBe(3);
    expect(account.skippedReasons).toEqual(
      expect.arrayContaining([
        { id: '1799.1', reason: expect.stringMatching(/malformed id/) },
        { id: '17990000000000777', reason: 'no timestamp returned' },
        { id: '17990000000000778', reason: expect.stringMatching(/malformed item: like_count/) },
      ]),
    );
    const summary = syncSummary((await listAccounts(db, sim.clock.now())).find((a) => a.id === accountId)!);
    expect(summary.state).toBe('skipped');
    expect(summary.text).toMatch(/^3 items skipped: /);

    // `accounts list --json` says the same.
    const io = memoryIO({
      env: { DATABASE_URL: dbUrl, REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix, LOG_LEVEL: 'silent' },
    });
    expect(await main(['accounts', 'list', '--json'], io)).toBe(0);
    const listed = (JSON.parse(io.out()) as Array<{ id: string; lastSync: string; skippedItems: number }>).find(
      (a) => a.id === accountId,
    )!;
    expect(listed.skippedItems).toBe(3);
    expect(listed.lastSync).toMatch(/^3 items skipped: .*1799\.1/);
  });

  it('the next sync is not blocked: once the platform sends clean items the account is ok again, and a new post arrives', async () => {
    sim.clearRawItems(accountId);
    const added = sim.addPost(accountId, { kind: 'image' });
    const result = await syncThroughTheWorkers();
    expect(result.outcome).toBe('synced');
    expect((await readFeed()).posts.map((p) => p.id)).toContain(added);
    const account = (await getAccount(db, accountId))!;
    expect(account).toMatchObject({ skippedItems: 0, skippedReasons: [], lastSyncError: null });
    expect(syncSummary(account)).toEqual({ state: 'complete', text: 'complete' });
  });

  it('a listing that stops records its error kind, and the account says "listing incomplete", never "ok"', async () => {
    sim.injectFault({ path: '/me/media', kind: 'status', status: 500, times: 5 });
    await syncThroughTheWorkers();
    const account = (await getAccount(db, accountId))!;
    expect(account.lastSyncErrorKind).toBe('network');
    expect(account.lastSyncOutcome).toBe('incomplete');
    expect(syncSummary(account).text).toMatch(/^listing incomplete: network: /);
    // R-HLT-2: its health says so too (a warning: feedmirror retries on its own).
    const [one] = await loadAccountHealth(db, { now: sim.clock.now(), syncIntervalMs: 3_600_000 }, { accountId });
    expect(one!.health.verdict).toBe('warn');
    expect(one!.health.reasons.map((r) => r.kind)).toContain('sync_incomplete');
  });
});
