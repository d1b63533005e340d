import { html, join, type Html } from '../../util/html.ts';
import { DEFAULT_APP } from '../../store/apps.ts';
import type { ListedInvitation } from '../../store/invitations.ts';
import { syncSummary } from '../../accounts/sync-summary.ts';
import type { AccountOverview } from './data.ts';
import { formatBytes } from './data.ts';
import { lastProblem } from './explain.ts';
import { reasonList, removalHoldNotice, verdictBadge } from './health-views.ts';
import { layout, postForm, when, type LayoutOptions } from './layout.ts';

/**
 * The accounts page (/dashboard): every account with its token, syncs, counts, feed and health,
 * its actions, and the connect and invite forms with the latest invitations; and the page that
 * confirms removing an account.
 */

export const DAYS_LEFT_WARNING = 14; // R-TOK-9: the same threshold as the first alert email

const day = (d: Date | null) => (d ? d.toISOString().slice(0, 10) : '—');

const STATUS_WORDS: Record<string, string> = {
  active: 'Active',
  reauth_required: 'Owner must log in again',
  disabled: 'Disabled',
};

function daysLeftCell(a: AccountOverview): Html {
  if (!a.hasToken || !a.expiresAt || a.daysLeft === null) return html`<span class="muted">no token</span>`;
  // R-TOK-10: the platform refused the token; its stored expiry no longer counts for anything.
  if (a.status === 'reauth_required')
    return html`<span class="bad" data-token="refused" title="stored expiry ${day(a.expiresAt)}, which no longer counts">refused by the platform</span>`;
  const cls = a.daysLeft < 0 ? 'days expired' : a.daysLeft < DAYS_LEFT_WARNING ? 'days warn' : 'days';
  const words = a.daysLeft < 0 ? 'expired' : `${a.daysLeft} day${a.daysLeft === 1 ? '' : 's'} left`;
  return html`${day(a.expiresAt)}<br><span class="${cls}" data-days-left="${a.daysLeft}">${words}</span>`;
}

function refreshCell(a: AccountOverview): Html {
  if (!a.lastRefreshAttemptAt) return html`<span class="muted">not yet</span>`;
  const result = a.lastRefreshError
    ? html`<span class="bad">failed${a.refreshFailures > 1 ? ` (${a.refreshFailures}×)` : ''}</span>`
    : html`<span class="ok">renewed</span>`;
  return html`${when(a.lastRefreshAttemptAt)}<br>${result}`;
}

function syncCell(a: AccountOverview): Html {
  if (!a.lastSyncAt) return html`<span class="muted">not yet</span>`;
  // How that run ended; whether the account is well is the Health column (R-HLT-1).
  const s = syncSummary(a);
  const cls = s.state === 'complete' ? 'ok' : 'bad';
  return html`${when(a.lastSyncAt)}<br><span class="${cls}" data-sync-state="${s.state}">${s.text}</span>`;
}

function feedCell(a: AccountOverview, csrf: string): Html {
  const preview = html`<a href="/dashboard/accounts/${encodeURIComponent(a.id)}/preview">preview</a>`;
  const held = a.removalHold ? html`<br>${removalHoldNotice(a.id, a.removalHold, csrf)}` : '';
  if (!a.feed) return html`<span class="muted">not published</span><br>${preview}${held}`;
  const demo = a.feed.demo ? html` <span class="badge demo">demo</span>` : '';
  return html`${a.feed.postCount} posts${demo}<br><small>${when(a.feed.publishedAt)}</small><br>${preview}${held}`;
}

/** R-HLT-1: the account's health (verdict and reasons), then its last recorded error explained. */
function healthCell(a: AccountOverview): Html {
  const p = lastProblem(a);
  const problem = !p
    ? ''
    : !p.detail || p.detail === p.summary
      ? html`<span class="problem">${p.summary}</span>`
      : html`<span class="problem">${p.summary}</span><details><summary><small>details</small></summary><small>${p.detail}</small></details>`;
  return html`${verdictBadge(a.health.verdict)}${reasonList(a.health, 3)}${problem}`;
}

function accountRow(a: AccountOverview, csrf: string): Html {
  const base = `/dashboard/accounts/${encodeURIComponent(a.id)}`;
  return html`<tr data-account-id="${a.id}">
<td><a href="${base}"><strong>@${a.username}</strong></a>${a.displayName ? html`<br>${a.displayName}` : ''}<br><small>${a.id}</small><br><small data-app="${a.app ?? DEFAULT_APP}">app ${a.app ?? DEFAULT_APP}</small></td>
<td class="status-${a.status}">${STATUS_WORDS[a.status] ?? a.status}</td>
<td>${daysLeftCell(a)}</td>
<td>${refreshCell(a)}</td>
<td>${syncCell(a)}</td>
<td class="num" data-posts="${a.posts}">${a.posts}</td>
<td class="num" data-copies="${a.copies}">${a.copies}<br><small>${formatBytes(a.copyBytes)}</small></td>
<td>${feedCell(a, csrf)}</td>
<td class="health" data-health="${a.health.verdict}">${healthCell(a)}</td>
<td class="actions">${postForm(`${base}/sync`, 'Sync now', csrf)}${postForm(`${base}/refresh`, 'Refresh now', csrf)}<a class="button danger" href="${base}/remove">Remove…</a></td>
</tr>`;
}

/** What an invitation's email column says: emailed (to whom, when), written to the outbox, or shown to copy. */
function invitationEmailCell(i: ListedInvitation): Html {
  if (!i.emailed) return html`<span class="muted">not emailed: the link was shown to copy</span>`;
  return i.emailed.via === 'smtp'
    ? html`<span data-emailed="smtp">emailed to ${i.emailed.to}<br><small>${when(i.emailed.at)}</small></span>`
    : html`<span class="bad" data-emailed="outbox">not sent: written to the outbox for ${i.emailed.to} (no SMTP_URL)<br><small>${when(i.emailed.at)}</small></span>`;
}

const INVITATION_STATE: Record<ListedInvitation['state'], string> = {
  ok: 'open',
  used: 'used',
  expired: 'expired',
  unknown: 'unknown',
};

/** The latest invitations: when and where made, for whom, until when or whether used, and whether emailed. */
function invitationList(list: ListedInvitation[]): Html | '' {
  if (list.length === 0) return '';
  const rows = list.map(
    (i) =>
      html`<tr data-invitation-state="${i.state}"><td>${when(i.createdAt)}<br><small>${i.createdBy === 'cli' ? 'CLI' : 'dashboard'}</small></td><td>${i.owner ? html`${i.owner.name ? html`${i.owner.name}<br>` : ''}${i.owner.email}` : html`<span class="muted">no owner given</span>`}</td><td>${INVITATION_STATE[i.state]}${i.state === 'used' && i.usedAt ? html`<br><small>${when(i.usedAt)}</small>` : html`<br><small>until ${when(i.expiresAt)}</small>`}</td><td>${invitationEmailCell(i)}</td></tr>`,
  );
  return html`<h3>Latest invitations</h3>
<table class="invitations"><thead><tr><th>Made</th><th>For</th><th>State</th><th>Email</th></tr></thead><tbody>${join(rows, '\n')}</tbody></table>`;
}

type ConnectOptions = LayoutOptions & { invitations?: ListedInvitation[]; apps?: string[] };

/** The app the invited account connects through: offered once there is more than the default app (first, chosen). */
function appSelect(apps: string[]): Html | '' {
  if (apps.length === 0) return '';
  const options = [DEFAULT_APP, ...apps].map((a) => html`<option value="${a}">${a}</option>`);
  return html`<label>app <select name="app">${join(options, '')}</select></label> `;
}

/** Connecting: the operator's own login, and the form that invites an owner. */
function connectSection(o: ConnectOptions): Html {
  if (!o.connectUrl)
    return html`<p class="muted">Connecting through the login needs APP_ID and APP_SECRET; <code>feedmirror accounts add</code> works without them.</p>`;
  return html`<h2>Connecting an account</h2>
<p class="muted">Your own account: <a href="${o.connectUrl}">connect it now</a> (you log in on the platform and approve). Someone else's: invite its owner. The invitation is a link that works once and expires; send it to them, or give their email and have it emailed.</p>
${postForm('/dashboard/invitations', 'Invite an owner', o.csrf, { extra: html`<label>expires in <select name="expires"><option value="1d">1 day</option><option value="7d" selected>7 days</option><option value="30d">30 days</option></select></label> <label>owner email (optional) <input type="email" name="owner_email" maxlength="254" autocomplete="off"></label> <label>owner name <input name="owner_name" maxlength="200" autocomplete="off"></label> <label><input type="checkbox" name="send" value="email"> email it to the owner</label> ${appSelect(o.apps ?? [])}` })}
${invitationList(o.invitations ?? [])}`;
}

export function accountsPage(accounts: AccountOverview[], o: ConnectOptions & { warnings: string[] }): string {
  const warnings = o.warnings.map((w) => html`<p class="notice">${w}</p>`);
  const table = accounts.length
    ? html`<table><thead><tr><th>Account</th><th>Status</th><th>Token expires</th><th>Last refresh</th><th>Last sync</th><th>Posts</th><th>Copies</th><th>Feed</th><th>Health</th><th>Actions</th></tr></thead>
<tbody>${join(
        accounts.map((a) => accountRow(a, o.csrf)),
        '\n',
      )}</tbody></table>`
    : html`<p>No account is connected yet.${o.connectUrl ? html` <a href="${o.connectUrl}">Connect an account</a> (or send that link to the account's owner).` : ''}</p>`;
  const counts = { ok: 0, warn: 0, fail: 0 };
  for (const a of accounts) counts[a.health.verdict]++;
  const summary = accounts.length
    ? html`<p class="health-summary" data-ok="${counts.ok}" data-warn="${counts.warn}" data-fail="${counts.fail}">${accounts.length} account${accounts.length === 1 ? '' : 's'}: ${counts.ok} ok, ${counts.warn} warn, ${counts.fail} fail${counts.fail + counts.warn > 0 ? ' (listed first)' : ''}</p>`
    : '';
  return layout('Accounts', html`<h1>Accounts</h1>${warnings}${summary}${table}${connectSection(o)}`, o);
}

export function removeConfirmPage(a: { id: string; username: string }, o: LayoutOptions): string {
  const body = html`<h1>Remove @${a.username}?</h1>
<p>feedmirror stops renewing its access and syncing its feed, and forgets its token and posts. The feed already published and its copies stay in storage, so sites embedding it keep working until you delete them.</p>
<p>The owner can connect the account again later.</p>
<div class="actions">${postForm(`/dashboard/accounts/${encodeURIComponent(a.id)}/remove`, `Yes, remove @${a.username}`, o.csrf, { extra: html`<input type="hidden" name="confirm" value="yes">`, cls: 'danger' })} <a class="button" href="/dashboard">Cancel</a></div>`;
  return layout(`Remove @${a.username}`, body, o);
}
