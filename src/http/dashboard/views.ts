import { escapeHtml as h } from '../pages.ts';
import { CSRF_FIELD } from '../csrf.ts';
import type { AccountOverview } from './data.ts';
import { formatBytes } from './data.ts';
import { lastProblem } from './explain.ts';
import { syncSummary } from '../../accounts/sync-summary.ts';
import { reasonParts, type AccountHealth } from '../../accounts/health.ts';
import type { ListedInvitation } from '../../store/invitations.ts';
import type { InvitationEmailOutcome } from '../../alerts/invitation-email.ts';
import { WIDGET_LAYOUTS, type WidgetLayout } from '../../schema/widget-document.ts';

/**
 * The dashboard's HTML. Server-rendered, no script of our own (the preview loads the published
 * widget); every interpolated value goes through escapeHtml. Actions are POST forms carrying the
 * session's CSRF token.
 */
/** The dashboard's one stylesheet (a file: the CSP allows no inline script, and the login page shares it). */
export const DASHBOARD_STYLESHEET = '/dashboard/assets/dashboard.css';

export const DAYS_LEFT_WARNING = 14; // R-TOK-9: the same threshold as the first alert email

/** An action's outcome, shown once: done (ok), information where nothing is wrong (info), or an error. */
export const FLASH_KINDS = ['ok', 'info', 'error'] as const;
export interface Flash {
  kind: (typeof FLASH_KINDS)[number];
  text: string;
}

export interface LayoutOptions {
  csrf: string;
  flash?: Flash | undefined;
  mode: 'password' | 'open';
  user: string;
  connectUrl?: string | undefined;
}

export function layout(title: string, body: string, o: LayoutOptions): string {
  const flash = o.flash ? `<p class="flash ${o.flash.kind}" role="status">${h(o.flash.text)}</p>` : '';
  const logout =
    o.mode === 'password'
      ? `<form method="post" action="/dashboard/logout"><input type="hidden" name="${CSRF_FIELD}" value="${h(o.csrf)}"><button type="submit">Log out (${h(o.user)})</button></form><form method="post" action="/dashboard/logout-everywhere"><input type="hidden" name="${CSRF_FIELD}" value="${h(o.csrf)}"><button type="submit" title="End every session of ${h(o.user)}, in every browser">Log out everywhere</button></form>`
      : '<span class="muted">no login: loopback only</span>';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${h(title)} · feedmirror</title><link rel="stylesheet" href="${DASHBOARD_STYLESHEET}"></head>
<body><header><a class="brand" href="/dashboard">feedmirror</a><a href="/dashboard">Accounts</a><a href="/dashboard/queues">Queues</a><a href="/dashboard/widgets">Widgets</a><a href="/dashboard/webhooks">Webhooks</a>${o.connectUrl ? `<a href="${h(o.connectUrl)}">Connect an account</a>` : ''}${logout}</header>
<main>${flash}${body}</main></body></html>
`;
}

const day = (d: Date | null) => (d ? d.toISOString().slice(0, 10) : '—');
const when = (d: Date | null) => (d ? `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC` : 'never');

const STATUS_WORDS: Record<string, string> = {
  active: 'Active',
  reauth_required: 'Owner must log in again',
  disabled: 'Disabled',
};

function daysLeftCell(a: AccountOverview): string {
  if (!a.hasToken || !a.expiresAt || a.daysLeft === null) return '<span class="muted">no token</span>';
  // R-TOK-10: the platform refused the token; its stored expiry no longer counts for anything.
  if (a.status === 'reauth_required')
    return `<span class="bad" data-token="refused" title="stored expiry ${day(a.expiresAt)}, which no longer counts">refused by the platform</span>`;
  const cls = a.daysLeft < 0 ? 'days expired' : a.daysLeft < DAYS_LEFT_WARNING ? 'days warn' : 'days';
  const words = a.daysLeft < 0 ? 'expired' : `${a.daysLeft} day${a.daysLeft === 1 ? '' : 's'} left`;
  return `${day(a.expiresAt)}<br><span class="${cls}" data-days-left="${a.daysLeft}">${words}</span>`;
}

function refreshCell(a: AccountOverview): string {
  if (!a.lastRefreshAttemptAt) return '<span class="muted">not yet</span>';
  const result = a.lastRefreshError
    ? `<span class="bad">failed${a.refreshFailures > 1 ? ` (${a.refreshFailures}×)` : ''}</span>`
    : '<span class="ok">renewed</span>';
  return `${when(a.lastRefreshAttemptAt)}<br>${result}`;
}

function syncCell(a: AccountOverview): string {
  if (!a.lastSyncAt) return '<span class="muted">not yet</span>';
  // How that run ended; whether the account is well is the Health column (R-HLT-1).
  const s = syncSummary(a);
  const cls = s.state === 'complete' ? 'ok' : 'bad';
  return `${when(a.lastSyncAt)}<br><span class="${cls}" data-sync-state="${s.state}">${h(s.text)}</span>`;
}

function feedCell(a: AccountOverview, csrf: string): string {
  const preview = `<a href="/dashboard/accounts/${encodeURIComponent(a.id)}/preview">preview</a>`;
  const held = a.removalHold ? `<br>${removalHoldNotice(a.id, a.removalHold, csrf)}` : '';
  if (!a.feed) return `<span class="muted">not published</span><br>${preview}${held}`;
  const demo = a.feed.demo ? ' <span class="badge demo">demo</span>' : '';
  return `${a.feed.postCount} posts${demo}<br><small>${when(a.feed.publishedAt)}</small><br>${preview}${held}`;
}

/**
 * R-OWN-7: a held removal, what it would do, and the button that confirms it now (the same
 * function as `feedmirror feeds confirm-removal`). For the accounts table and the account page.
 */
export function removalHoldNotice(
  accountId: string,
  hold: { since: Date; removing: string[]; listedPosts: number; publishedPosts: number },
  csrf: string,
  from: 'list' | 'account' = 'list',
): string {
  return `<div class="notice removal-held" data-removal-held="${hold.removing.length}"><strong>Removal held</strong>: the last complete listing (${hold.listedPosts} posts) would remove ${hold.removing.length} of the ${hold.publishedPosts} published posts. Nothing is removed until a second listing an hour after ${when(hold.since)} agrees, or you confirm it.${actionForm(`/dashboard/accounts/${encodeURIComponent(accountId)}/confirm-removal`, `Confirm: remove ${hold.removing.length} posts`, csrf, returnHere(from))}</div>`;
}

/** An account action's form field naming the page to come back to (the account's; else the list). */
export const RETURN_FIELD = 'return';
export function returnHere(from: 'list' | 'account'): string {
  return from === 'account' ? `<input type="hidden" name="${RETURN_FIELD}" value="account">` : '';
}

/** The verdict as a badge (ok, warn, fail): the same words every surface uses. */
export function verdictBadge(v: AccountHealth['verdict']): string {
  return `<span class="verdict ${v}" data-verdict="${v}">${v}</span>`;
}

/**
 * A health reason as the dashboard shows it: plain words, each command the text names (between
 * backticks, as the terminal shows it) set as code instead of showing its backticks (R-HLT-1:
 * the same sentence on every surface).
 */
export function reasonHtml(text: string): string {
  return reasonParts(text)
    .map((p) => (p.command ? `<code>${h(p.text)}</code>` : h(p.text)))
    .join('');
}

/** Each reason of a health, as a list item carrying its kind. */
export function reasonList(health: AccountHealth, limit = Infinity): string {
  if (health.reasons.length === 0) return '';
  const shown = health.reasons.slice(0, limit);
  const more = health.reasons.length - shown.length;
  return `<ul class="reasons">${shown
    .map((r) => `<li class="${r.level}" data-reason="${h(r.kind)}">${reasonHtml(r.text)}</li>`)
    .join('')}${more > 0 ? `<li class="muted">and ${more} more</li>` : ''}</ul>`;
}

/** R-HLT-1: the account's health (verdict and reasons), then its last recorded error explained. */
function healthCell(a: AccountOverview): string {
  const p = lastProblem(a);
  const problem = !p
    ? ''
    : !p.detail || p.detail === p.summary
      ? `<span class="problem">${h(p.summary)}</span>`
      : `<span class="problem">${h(p.summary)}</span><details><summary><small>details</small></summary><small>${h(p.detail)}</small></details>`;
  return `${verdictBadge(a.health.verdict)}${reasonList(a.health, 3)}${problem}`;
}

function actionForm(action: string, label: string, csrf: string, extra = '', cls = ''): string {
  return `<form method="post" action="${h(action)}"><input type="hidden" name="${CSRF_FIELD}" value="${h(csrf)}">${extra}<button type="submit"${cls ? ` class="${cls}"` : ''}>${h(label)}</button></form>`;
}

/** What an invitation's email column says: emailed (to whom, when), written to the outbox, or shown to copy. */
function invitationEmailCell(i: ListedInvitation): string {
  if (!i.emailed) return '<span class="muted">not emailed: the link was shown to copy</span>';
  return i.emailed.via === 'smtp'
    ? `<span data-emailed="smtp">emailed to ${h(i.emailed.to)}<br><small>${when(i.emailed.at)}</small></span>`
    : `<span class="bad" data-emailed="outbox">not sent: written to the outbox for ${h(i.emailed.to)} (no SMTP_URL)<br><small>${when(i.emailed.at)}</small></span>`;
}

const INVITATION_STATE: Record<ListedInvitation['state'], string> = {
  ok: 'open',
  used: 'used',
  expired: 'expired',
  unknown: 'unknown',
};

/** The latest invitations: when and where made, for whom, until when or whether used, and whether emailed. */
function invitationList(list: ListedInvitation[]): string {
  if (list.length === 0) return '';
  const rows = list.map(
    (i) =>
      `<tr data-invitation-state="${i.state}"><td>${when(i.createdAt)}<br><small>${i.createdBy === 'cli' ? 'CLI' : 'dashboard'}</small></td><td>${i.owner ? `${i.owner.name ? `${h(i.owner.name)}<br>` : ''}${h(i.owner.email)}` : '<span class="muted">no owner given</span>'}</td><td>${INVITATION_STATE[i.state]}${i.state === 'used' && i.usedAt ? `<br><small>${when(i.usedAt)}</small>` : `<br><small>until ${when(i.expiresAt)}</small>`}</td><td>${invitationEmailCell(i)}</td></tr>`,
  );
  return `<h3>Latest invitations</h3>
<table class="invitations"><thead><tr><th>Made</th><th>For</th><th>State</th><th>Email</th></tr></thead><tbody>${rows.join('\n')}</tbody></table>`;
}

export function accountsPage(
  accounts: AccountOverview[],
  o: LayoutOptions & { warnings: string[]; invitations?: ListedInvitation[] },
): string {
  const warnings = o.warnings.map((w) => `<p class="notice">${h(w)}</p>`).join('');
  const rows = accounts.map((a) => {
    const base = `/dashboard/accounts/${encodeURIComponent(a.id)}`;
    return `<tr data-account-id="${h(a.id)}">
<td><a href="${base}"><strong>@${h(a.username)}</strong></a>${a.displayName ? `<br>${h(a.displayName)}` : ''}<br><small>${h(a.id)}</small></td>
<td class="status-${h(a.status)}">${h(STATUS_WORDS[a.status] ?? a.status)}</td>
<td>${daysLeftCell(a)}</td>
<td>${refreshCell(a)}</td>
<td>${syncCell(a)}</td>
<td class="num" data-posts="${a.posts}">${a.posts}</td>
<td class="num" data-copies="${a.copies}">${a.copies}<br><small>${formatBytes(a.copyBytes)}</small></td>
<td>${feedCell(a, o.csrf)}</td>
<td class="health" data-health="${a.health.verdict}">${healthCell(a)}</td>
<td class="actions">${actionForm(`${base}/sync`, 'Sync now', o.csrf)}${actionForm(`${base}/refresh`, 'Refresh now', o.csrf)}<a class="button danger" href="${base}/remove">Remove…</a></td>
</tr>`;
  });
  const table = accounts.length
    ? `<table><thead><tr><th>Account</th><th>Status</th><th>Token expires</th><th>Last refresh</th><th>Last sync</th><th>Posts</th><th>Copies</th><th>Feed</th><th>Health</th><th>Actions</th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table>`
    : `<p>No account is connected yet.${o.connectUrl ? ` <a href="${h(o.connectUrl)}">Connect an account</a> (or send that link to the account's owner).` : ''}</p>`;
  const connect = o.connectUrl
    ? `<h2>Connecting an account</h2>
<p class="muted">Your own account: <a href="${h(o.connectUrl)}">connect it now</a> (you log in on the platform and approve). Someone else's: invite its owner. The invitation is a link that works once and expires; send it to them, or give their email and have it emailed.</p>
${actionForm('/dashboard/invitations', 'Invite an owner', o.csrf, `<label>expires in <select name="expires"><option value="1d">1 day</option><option value="7d" selected>7 days</option><option value="30d">30 days</option></select></label> <label>owner email (optional) <input type="email" name="owner_email" maxlength="254" autocomplete="off"></label> <label>owner name <input name="owner_name" maxlength="200" autocomplete="off"></label> <label><input type="checkbox" name="send" value="email"> email it to the owner</label> `)}
${invitationList(o.invitations ?? [])}`
    : '<p class="muted">Connecting through the login needs APP_ID and APP_SECRET; <code>feedmirror accounts add</code> works without them.</p>';
  const counts = { ok: 0, warn: 0, fail: 0 };
  for (const a of accounts) counts[a.health.verdict]++;
  const summary = accounts.length
    ? `<p class="health-summary" data-ok="${counts.ok}" data-warn="${counts.warn}" data-fail="${counts.fail}">${accounts.length} account${accounts.length === 1 ? '' : 's'}: ${counts.ok} ok, ${counts.warn} warn, ${counts.fail} fail${counts.fail + counts.warn > 0 ? ' (listed first)' : ''}</p>`
    : '';
  return layout('Accounts', `<h1>Accounts</h1>${warnings}${summary}${table}${connect}`, o);
}

export function removeConfirmPage(a: { id: string; username: string }, o: LayoutOptions): string {
  const body = `<h1>Remove @${h(a.username)}?</h1>
<p>feedmirror stops renewing its access and syncing its feed, and forgets its token and posts. The feed already published and its copies stay in storage, so sites embedding it keep working until you delete them.</p>
<p>The owner can connect the account again later.</p>
<div class="actions">${actionForm(`/dashboard/accounts/${encodeURIComponent(a.id)}/remove`, `Yes, remove @${a.username}`, o.csrf, '<input type="hidden" name="confirm" value="yes">', 'danger')} <a class="button" href="/dashboard">Cancel</a></div>`;
  return layout(`Remove @${a.username}`, body, o);
}

/** The layouts a preview can be shown in: a widget's. */
export const PREVIEW_LAYOUTS = WIDGET_LAYOUTS;
export type PreviewLayout = WidgetLayout;

/**
 * The feed of one account as a site shows it: the published widget script (the dashboard's copy,
 * /dashboard/widget.js) rendering a widget document of this account alone with the default
 * options, built from the published feed by the function that publishes every widget.
 */
export function previewPage(
  a: { id: string; username: string },
  o: LayoutOptions & {
    layout: PreviewLayout;
    warnings: string[];
    /** Where the script reads the document (a signed address: the script sends no cookie). */
    documentPath: string;
    widgetsUrl?: string | undefined;
  },
): string {
  const feedPath = `/feeds/${encodeURIComponent(a.id)}.json`;
  const base = `/dashboard/accounts/${encodeURIComponent(a.id)}/preview`;
  const warnings = o.warnings.map((w) => `<p class="notice">${h(w)}</p>`).join('');
  const layouts = PREVIEW_LAYOUTS.map((l) =>
    l === o.layout ? `<strong>${l}</strong>` : `<a href="${base}?layout=${l}">${l}</a>`,
  ).join(' · ');
  const body = `<h1>Feed preview: @${h(a.username)}</h1>
<p class="muted">As a site shows a widget of @${h(a.username)} alone with the default options: the widget script rendering a widget document built from the published feed (<a href="${h(feedPath)}">${h(feedPath)}</a>). ${o.widgetsUrl ? `A widget's own layout, options and hidden posts are set on its page under <a href="${h(o.widgetsUrl)}">Widgets</a>.` : ''}</p>
<p class="muted">Layout: ${layouts}</p>
${warnings}
<div class="widget-preview">
<div id="feed" data-feedmirror-widget="${PREVIEW_WIDGET_ID}" data-src="${h(o.documentPath)}"></div>
</div>
<script defer src="/dashboard/widget.js"></script>`;
  return layout(`Preview @${a.username}`, body, o);
}

/** The id the preview's document carries (a widget id in form; no widget has it in storage). */
export const PREVIEW_WIDGET_ID = 'w_preview222';

export function invitationPage(
  inv: { url: string; expiresAt: Date; email?: InvitationEmailOutcome | null },
  o: LayoutOptions,
): string {
  const until = h(inv.expiresAt.toISOString().replace('T', ' ').slice(0, 16));
  const e = inv.email ?? null;
  const what = e?.emailed
    ? `<p data-emailed="smtp">It was emailed to <strong>${h(e.to)}</strong>. It works once, until ${until} UTC. The link is shown here only now, should they need it again.</p>`
    : `<p${e ? ' data-emailed="no"' : ''}>Send this link to the account's owner${e ? ` (${h(e.to)})` : ''}. It works once, until ${until} UTC; it is shown only now.</p>`;
  const body = `<h1>Invitation created</h1>
${what}
<p><input id="invitation" readonly size="90" value="${h(inv.url)}"></p>
<p><a class="button" href="/dashboard">Back to the accounts</a></p>`;
  return layout('Invitation created', body, o);
}
