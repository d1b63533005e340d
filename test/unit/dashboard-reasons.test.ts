import { describe, expect, it } from 'vitest';
import { accountHealth, healthLine, type HealthFacts } from '../../src/accounts/health.ts';
import { reasonHtml, reasonList } from '../../src/http/dashboard/health-views.ts';
import { DAY, HOUR } from '../../src/util/clock.ts';

/**
 * R-HLT-1: one sentence per reason on every surface, readable on each: the terminal (`accounts
 * list`, doctor) shows the commands a reason names between backticks; the dashboard shows plain
 * words with each command set as code, never a literal backtick.
 */
const now = new Date('2026-06-01T12:00:00Z');

/** An account with every reason that names a command: the owner must log in, no link out, a removal held, a missing image. */
const facts: HealthFacts = {
  accountId: '17841400000000001',
  status: 'reauth_required',
  statusReason: 'a platform message with `its own` backticks <b>',
  statusReasonKind: 'password_changed',
  createdAt: new Date(now.getTime() - 30 * DAY),
  token: {
    present: true,
    expiresAt: new Date(now.getTime() + 2 * DAY),
    refreshFailures: 0,
    lastRefreshError: null,
    lastRefreshErrorKind: null,
  },
  sync: {
    lastAt: new Date(now.getTime() - HOUR),
    outcome: 'complete',
    error: null,
    errorKind: null,
    lastCompleteAt: new Date(now.getTime() - HOUR),
    skippedItems: 0,
  },
  copies: { failing: 0, gaveUp: 0, latest: null, waitingPosts: 0, oldestWaitingSince: null },
  missingObjects: {
    count: 1,
    first: { mediaId: '1790', slot: 'cover', key: 'media/a/b/cover.jpg', foundBy: 'verify', foundAt: now },
  },
  publication: { publishedAt: now, postCount: 4, demo: false },
  webhooks: [],
  removalHold: { since: now, removing: 3, publishedPosts: 4 },
  ownerEmail: 'jane@example.com',
  reconnectLink: null,
};

describe('health reasons on the dashboard and in the terminal (R-HLT-1)', () => {
  const health = accountHealth(facts, { now, syncIntervalMs: HOUR });

  it('the terminal keeps each command between backticks, recognisable', () => {
    const line = healthLine(health, Infinity);
    expect(line).toContain('`feedmirror accounts reconnect-link 17841400000000001 --send`');
    expect(line).toContain('`feedmirror refresh 17841400000000001`');
    expect(line).toContain('`feedmirror feeds confirm-removal 17841400000000001`');
  });

  it('the dashboard shows plain words: every command as code, no backtick left, values escaped', () => {
    const kinds = health.reasons.map((r) => r.kind);
    expect(kinds).toEqual(
      expect.arrayContaining(['reauth_required', 'token_expiring', 'images_missing', 'removal_held']),
    );
    const html = String(reasonList(health));
    expect(html).not.toContain('`');
    expect(html).not.toContain('&#96;');
    expect(html).toContain('<code>feedmirror accounts reconnect-link 17841400000000001 --send</code>');
    expect(html).toContain('<code>feedmirror refresh 17841400000000001</code>');
    expect(html).toContain('<code>feedmirror sync 17841400000000001 --wait</code>');
    expect(html).toContain('(a platform message with &#39;its own&#39; backticks &lt;b&gt;)');
    expect(html).not.toContain('<b>');
    expect(String(reasonHtml('run `a <b>` now'))).toBe('run <code>a &lt;b&gt;</code> now');
  });
});
