import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStage, seedEarlierSyncSlow, seedFeeds, type Stage } from '../../bench/scale.ts';
import { unpackRaw } from '../../src/store/post-pack.ts';
import { feedKey } from '../../src/storage/keys.ts';
import { DAY } from '../../src/util/clock.ts';

/**
 * The soak's fast set-up (bench/scale.ts seedFeeds: shape templates, bulk statements, feeds
 * written into s3rver's folder) leaves what the slow way leaves: each account's earlier sync
 * written by the store's own functions, its listing read over HTTP by the platform client and
 * converted, its feed built by buildAccountFeed and written by storage.put. Same simulator
 * accounts, same instant: every row of every table the set-up writes, and every feed object, equal.
 */
const TABLES: Record<string, { order: string; skip: string[] }> = {
  accounts: { order: 'id', skip: [] },
  // The sealed token differs by its random nonce; what it seals is the same token.
  tokens: { order: 'account_id', skip: ['ciphertext'] },
  token_events: { order: 'account_id, kind', skip: ['id'] },
  sync_runs: { order: 'account_id', skip: ['id'] },
  posts: { order: 'account_id, media_id', skip: [] },
  media_copies: { order: 'account_id, media_id, slot', skip: [] },
  feed_publications: { order: 'account_id', skip: [] },
};

async function snapshot(stage: Stage, ids: string[]): Promise<Record<string, unknown>> {
  const out: Record<string, unknown[]> = {};
  for (const [table, { order, skip }] of Object.entries(TABLES)) {
    const { rows } = await stage.db.query<Record<string, unknown>>(`SELECT * FROM ${table} ORDER BY ${order}`);
    out[table] = rows.map((r) => {
      const row = { ...r };
      for (const k of skip) delete row[k];
      // A packed item is compared as the item it unpacks to.
      if (Buffer.isBuffer(row.raw)) row.raw = unpackRaw(row.raw);
      return row;
    });
  }
  const feeds: Record<string, unknown> = {};
  for (const id of ids) {
    const got = await stage.storage.get(feedKey(id));
    feeds[id] = got && { body: JSON.parse(got.body.toString()), contentType: got.contentType };
  }
  return { ...out, feeds };
}

describe('bench: the soak set-up', () => {
  let stage: Stage;
  beforeAll(async () => {
    stage = await openStage({ wallClock: false, linkLifetimeMs: 5 * DAY });
  }, 120_000);
  afterAll(async () => {
    await stage?.cleanup();
  });

  it('writes in bulk exactly what each account written the slow way by the store has', async () => {
    const now = new Date(stage.services.ready.clockMs);
    const counts = [1, 2, 5, 13, 40, 100];
    const age = (i: number) => (i + 1) * 3 * DAY;
    const seeded = await seedFeeds(
      stage,
      {
        count: counts.length,
        postCounts: counts,
        prefix: 'eq',
        now,
        seed: 5,
        tokenAgeMs: age,
        signedSpreadMs: 4 * DAY,
      },
      () => undefined,
    );
    expect(seeded.posts).toBe(counts.reduce((a, b) => a + b, 0));
    const ids = seeded.accounts.map((a) => a.id);
    const fast = await snapshot(stage, ids);
    expect((fast.posts as unknown[]).length).toBe(seeded.posts);
    expect((fast.media_copies as unknown[]).length).toBe(seeded.images);

    await stage.db.query('TRUNCATE accounts, token_events, sync_runs CASCADE');
    for (const [i, acc] of seeded.accounts.entries()) {
      const listing = await stage.platform.listMedia(acc.token, { pageSize: stage.config.PAGE_SIZE });
      expect(listing.complete).toBe(true);
      await seedEarlierSyncSlow(
        stage,
        { ...acc, obtainedAt: new Date(now.getTime() - age(i)), items: listing.items },
        now,
      );
    }
    const slow = await snapshot(stage, ids);
    for (const table of [...Object.keys(TABLES), 'feeds']) expect(fast[table], table).toEqual(slow[table]);
  }, 180_000);
});
