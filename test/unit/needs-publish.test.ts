import { describe, expect, it } from 'vitest';
import { needsPublish, type SyncResult } from '../../src/feeds/sync.ts';

type Synced = Extract<SyncResult, { outcome: 'synced' }>;
const unchanged: Synced = {
  outcome: 'synced',
  accountId: '17841400000000001',
  complete: true,
  pages: 1,
  calls: 1,
  posts: 3,
  newPosts: 0,
  changedPosts: 0,
  renewedVideos: 0,
  dropped: [],
  pruned: [],
  copies: [],
  feedDue: false,
  feedMissing: false,
};

describe('which syncs queue a publish job', () => {
  it('an unchanged complete sync publishes nothing (no publish job: the feed would come out the same)', () => {
    expect(needsPublish(unchanged)).toBe(false);
  });
  it('anything the feed lacks, a prune, or a feed that is due publishes', () => {
    expect(needsPublish({ ...unchanged, newPosts: 1 })).toBe(true);
    expect(needsPublish({ ...unchanged, changedPosts: 1 })).toBe(true);
    expect(needsPublish({ ...unchanged, pruned: ['1790'] })).toBe(true);
    expect(needsPublish({ ...unchanged, renewedVideos: 1 })).toBe(true);
    expect(
      needsPublish({ ...unchanged, copies: [{ accountId: '1', mediaId: '2', slot: 'cover', deadline: null }] }),
    ).toBe(true);
    // R-SCH-11: the demo feed is replaced by the first complete sync, even of an empty account.
    expect(needsPublish({ ...unchanged, posts: 0, feedDue: true })).toBe(true);
    // An incomplete listing never replaces the demo feed on its own.
    expect(needsPublish({ ...unchanged, complete: false, feedDue: true })).toBe(false);
    // A feed object missing from storage is written again, whether the listing finished or not.
    expect(needsPublish({ ...unchanged, feedMissing: true })).toBe(true);
    expect(needsPublish({ ...unchanged, complete: false, feedMissing: true })).toBe(true);
  });
});

describe('copy order after downtime (R-LNK-5)', () => {
  it('live links by minutes left, a dead link behind those dying within 6 hours, unknown expiry last', async () => {
    const { copyPriority, LAST_PRIORITY } = await import('../../jobs/feed-sync.ts');
    const now = new Date('2026-06-01T12:00:00Z');
    const inMin = (m: number) => new Date(now.getTime() + m * 60_000);
    expect(copyPriority(inMin(1), now)).toBe(1);
    expect(copyPriority(inMin(2), now)).toBeLessThan(copyPriority(inMin(3), now));
    expect(copyPriority(inMin(59), now)).toBeLessThan(copyPriority(inMin(61), now)); // not one bucket per hour
    const dead = copyPriority(inMin(-30), now);
    expect(dead).toBeGreaterThan(copyPriority(inMin(5 * 60), now));
    expect(dead).toBeLessThan(copyPriority(inMin(7 * 60), now));
    expect(copyPriority(null, now)).toBe(LAST_PRIORITY);
    expect(copyPriority(inMin(10 * 365 * 24 * 60), now)).toBeLessThan(LAST_PRIORITY);
    // R-OWN-9: last is BullMQ's own limit, never above it (2^21 failed every sync of the account).
    const { PRIORITY_LIMIT } = await import('bullmq');
    expect(LAST_PRIORITY).toBe(PRIORITY_LIMIT);
    expect(copyPriority(new Date(Number.NaN), now)).toBe(LAST_PRIORITY);
  });
});
