import { describe, expect, it } from 'vitest';
import { accountPage, type AccountPageData } from '../../src/http/dashboard/account-views.ts';
import type { AccountOverview } from '../../src/http/dashboard/data.ts';
import { FORM_MAX_FIELDS } from '../../src/http/dashboard/index.ts';
import { accountsPage, removeConfirmPage } from '../../src/http/dashboard/accounts-views.ts';
import type { LayoutOptions } from '../../src/http/dashboard/layout.ts';
import { webhooksPage } from '../../src/http/dashboard/webhooks-views.ts';
import {
  isWidgetFormPost,
  WIDGET_FORM_MAX_FIELDS,
  WIDGET_SETTING_FIELDS,
} from '../../src/http/dashboard/widgets-routes.ts';
import { widgetPage, widgetsPage } from '../../src/http/dashboard/widgets-views.ts';
import type { Account } from '../../src/store/accounts.ts';
import { WIDGET_FILTER_TYPES, widgetOptionsSchema } from '../../src/schema/widget-document.ts';
import { WIDGET_MAX_ACCOUNTS, type WidgetCandidate, type WidgetView } from '../../src/widgets/widgets.ts';
import { WEBHOOK_EVENTS } from '../../src/webhooks/events.ts';

/**
 * Every form of the dashboard, rendered with the most it can hold (every checkbox ticked, every
 * account and post type offered), fits the field bound its route reads (index.ts): 20, or a
 * widget form's 72. A form that outgrew its bound would be refused with 413 (docs/security.md).
 */
const NOW = new Date('2026-03-01T12:00:00Z');
const o: LayoutOptions = { csrf: 'c'.repeat(43), mode: 'password', user: 'operator', connectUrl: '/dashboard/connect' };

/** Each form of a page: its action and the fields it sends with everything ticked. */
function forms(html: string): Array<{ action: string; fields: string[] }> {
  return [...html.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)].map((m) => ({
    action: m[1]!.replace(/&amp;/g, '&'),
    fields: [...m[2]!.matchAll(/<(?:input|select|textarea|button)\b[^>]*\bname="([^"]+)"/g)].map((f) => f[1]!),
  }));
}

function boundOf(action: string): number {
  return isWidgetFormPost('POST', action.replace(/^\/dashboard/, '')) ? WIDGET_FORM_MAX_FIELDS : FORM_MAX_FIELDS;
}

const account: Account = {
  id: '17841400000000001',
  username: 'harbour.shop',
  displayName: 'Harbour Shop',
  avatarUrl: null,
  accountType: 'BUSINESS',
  status: 'reauth_required',
  statusReason: 'password changed (code 190/460)',
  statusReasonKind: 'password_changed',
  refusedFields: [],
  createdAt: NOW,
  updatedAt: NOW,
  lastSyncAt: NOW,
  lastSyncError: null,
  lastSyncErrorKind: null,
  skippedItems: 0,
  skippedReasons: [],
  lastSyncOutcome: 'complete',
  lastCompleteSyncAt: NOW,
  owner: { name: 'Jane', email: 'jane@example.com', language: null, alerts: true },
};
const hold = {
  accountId: account.id,
  since: NOW,
  lastSeenAt: NOW,
  removing: ['1', '2', '3'],
  listedPosts: 1,
  publishedPosts: 4,
};
const facts = {
  accountId: account.id,
  username: account.username,
  status: account.status,
  statusReason: account.statusReason,
  statusReasonKind: account.statusReasonKind,
  createdAt: NOW,
  token: { present: true, expiresAt: NOW, refreshFailures: 0, lastRefreshError: null, lastRefreshErrorKind: null },
  sync: {
    lastAt: NOW,
    outcome: 'complete' as const,
    error: null,
    errorKind: null,
    lastCompleteAt: NOW,
    skippedItems: 0,
  },
  copies: { failing: 0, gaveUp: 0, latest: null, waitingPosts: 0, oldestWaitingSince: null },
  missingObjects: { count: 0, first: null },
  publication: { publishedAt: NOW, postCount: 4, demo: false },
  webhooks: [],
  removalHold: { since: NOW, removing: 3, publishedPosts: 4 },
  ownerEmail: 'jane@example.com',
  reconnectLink: null,
} satisfies AccountPageData['facts'];
const accounts = Array.from({ length: WIDGET_MAX_ACCOUNTS }, (_, i) => ({
  id: `1784140000000${String(i).padStart(4, '0')}`,
  username: `account.${i}`,
}));

describe('the fields of every dashboard form fit the bound its route reads', () => {
  it('the bounds docs/security.md names: 20, and 72 for a widget (its settings, every type, 50 accounts)', () => {
    expect(FORM_MAX_FIELDS).toBe(20);
    expect(WIDGET_FORM_MAX_FIELDS).toBe(
      WIDGET_SETTING_FIELDS.length + WIDGET_FILTER_TYPES.length + WIDGET_MAX_ACCOUNTS,
    );
    expect(WIDGET_FORM_MAX_FIELDS).toBe(72);
  });

  it('accounts, account, remove, widgets, widget and webhooks pages', () => {
    const overview = {
      ...account,
      hasToken: true,
      expiresAt: NOW,
      obtainedAt: NOW,
      daysLeft: 30,
      refreshFailures: 0,
      lastRefreshError: null,
      lastRefreshErrorKind: null,
      lastRefreshAttemptAt: null,
      posts: 4,
      copies: 4,
      copyBytes: 1000,
      feed: { publishedAt: NOW, postCount: 4, demo: false },
      removalHold: hold,
      health: { verdict: 'fail', reasons: [] },
    } satisfies AccountOverview;
    const page: AccountPageData = {
      account,
      facts,
      health: { verdict: 'fail', reasons: [] },
      copies: { n: 4, bytes: 1000 },
      failures: [],
      syncs: [],
      events: [],
      deliveries: [],
      removalHold: hold,
      now: NOW,
      ownerAlertsOn: true,
      reconnectLink: null,
      linksOffered: true,
    };
    const options = widgetOptionsSchema.parse({ filters: { types: [...WIDGET_FILTER_TYPES] } });
    const widget: WidgetView = {
      id: 'w_abcdefghij',
      name: 'Wall',
      layout: 'grid',
      options,
      accounts: accounts.map((a) => a.id),
      hiddenPosts: ['2'],
      createdAt: NOW.toISOString(),
      updatedAt: NOW.toISOString(),
      publishedAt: NOW.toISOString(),
      documentUrl: 'http://x/widgets/w_abcdefghij.json',
      fragmentUrl: 'http://x/widgets/w_abcdefghij.html',
      scriptUrl: 'http://x/widget/feedmirror-widget.js',
      embed: '<div data-feedmirror-widget="w_abcdefghij"></div>',
    };
    const post = (id: string, hidden: boolean): WidgetCandidate => ({
      id,
      accountId: accounts[0]!.id,
      username: accounts[0]!.username,
      publishedAt: NOW.toISOString(),
      type: 'image',
      text: 'x',
      thumbnailUrl: null,
      url: 'https://example.com/p',
      hidden,
      filtered: false,
    });
    const endpoint = {
      id: 'wh_abcdefgh',
      url: 'https://example.com/hook',
      events: [...WEBHOOK_EVENTS],
      description: 'x',
      createdAt: NOW,
      previousValidUntil: null,
    };
    const pages = {
      accounts: accountsPage([overview], { ...o, warnings: [] }),
      account: accountPage(page, o),
      remove: removeConfirmPage(account, o),
      // The create form lists every account; a widget takes at most 50 of them.
      widgets: widgetsPage([widget], accounts, new Map(), { ...o, viewsCounted: true }),
      widget: widgetPage(
        widget,
        accounts,
        [post('1', false), post('2', true)],
        { last7: 0, last30: 0 },
        {
          ...o,
          viewsCounted: true,
          documentPath: '/dashboard/widgets/w_abcdefghij/document.json?k=x',
        },
      ),
      webhooks: webhooksPage([endpoint], { ...o, allowPrivate: false }),
    };
    const seen = new Map<string, number>();
    for (const [name, html] of Object.entries(pages))
      for (const f of forms(html)) {
        expect(f.fields.length, `${name}: ${f.action} sends ${f.fields.join(', ')}`).toBeLessThanOrEqual(
          boundOf(f.action),
        );
        seen.set(f.action, Math.max(seen.get(f.action) ?? 0, f.fields.length));
      }
    // Every action of the dashboard was rendered, and the largest forms are what the bounds say.
    expect([...seen.keys()].map((a) => a.replace(/\d{5,}|w_[a-z2-7]{10}|wh_[a-z0-9]+/g, ':id')).sort()).toEqual([
      '/dashboard/accounts/:id/confirm-removal',
      '/dashboard/accounts/:id/owner',
      '/dashboard/accounts/:id/owner/clear',
      '/dashboard/accounts/:id/reconnect-link',
      '/dashboard/accounts/:id/refresh',
      '/dashboard/accounts/:id/remove',
      '/dashboard/accounts/:id/sync',
      '/dashboard/invitations',
      '/dashboard/logout',
      '/dashboard/logout-everywhere',
      '/dashboard/webhooks',
      '/dashboard/webhooks/:id/remove',
      '/dashboard/webhooks/:id/rotate',
      '/dashboard/widgets',
      '/dashboard/widgets/:id',
      '/dashboard/widgets/:id/hide',
      '/dashboard/widgets/:id/remove',
      '/dashboard/widgets/:id/unhide',
    ]);
    expect(seen.get('/dashboard/widgets/w_abcdefghij')).toBe(WIDGET_FORM_MAX_FIELDS);
    expect(seen.get('/dashboard/webhooks')).toBe(3 + WEBHOOK_EVENTS.length);
  });
});
