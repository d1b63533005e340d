import { describe, expect, it } from 'vitest';
import { needsPublish, sweepDue, type SyncResult } from '../../src/feeds/sync.ts';
import { syncFlow } from '../../jobs/feed-sync.ts';
import { publishFeedPayload } from '../../jobs/publish-feed.ts';

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
  it('live links by the minute they die, a dead link behind those dying within 6 hours, unknown expiry last', async () => {
    const { copyPriority, LAST_PRIORITY } = await import('../../jobs/feed-sync.ts');
    const now = new Date('2026-06-01T12:00:00Z');
    const inMin = (m: number) => new Date(now.getTime() + m * 60_000);
    expect(copyPriority(inMin(1), now)).toBeGreaterThanOrEqual(1);
    expect(copyPriority(inMin(1), now)).toBeLessThan(copyPriority(inMin(2), now));
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

  it('sorts by when links die, not by what was left when their copies were queued', async () => {
    const { copyPriority, DEAD_LINK_AFTER_MS } = await import('../../jobs/feed-sync.ts');
    const t = Date.parse('2026-06-01T12:00:00Z');
    const at = (m: number) => new Date(t + m * 60_000);
    // Queued at the catch-up's start with 100 minutes left, and an hour later with 60 left: the
    // first dies 20 minutes earlier and goes first.
    expect(copyPriority(at(100), at(0))).toBeLessThan(copyPriority(at(120), at(60)));
    // The same minute gives the same priority whenever it was queued.
    expect(copyPriority(at(300), at(0))).toBe(copyPriority(at(300), at(200)));
    // A dead link queued an hour later sorts as dying 6 hours after it was queued.
    expect(copyPriority(at(-5), at(60))).toBe(copyPriority(new Date(t + 60 * 60_000 + DEAD_LINK_AFTER_MS), at(60)));
  });

  it('stays within 1..PRIORITY_LIMIT at the ends of a priority era, deadlines up to two years ahead in order', async () => {
    const { copyPriority, PRIORITY_ERA_MINUTES, LAST_PRIORITY } = await import('../../jobs/feed-sync.ts');
    const era = PRIORITY_ERA_MINUTES * 60_000;
    for (const now of [new Date(era * 1700), new Date(era * 1701 - 60_000), new Date(era * 1701 - 1)]) {
      const soon = copyPriority(new Date(now.getTime() + 60_000), now);
      const later = copyPriority(new Date(now.getTime() + 600 * 24 * 3_600_000), now);
      expect(soon).toBeGreaterThanOrEqual(1);
      expect(later).toBeGreaterThan(soon);
      expect(later).toBeLessThan(LAST_PRIORITY);
    }
  });
});

describe('which publishes sweep the account media folder (R-LNK-6)', () => {
  it('a complete listing that pruned or changed posts sweeps; one that only added posts does not', () => {
    expect(sweepDue({ ...unchanged, pruned: ['1790'] })).toBe(true);
    expect(sweepDue({ ...unchanged, changedPosts: 1 })).toBe(true);
    expect(sweepDue({ ...unchanged, newPosts: 2 })).toBe(false);
    expect(sweepDue(unchanged)).toBe(false);
    // An incomplete listing may not say what is gone (R-LNK-6): never a sweep.
    expect(sweepDue({ ...unchanged, complete: false, pruned: ['1790'], changedPosts: 1 })).toBe(false);
  });
  it("the worker's publish job carries it; a job queued before the flag existed sweeps as before", () => {
    const redis = { url: 'redis://127.0.0.1:6379', prefix: 'fm-unit' };
    const at = new Date('2026-11-26T12:00:00Z');
    expect(syncFlow(redis, { ...unchanged, newPosts: 1 }, at).data).toMatchObject({ sweep: false });
    expect(syncFlow(redis, { ...unchanged, pruned: ['1790'] }, at).data).toMatchObject({ sweep: true });
    expect(publishFeedPayload.parse({ accountId: unchanged.accountId, complete: true }).sweep).toBe(true);
  });
});
