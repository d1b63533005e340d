import { describe, expect, it } from 'vitest';
import { feedCheckDue, FEED_CHECK_INTERVAL_MS } from '../../src/feeds/feed-check.ts';
import { progressReporter } from '../../jobs/feed-sync.ts';
import { HOUR, MINUTE } from '../../src/util/clock.ts';

/** Hourly syncs of one account over `hours`, at minute `minute` of each hour: which HEAD the feed. */
function checksOver(accountId: string, hours: number, minute = 17): number[] {
  const start = Date.UTC(2026, 10, 1) + minute * MINUTE;
  const due: number[] = [];
  for (let h = 1; h < hours; h++)
    if (feedCheckDue(accountId, new Date(start + (h - 1) * HOUR), new Date(start + h * HOUR))) due.push(h);
  return due;
}

describe('how often a scheduled sync makes sure the feed object is in storage', () => {
  it('an hourly sync checks once in every six hours, every six hours, whatever the account', () => {
    for (const id of ['17841400000000001', '17841400000000002', '90', 'acc-x']) {
      const due = checksOver(id, 49);
      expect(due.length, id).toBe(8);
      for (let i = 1; i < due.length; i++) expect(due[i]! - due[i - 1]!, id).toBe(FEED_CHECK_INTERVAL_MS / HOUR);
    }
  });

  it('a first sync, or one after a long gap, always checks; one a minute after the last does not unless a window ends between', () => {
    const now = new Date(Date.UTC(2026, 10, 1, 12));
    expect(feedCheckDue('17841400000000001', null, now)).toBe(true);
    expect(feedCheckDue('17841400000000001', new Date(now.getTime() - FEED_CHECK_INTERVAL_MS), now)).toBe(true);
    const minuteApart = Array.from({ length: 600 }, (_, i) =>
      feedCheckDue(`1784140000000${i}`, new Date(now.getTime() - MINUTE), now),
    ).filter(Boolean).length;
    // A window ends within that minute for about 1 in 360 accounts.
    expect(minuteApart).toBeLessThan(10);
  });

  it('the accounts that sync at the same minute check in different hours (their windows are shifted by their id)', () => {
    const firstCheck = new Set<number>();
    for (let i = 0; i < 60; i++) firstCheck.add(checksOver(`1784140000000${String(i).padStart(4, '0')}`, 8)[0]!);
    // Six hours to spread over: 60 accounts use all of them.
    expect(firstCheck.size).toBe(6);
  });
});

describe("a sync's progress reports", () => {
  it('none in the first second, then at most one a second', () => {
    const report = progressReporter(10_000, 1_000);
    expect([10_000, 10_500, 10_999].map(report)).toEqual([false, false, false]);
    expect(report(11_000)).toBe(true);
    expect(report(11_400)).toBe(false);
    expect(report(12_100)).toBe(true);
  });
});
