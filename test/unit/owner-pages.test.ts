import { describe, expect, it } from 'vitest';
import { renderOwnerPage, type OwnerPageKind, type OwnerPageVars } from '../../src/http/owner-pages.ts';

/**
 * The pages an account owner sees: complete documents, branded, every value escaped, nothing the
 * Content-Security-Policy forbids (no script, no event handler attribute), and the action each
 * page owes its reader (Try again, Reconnect, what happens next).
 */
const EVIL = '<script>alert(1)</script>"\'`';
const BRAND = {
  name: 'Northwind <Studio>',
  logoUrl: 'https://cdn.example.com/logo.png',
  supportEmail: 'help@northwind.example',
  accentColor: '#0f766e',
};
const RETRY = 'https://www.instagram.example/oauth/authorize?client_id=1&state=abc';

type Case = { [K in OwnerPageKind]: { kind: K; vars: OwnerPageVars[K]; says: string[] } }[OwnerPageKind];
const cases: Case[] = [
  {
    kind: 'done',
    vars: {
      username: `shop${EVIL}`,
      expiresAt: new Date('2026-05-01T00:00:00Z'),
      feedUrl: 'https://feeds.example.com/feeds/1784.json',
      brand: BRAND,
    },
    says: [
      'Account connected',
      'is connected',
      'What happens next',
      'within a minute or so',
      'website',
      'feeds/1784.json',
    ],
  },
  {
    kind: 'done',
    vars: { username: 'shop', reconnected: true, scheduled: false },
    says: ['Account reconnected', '@shop is connected again', 'New posts of @shop are read again within a few minutes'],
  },
  {
    kind: 'declined',
    vars: { lines: ['The login was cancelled or the permission was declined.', EVIL], retryUrl: RETRY, brand: BRAND },
    says: ['Account not connected', 'The login was cancelled', 'Try again'],
  },
  {
    kind: 'expired-link',
    vars: { reason: 'This reconnect link has expired.', brand: BRAND },
    says: ['This link no longer works', 'has expired', 'Ask for a new link'],
  },
  {
    kind: 'wrong-account',
    vars: { expectedUsername: `shop${EVIL}`, retryUrl: RETRY },
    says: ['Wrong account', 'nothing was changed', 'Try again'],
  },
  {
    kind: 'status',
    vars: {
      username: `shop${EVIL}`,
      connected: false,
      reason: `the password was changed ${EVIL}`,
      daysLeft: -1,
      lastSyncAt: new Date('2026-04-01T10:00:00Z'),
      linkExpiresAt: new Date('2026-04-10T10:00:00Z'),
      reconnect: { action: '/reconnect/tok', fields: { confirm: `x${EVIL}` } },
      brand: BRAND,
    },
    says: [
      'Not updating',
      'The password was changed',
      'keeps showing the posts of the last successful update',
      'Wednesday, 1 April 2026, 10:00 UTC',
      'Reconnect @shop',
      'works once',
    ],
  },
  {
    kind: 'status',
    vars: {
      username: 'shop',
      connected: true,
      daysLeft: 12,
      expiresAt: new Date('2026-04-13T00:00:00Z'),
      reconnect: { url: RETRY },
    },
    says: ['Connected', '12 days', 'Reconnect @shop'],
  },
  {
    kind: 'notice',
    vars: { title: 'An invitation is needed', lines: ['Ask the operator.'] },
    says: ['An invitation is needed', 'Ask the operator.'],
  },
];

const text = (html: string) =>
  html
    .replace(/<style>[\s\S]*?<\/style>/, '')
    .replace(/<title>[\s\S]*?<\/title>/, '')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ');

describe('owner pages', () => {
  for (const c of cases) {
    it(`${c.kind}: a branded, script-free page that says what happened and what to do`, () => {
      const html = renderOwnerPage(c.kind, c.vars);
      expect(html.startsWith('<!doctype html>')).toBe(true);
      expect(html).toContain('</html>');
      // CSP: no script of any kind, no handler attribute, no javascript: URL.
      expect(html).not.toMatch(/<script|\son[a-z]+=|javascript:/i);
      for (const s of c.says) expect(text(html), s).toContain(s);
      // Escaped: the hostile markup is text.
      expect(html).not.toContain('<script>alert(1)');
      if (c.vars.brand) {
        expect(html).toContain('<img src="https://cdn.example.com/logo.png" alt="Northwind &lt;Studio&gt;">');
        expect(html).toContain('--accent:#0f766e');
        expect(html).toContain('mailto:help@northwind.example');
        expect(html).toContain('<title>');
        expect(html).toMatch(/· Northwind &lt;Studio&gt;<\/title>/);
      } else {
        expect(html).toMatch(/<header class="brand"><span>feedmirror<\/span><\/header>/);
      }
    });
  }

  it('the declined page without a way back says how to get one; a non-http retry link is never a button', () => {
    const none = renderOwnerPage('declined', { lines: ['x'] });
    expect(none).not.toContain('class="button"');
    expect(text(none)).toContain('ask for a new link');
    const evil = renderOwnerPage('declined', { lines: ['x'], retryUrl: 'javascript:alert(1)' });
    expect(evil).not.toContain('javascript:');
    const ok = renderOwnerPage('declined', { lines: ['x'], retryUrl: RETRY });
    expect(ok).toContain(`<a class="button" href="${RETRY.replace(/&/g, '&amp;')}">Try again</a>`);
  });

  it('the status page shows days of validity only while connected: a refused token has none that count', () => {
    const common = {
      username: 'shop',
      daysLeft: 59,
      expiresAt: new Date('2026-05-30T10:00:00Z'),
      lastSyncAt: new Date('2026-04-01T10:00:00Z'),
      reconnect: { url: RETRY },
    };
    const needsOwner = renderOwnerPage('status', {
      ...common,
      connected: false,
      reason: "the account's password was changed",
    });
    expect(text(needsOwner)).not.toContain('Validity left');
    expect(text(needsOwner)).not.toContain('59 days');
    expect(needsOwner).not.toContain('data-days-left');
    expect(needsOwner).toContain('<dd data-reason>The account&#39;s password was changed.</dd>');
    const noReason = renderOwnerPage('status', { ...common, connected: false });
    expect(noReason).toContain('<dd data-reason>The platform no longer accepts the connection.</dd>');

    const connected = renderOwnerPage('status', { ...common, connected: true, reason: 'ignored' });
    expect(text(connected)).toContain('Validity left 59 days (until Saturday, 30 May 2026, 10:00 UTC)');
    expect(connected).toContain('data-days-left="59"');
    expect(connected).not.toContain('data-reason');
  });

  it('a light accent colour gets dark button text', () => {
    expect(
      renderOwnerPage('notice', { title: 't', lines: [], brand: { name: 'x', accentColor: '#fde047' } }),
    ).toContain('--accent-text:#111827');
  });
});
