import { describe, expect, it } from 'vitest';
import { ALERT_THRESHOLDS_DAYS, daysLeft, dueThreshold } from '../../src/alerts/thresholds.ts';
import { connectUrlFor } from '../../src/alerts/messages.ts';
import { renderEmail } from '../../src/alerts/templates.ts';
import { DAY, HOUR, MINUTE } from '../../src/util/clock.ts';

const now = new Date(Date.UTC(2026, 0, 1, 9, 0));
const at = (ms: number) => new Date(now.getTime() + ms);

describe('daysLeft', () => {
  it('floors fractional days and goes negative after expiry', () => {
    expect(daysLeft(at(14 * DAY), now)).toBe(14);
    expect(daysLeft(at(14 * DAY - 1), now)).toBe(13);
    expect(daysLeft(at(12 * HOUR), now)).toBe(0);
    expect(daysLeft(at(-1), now)).toBe(-1);
  });
});

describe('dueThreshold (R-TOK-9)', () => {
  it('R-TOK-9: nothing while 14 days or more remain, 14 as soon as fewer than 14 remain', () => {
    expect(dueThreshold(at(30 * DAY), now)).toBeNull();
    expect(dueThreshold(at(14 * DAY), now)).toBeNull();
    expect(dueThreshold(at(14 * DAY - MINUTE), now)).toBe(14);
  });

  it.each([
    [13.5, 14],
    [7, 14],
    [6.9, 7],
    [3, 7],
    [2.9, 3],
    [1, 3],
    [0.9, 1],
    [0.01, 1],
  ])('%s days left => threshold %s', (left, expected) => {
    expect(dueThreshold(at(left * DAY), now)).toBe(expected);
  });

  it('a daily check crosses each threshold exactly once', () => {
    const expiresAt = at(20 * DAY + 6 * HOUR);
    const seen: number[] = [];
    for (let d = 0; d <= 20; d++) {
      const t = dueThreshold(expiresAt, at(d * DAY));
      if (t !== null && t !== seen.at(-1)) seen.push(t);
    }
    expect(seen).toEqual([...ALERT_THRESHOLDS_DAYS]);
  });
});

describe('alert emails', () => {
  const account = { id: '17841400000000001', username: 'studio.north' };
  const connectUrl = connectUrlFor('https://feeds.example.com/');

  it('expiry email names the account, the date (ISO and human), the days left, why, what to do and the link', () => {
    const m = renderEmail('operator-expiry', {
      username: account.username,
      accountId: account.id,
      expiresAt: new Date('2026-02-21T15:00:00Z'),
      daysLeft: 6,
      reason: 'the last 2 refresh attempts failed.',
      dashboardUrl: connectUrl,
    });
    expect(connectUrl).toBe('https://feeds.example.com/dashboard');
    expect(m.subject).toContain('@studio.north');
    expect(m.subject).toContain('in 6 days');
    expect(m.subject).toContain('2026-02-21');
    for (const s of [
      '17841400000000001',
      '2026-02-21',
      'Saturday, 21 February 2026, 15:00 UTC',
      'in 6 days',
      'the last 2 refresh attempts failed',
      'log in',
      'feedmirror accounts reconnect-link 17841400000000001',
      connectUrl,
    ]) {
      expect(m.text).toContain(s);
    }
    expect(m.html).toContain(`href="${connectUrl}"`);
  });

  it('says "less than a day" rather than "0 days"', () => {
    const m = renderEmail('operator-expiry', {
      username: account.username,
      accountId: account.id,
      expiresAt: new Date('2026-02-21T15:00:00Z'),
      daysLeft: 0,
      dashboardUrl: connectUrl,
    });
    expect(m.subject).toContain('in less than a day');
    expect(m.text).not.toContain('0 days');
  });

  it('reauth email says why and what to do, and escapes HTML', () => {
    const m = renderEmail('operator-reauth', {
      username: 'a<b>',
      accountId: '1',
      cause: 'the account password was changed',
      dashboardUrl: connectUrl,
    });
    expect(m.subject).toBe('feedmirror: @a<b> must log in again');
    expect(m.text).toContain('the account password was changed');
    expect(m.text).toContain(connectUrl);
    expect(m.html).toContain('@a&lt;b&gt;');
    expect(m.html).not.toContain('<b>');
  });
});
