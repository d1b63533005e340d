import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeAccount, upsertAccount } from '../../src/store/accounts.ts';
import { createPool } from '../../src/store/db.ts';
import { getRemovalHold, listRemovalHolds, saveRemovalHold, takeRemovalHold } from '../../src/store/holds.ts';
import { migrate } from '../../src/store/migrate.ts';
import { freshDatabase } from '../support/services.ts';

let db: pg.Pool;
let drop: () => Promise<void>;
const at = new Date('2026-04-01T10:00:00Z');
const later = new Date('2026-04-01T11:30:00Z');

beforeAll(async () => {
  const fresh = await freshDatabase('holds');
  drop = fresh.drop;
  db = createPool(fresh.url, { max: 2 });
  await migrate(db);
  await upsertAccount(db, { id: '17841400000000001', username: 'harbour.shop' }, at);
  await upsertAccount(db, { id: '17841400000000002', username: 'corner.cafe' }, at);
});
afterAll(async () => {
  await db?.end();
  await drop?.();
});

describe('removal holds in PostgreSQL (R-OWN-7)', () => {
  it('none until one is saved; then what was saved, with the listing that last asked for it', async () => {
    expect(await getRemovalHold(db, '17841400000000001')).toBeNull();
    await saveRemovalHold(
      db,
      '17841400000000001',
      { since: at, removing: ['1790002', '1790001'], listedPosts: 0, publishedPosts: 3 },
      at,
    );
    expect(await getRemovalHold(db, '17841400000000001')).toEqual({
      accountId: '17841400000000001',
      since: at,
      lastSeenAt: at,
      removing: ['1790001', '1790002'],
      listedPosts: 0,
      publishedPosts: 3,
    });
    // A later listing asking again keeps `since` when the caller keeps it.
    await saveRemovalHold(
      db,
      '17841400000000001',
      { since: at, removing: ['1790001'], listedPosts: 1, publishedPosts: 3 },
      later,
    );
    expect(await getRemovalHold(db, '17841400000000001')).toMatchObject({
      since: at,
      lastSeenAt: later,
      removing: ['1790001'],
      listedPosts: 1,
    });
    expect([...(await listRemovalHolds(db)).keys()]).toEqual(['17841400000000001']);
  });

  it('taking a hold returns it once: a second take finds nothing', async () => {
    const first = await takeRemovalHold(db, '17841400000000001');
    expect(first?.removing).toEqual(['1790001']);
    expect(await takeRemovalHold(db, '17841400000000001')).toBeNull();
    expect(await getRemovalHold(db, '17841400000000001')).toBeNull();
  });

  it("a removed account's hold goes with it", async () => {
    await saveRemovalHold(
      db,
      '17841400000000002',
      { since: at, removing: ['1790009'], listedPosts: 0, publishedPosts: 1 },
      at,
    );
    await removeAccount(db, '17841400000000002', later);
    expect(await getRemovalHold(db, '17841400000000002')).toBeNull();
  });
});
