import type { AccountPageData } from '../../src/http/dashboard/account-views.ts';
import { accountNotFoundPage, accountPage, reconnectLinkPage } from '../../src/http/dashboard/account-views.ts';
import type { AccountOverview } from '../../src/http/dashboard/data.ts';
import { accountsPage, removeConfirmPage } from '../../src/http/dashboard/accounts-views.ts';
import { invitationPage } from '../../src/http/dashboard/invitations-views.ts';
import type { LayoutOptions } from '../../src/http/dashboard/layout.ts';
import { previewPage } from '../../src/http/dashboard/preview-views.ts';
import { appsPage } from '../../src/http/dashboard/apps-views.ts';
import { deliveriesPage, secretPage, webhooksPage } from '../../src/http/dashboard/webhooks-views.ts';
import { widgetPage, widgetsPage } from '../../src/http/dashboard/widgets-views.ts';
import { renderOwnerPage } from '../../src/http/owner-pages.ts';
import type { Account } from '../../src/store/accounts.ts';
import type { ListedInvitation } from '../../src/store/invitations.ts';
import type { WebhookDelivery, WebhookEndpoint } from '../../src/store/webhooks.ts';
import { widgetOptionsSchema } from '../../src/schema/widget-document.ts';
import type { WidgetCandidate, WidgetView } from '../../src/widgets/widgets.ts';

/**
 * Every page the server renders, each kind in its main states, with `v` in every value that
 * comes from outside the code (an account's names and errors, an owner's contact, a widget's
 * name, a webhook's URL and note, a post's caption and link, a flash message, the CSRF token,
 * the brand...). The escaping test passes a hostile string; any string works.
 */
const NOW = new Date('2026-03-01T12:00:00Z');
/** Tags as the page shows them, past the options schema (which refuses most characters). */
const withTags = <T extends { filters: { includeTags: string[]; excludeTags: string[] } }>(
  options: T,
  includeTags: string[],
  excludeTags: string[],
): T => ({ ...options, filters: { ...options.filters, includeTags, excludeTags } });
const LATER = new Date('2026-03-08T12:00:00Z');

export function renderEveryPage(v: string): Record<string, string> {
  const layoutOpts = (flashKind: 'ok' | 'info' | 'error' = 'error'): LayoutOptions => ({
    csrf: `csrf${v}`,
    flash: { kind: flashKind, text: `flash ${v}` },
    mode: 'password',
    user: `operator${v}`,
    connectUrl: '/dashboard/connect',
  });
  const o = layoutOpts();
  const open: LayoutOptions = { csrf: `csrf${v}`, mode: 'open', user: 'local', connectUrl: '/dashboard/connect' };

  const account: Account = {
    id: `1784${v}`,
    username: `shop${v}`,
    displayName: `Shop ${v}`,
    avatarUrl: null,
    accountType: 'BUSINESS',
    status: 'reauth_required',
    statusReason: `password changed ${v}`,
    statusReasonKind: 'password_changed',
    refusedFields: [],
    createdAt: NOW,
    updatedAt: NOW,
    lastSyncAt: NOW,
    lastSyncError: `sync error ${v}`,
    lastSyncErrorKind: 'platform',
    skippedItems: 1,
    skippedReasons: [{ id: `item${v}`, reason: `reason ${v}` }],
    lastSyncOutcome: 'complete',
    lastCompleteSyncAt: NOW,
    owner: { name: `Jane ${v}`, email: `jane${v}@example.com`, language: null, alerts: true },
  };
  const active: Account = { ...account, status: 'active', statusReason: null, statusReasonKind: null, owner: null };
  const hold = {
    accountId: account.id,
    since: NOW,
    lastSeenAt: NOW,
    removing: ['1', '2'],
    listedPosts: 1,
    publishedPosts: 3,
  };
  const health = {
    verdict: 'fail' as const,
    reasons: [
      {
        kind: 'reauth_required' as const,
        level: 'fail' as const,
        text: `refused ${v}: run \`feedmirror accounts reconnect-link ${v}\``,
      },
      { kind: 'sync_failed' as const, level: 'warn' as const, text: `sync ${v}` },
    ],
  };
  const overview = (a: Account, extra: Partial<AccountOverview> = {}): AccountOverview => ({
    ...a,
    hasToken: true,
    expiresAt: LATER,
    obtainedAt: NOW,
    daysLeft: 7,
    refreshFailures: 2,
    lastRefreshError: `refresh error ${v}`,
    lastRefreshErrorKind: 'network',
    lastRefreshAttemptAt: NOW,
    posts: 3,
    copies: 3,
    copyBytes: 2048,
    feed: { publishedAt: NOW, postCount: 3, demo: true },
    removalHold: hold,
    health,
    ...extra,
  });
  const invitations: ListedInvitation[] = [
    {
      createdAt: NOW,
      createdBy: 'dashboard',
      expiresAt: LATER,
      usedAt: null,
      state: 'ok',
      owner: { name: `Owner ${v}`, email: `owner${v}@example.com`, language: null },
      emailed: { to: `owner${v}@example.com`, at: NOW, via: 'smtp' },
    },
    {
      createdAt: NOW,
      createdBy: 'cli',
      expiresAt: LATER,
      usedAt: NOW,
      state: 'used',
      owner: { name: null, email: `other${v}@example.com`, language: null },
      emailed: { to: `other${v}@example.com`, at: NOW, via: 'outbox' },
    },
    { createdAt: NOW, createdBy: 'cli', expiresAt: NOW, usedAt: null, state: 'expired', owner: null, emailed: null },
  ];
  const facts = (a: Account): AccountPageData['facts'] => ({
    accountId: a.id,
    username: a.username,
    status: a.status,
    statusReason: a.statusReason,
    statusReasonKind: a.statusReasonKind,
    createdAt: NOW,
    token: {
      present: true,
      expiresAt: LATER,
      refreshFailures: 1,
      lastRefreshError: `refresh ${v}`,
      lastRefreshErrorKind: 'network',
    },
    sync: { lastAt: NOW, outcome: 'complete', error: null, errorKind: null, lastCompleteAt: NOW, skippedItems: 1 },
    copies: { failing: 1, gaveUp: 1, latest: null, waitingPosts: 1, oldestWaitingSince: NOW },
    missingObjects: { count: 0, first: null },
    publication: { publishedAt: NOW, postCount: 3, demo: false },
    webhooks: [],
    removalHold: { since: NOW, removing: 2, publishedPosts: 3 },
    ownerEmail: a.owner?.email ?? null,
    reconnectLink: null,
  });
  const pageData = (a: Account, extra: Partial<AccountPageData> = {}): AccountPageData => ({
    account: a,
    facts: facts(a),
    health,
    copies: { n: 3, bytes: 4096 },
    failures: [
      {
        accountId: a.id,
        mediaId: `media${v}`,
        slot: `cover${v}`,
        errorKind: 'link_expired',
        error: `copy error ${v}`,
        attempts: 3,
        gaveUp: true,
        firstFailedAt: NOW,
        lastFailedAt: NOW,
      },
    ],
    syncs: [
      { at: NOW, outcome: 'complete', errorKind: null, error: null, posts: 3, skipped: 0 },
      { at: NOW, outcome: 'failed', errorKind: 'platform', error: `sync failed ${v}`, posts: null, skipped: null },
    ],
    events: [{ kind: 'token_refreshed', at: NOW, detail: `detail ${v}`, errorKind: 'network', expiresAt: LATER }],
    deliveries: [
      {
        id: `d${v}`,
        endpointId: `wh_${v}`,
        endpointUrl: `https://hooks.example.com/${v}`,
        eventType: 'feed.updated',
        status: 'failed',
        attempts: 2,
        lastHttpStatus: 500,
        lastError: `hook error ${v}`,
        createdAt: NOW,
        lastAttemptAt: NOW,
        deliveredAt: null,
      },
    ],
    removalHold: hold,
    now: NOW,
    ownerAlertsOn: true,
    reconnectLink: null,
    linksOffered: true,
    ...extra,
  });
  const link = (state: 'ok' | 'expired' | 'used' | 'revoked', delivery: 'email' | 'copy') => ({
    accountId: account.id,
    delivery,
    createdAt: NOW,
    expiresAt: LATER,
    state,
    lastEmailedAt: NOW,
  });

  const endpoint: WebhookEndpoint = {
    id: `wh_${v}`,
    url: `https://hooks.example.com/${v}`,
    events: [`feed.updated${v}`],
    description: `note ${v}`,
    createdAt: NOW,
    previousValidUntil: LATER,
  };
  const delivery: WebhookDelivery = {
    id: `d${v}`,
    endpointId: endpoint.id,
    eventId: `ev${v}`,
    eventType: `feed.updated${v}`,
    body: '{}',
    status: 'failed',
    attempts: 1,
    lastHttpStatus: 502,
    lastError: `hook error ${v}`,
    createdAt: NOW,
    lastAttemptAt: NOW,
    deliveredAt: null,
  };

  const widget: WidgetView = {
    id: `w_${v}`,
    name: `Wall ${v}`,
    layout: 'grid',
    options: withTags(widgetOptionsSchema.parse({}), [`sale${v}`], [`ad${v}`]),
    accounts: [account.id, 'gone'],
    hiddenPosts: ['2'],
    createdAt: NOW.toISOString(),
    updatedAt: NOW.toISOString(),
    publishedAt: NOW.toISOString(),
    documentUrl: `https://cdn.example.com/widgets/${v}.json`,
    fragmentUrl: `https://cdn.example.com/widgets/${v}.html`,
    scriptUrl: 'https://cdn.example.com/widget/feedmirror-widget.js',
    embed: `<div data-feedmirror-widget="${v}"></div>`,
  };
  const post = (id: string, hidden: boolean, filtered = false): WidgetCandidate => ({
    id: `${id}${v}`,
    accountId: account.id,
    username: account.username,
    publishedAt: `${NOW.toISOString()}${v}`,
    type: `image${v}`,
    text: `caption ${v}`,
    thumbnailUrl: `https://cdn.example.com/${v}.jpg`,
    url: `https://platform.example.com/p/${v}`,
    hidden,
    filtered,
  });
  const choices = [{ id: account.id, username: account.username }];
  const brand = {
    name: `Northwind ${v}`,
    logoUrl: `https://cdn.example.com/logo.png?${v}`,
    supportEmail: 'help@northwind.example',
    accentColor: '#0f766e',
  };

  return {
    'dashboard accounts': accountsPage([overview(account), overview(active, { hasToken: false, feed: null })], {
      ...o,
      warnings: [`warning ${v}`],
      invitations,
    }),
    'dashboard accounts, empty, open mode': accountsPage([], { ...open, warnings: [] }),
    'dashboard accounts, no connect': accountsPage([], { ...o, connectUrl: undefined, warnings: [] }),
    'dashboard account, reauth with owner': accountPage(pageData(account, { reconnectLink: link('ok', 'email') }), o),
    'dashboard account, reauth, copied link': accountPage(
      pageData(account, { reconnectLink: link('ok', 'copy') }),
      layoutOpts('ok'),
    ),
    'dashboard account, reauth, expired link': accountPage(
      pageData(account, { reconnectLink: link('expired', 'email') }),
      o,
    ),
    'dashboard account, reauth, used link': accountPage(pageData(account, { reconnectLink: link('used', 'copy') }), o),
    'dashboard account, reauth, no owner': accountPage(pageData({ ...account, owner: null }), o),
    'dashboard account, active': accountPage(pageData(active, { removalHold: null, failures: [], syncs: [] }), open),
    'dashboard account not found': accountNotFoundPage(`nope${v}`, o),
    'dashboard reconnect link': reconnectLinkPage(
      account,
      { url: `https://x.example/reconnect/${v}`, expiresAt: LATER },
      o,
    ),
    'dashboard remove': removeConfirmPage(account, o),
    'dashboard preview': previewPage(account, {
      ...o,
      layout: 'grid',
      warnings: [`warning ${v}`],
      documentPath: `/dashboard/accounts/x/preview/document.json?sig=${v}`,
      widgetsUrl: '/dashboard/widgets',
    }),
    'dashboard invitation, emailed': invitationPage(
      {
        url: `https://x.example/connect?invite=${v}`,
        expiresAt: LATER,
        email: { emailed: true, to: `o${v}@x.example`, at: NOW, via: 'smtp' },
      },
      o,
    ),
    'dashboard invitation, to copy': invitationPage(
      {
        url: `https://x.example/connect?invite=${v}`,
        expiresAt: LATER,
        email: { emailed: false, to: `o${v}@x.example`, via: null, error: `smtp ${v}` },
      },
      o,
    ),
    'dashboard apps': appsPage(
      [
        { name: 'default', appId: `1${v}`, accounts: 2, fault: null },
        {
          name: `acme${v}`,
          appId: `2${v}`,
          accounts: 1,
          fault: { kind: 'app_secret_refused', message: `refused ${v}`, at: NOW },
        },
        {
          name: `beta${v}`,
          appId: null,
          accounts: 0,
          fault: { kind: 'app_restricted', message: `restricted ${v}`, at: NOW },
        },
      ],
      o,
    ),
    'dashboard invitation, through an app': invitationPage(
      { url: `https://x.example/connect?invite=${v}`, expiresAt: LATER, email: null, app: `acme${v}` },
      o,
    ),
    'dashboard webhooks': webhooksPage(
      [
        { ...endpoint, last: delivery },
        { ...endpoint, events: [], previousValidUntil: null, description: '' },
      ],
      {
        ...o,
        allowPrivate: false,
      },
    ),
    'dashboard webhook secret': secretPage(endpoint, `secret${v}`, `note ${v}`, o),
    'dashboard webhook deliveries': deliveriesPage(endpoint, [delivery], o),
    'dashboard widgets': widgetsPage([widget], choices, new Map([[widget.id, { last7: 1, last30: 2 }]]), {
      ...o,
      viewsCounted: true,
    }),
    'dashboard widget': widgetPage(
      widget,
      choices,
      [post('1', false), post('2', true), post('3', false, true)],
      { last7: 1, last30: 2 },
      {
        ...o,
        viewsCounted: true,
        documentPath: `/dashboard/widgets/x/document.json?sig=${v}`,
        feedHidden: [
          {
            accountId: account.id,
            postId: `9${v}`,
            username: account.username,
            hiddenAt: `${NOW.toISOString()}${v}`,
            text: `hidden ${v}`,
          },
          { accountId: account.id, postId: '8', username: account.username, hiddenAt: NOW.toISOString(), text: null },
        ],
      },
    ),
    'owner done': renderOwnerPage('done', {
      username: `shop${v}`,
      expiresAt: LATER,
      feedUrl: `https://feeds.example.com/${v}.json`,
      brand,
    }),
    'owner done, reconnected': renderOwnerPage('done', { username: `shop${v}`, reconnected: true, scheduled: false }),
    'owner declined': renderOwnerPage('declined', {
      title: `Declined ${v}`,
      lines: [`line ${v}`],
      retryUrl: `https://login.example.com/?state=${v}`,
      brand,
    }),
    'owner declined, no retry': renderOwnerPage('declined', { lines: [`line ${v}`] }),
    'owner expired link': renderOwnerPage('expired-link', {
      reason: `reason ${v}`,
      whatNext: `next ${v}`,
      retryUrl: `/connect?x=${v}`,
      brand,
    }),
    'owner wrong account': renderOwnerPage('wrong-account', {
      expectedUsername: `shop${v}`,
      retryUrl: `https://login.example.com/?state=${v}`,
    }),
    'owner status, needs owner': renderOwnerPage('status', {
      username: `shop${v}`,
      connected: false,
      reason: `the password was changed ${v}`,
      daysLeft: 0,
      lastSyncAt: NOW,
      linkExpiresAt: LATER,
      reconnect: { action: `/reconnect/${v}`, fields: { [`confirm${v}`]: `x${v}` } },
      brand,
    }),
    'owner status, connected': renderOwnerPage('status', {
      username: `shop${v}`,
      connected: true,
      daysLeft: 12,
      expiresAt: LATER,
      lastSyncAt: null,
      reconnect: { url: `https://x.example/reconnect/${v}` },
    }),
    'owner notice': renderOwnerPage('notice', {
      title: `Notice ${v}`,
      lines: [`line ${v}`],
      retryUrl: `https://x.example/${v}`,
      brand,
    }),
  };
}
