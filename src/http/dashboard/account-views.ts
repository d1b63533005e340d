import { html, join, type Html } from '../../util/html.ts';
import { ago, type AccountHealth, type AccountWithHealth } from '../../accounts/health.ts';
import type { Account, SyncRun } from '../../store/accounts.ts';
import type { CopyFailure } from '../../store/copy-failures.ts';
import type { AccountDelivery } from '../../store/health-facts.ts';
import { formatBytes } from './data.ts';
import { explainError, type Explained } from './explain.ts';
import { reasonList, removalHoldNotice, returnHere, verdictBadge } from './health-views.ts';
import { csrfField, layout, postForm, type LayoutOptions } from './layout.ts';
import type { StoredRemovalHold } from '../../store/holds.ts';
import type { LatestReconnectLink } from '../../store/owners.ts';
import { DEFAULT_APP } from '../../store/apps.ts';

/**
 * One account's page (/dashboard/accounts/<id>): its health with every reason, the token, the
 * published feed, the copies and their failures, the last syncs, the items skipped, its recent
 * events and the deliveries of its webhook events. Server-rendered like the rest of the
 * dashboard (layout.ts): no script, built with the `html` tag, actions as POST forms with the
 * CSRF token.
 */
export interface AccountPageData {
  account: Account;
  facts: AccountWithHealth['facts'];
  health: AccountHealth;
  copies: { n: number; bytes: number };
  failures: CopyFailure[];
  syncs: SyncRun[];
  events: Array<{ kind: string; at: Date; detail: string | null; errorKind: string | null; expiresAt: Date | null }>;
  deliveries: AccountDelivery[];
  /** R-OWN-7: a removal waiting for a second listing or the operator's confirmation. */
  removalHold: StoredRemovalHold | null;
  now: Date;
  /** OWNER_ALERTS: whether owners get alerts in this deployment (the owner section says so). */
  ownerAlertsOn?: boolean;
  /** The account's newest reconnect link (emailed to the owner or made to copy), or null. */
  reconnectLink?: LatestReconnectLink | null;
  /** Whether this server makes reconnect links from the page (email them, or show one to copy). */
  linksOffered?: boolean;
}

const when = (d: Date | null) => (d ? `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC` : '—');
const since = (d: Date | null, now: Date) => (d ? `${when(d)} (${ago(now.getTime() - d.getTime())} ago)` : 'never');

/** An action of this page; its outcome is shown back here. */
function form(action: string, label: string, csrf: string): Html {
  return postForm(action, label, csrf, { extra: returnHere('account') });
}

function table(headers: string[], rows: Html[], empty: string): Html {
  if (rows.length === 0) return html`<p class="muted">${empty}</p>`;
  return html`<table><thead><tr>${headers.map((x) => html`<th>${x}</th>`)}</tr></thead><tbody>${join(rows, '\n')}</tbody></table>`;
}

/** The token: refused, or when it expires and how its renewals went. */
function tokenSection(d: AccountPageData, problem: Explained | null): Html {
  const { account: a, facts: f } = d;
  if (!f.token.present) return html`<p class="bad">No token stored.</p>`;
  if (a.status === 'reauth_required')
    // R-TOK-10: a refused token's stored expiry is no time left: only the owner's login helps.
    return html`<p class="bad" data-token="refused">The platform refused this token${problem?.detail ? ` (${problem.detail})` : ''}. Its stored expiry, ${when(f.token.expiresAt)}, no longer counts: only the owner's login brings the account back.</p>`;
  const failures = f.token.refreshFailures;
  return html`<p>Token expires ${when(f.token.expiresAt)}${failures > 0 ? html` · <span class="bad">${failures} renewal${failures === 1 ? '' : 's'} failed</span>${f.token.lastRefreshError ? `: ${f.token.lastRefreshError}` : ''}` : ''}</p>`;
}

/** The published feed, how fresh it is, and a held removal. */
function feedSection(d: AccountPageData, base: string, csrf: string): Html {
  const { account: a, facts: f, now } = d;
  const feedPath = `/feeds/${encodeURIComponent(a.id)}.json`;
  const feed = f.publication
    ? html`<p data-feed-posts="${f.publication.postCount}">${f.publication.postCount} posts published${f.publication.demo ? html` <span class="badge demo">demo</span>` : ''}, feed written ${since(f.publication.publishedAt, now)} · <a href="${feedPath}">${feedPath}</a> · <a href="${base}/preview">preview</a></p>`
    : html`<p class="muted">No feed published yet · <a href="${base}/preview">preview</a></p>`;
  const fresh = html`<p>Last complete listing: ${since(f.sync.lastCompleteAt, now)}. Posts withheld (stored, images not copied yet): <strong data-withheld="${f.copies.waitingPosts}">${f.copies.waitingPosts}</strong>${f.copies.oldestWaitingSince ? `, the oldest since ${when(f.copies.oldestWaitingSince)}` : ''}.</p>`;
  const hold = d.removalHold ? removalHoldNotice(a.id, d.removalHold, csrf, 'account') : '';
  return html`<section id="feed"><h2>Feed</h2>${feed}${fresh}${hold}</section>`;
}

/** The copies: how many, and each failing one. */
function copiesSection(d: AccountPageData): Html {
  const f = d.facts;
  const copies = html`<p><span data-copies="${d.copies.n}">${d.copies.n}</span> images copied (${formatBytes(d.copies.bytes)}); <strong data-copies-failing="${f.copies.failing}">${f.copies.failing}</strong> failing${f.copies.gaveUp ? `, ${f.copies.gaveUp} given up until the next sync` : ''}.</p>`;
  const failures = table(
    ['Media', 'Image', 'Error', 'Attempts', 'First failed', 'Last failed', 'State'],
    d.failures.map(
      (x) =>
        html`<tr data-copy-failure="${x.mediaId}/${x.slot}"><td>${x.mediaId}</td><td>${x.slot}</td><td>${x.errorKind.replace(/_/g, ' ')}<br><small>${x.error}</small></td><td class="num">${x.attempts}</td><td>${when(x.firstFailedAt)}</td><td>${when(x.lastFailedAt)}</td><td class="${x.gaveUp ? 'bad' : 'muted'}">${x.gaveUp ? 'given up' : 'retrying'}</td></tr>`,
    ),
    'No copy is failing.',
  );
  return html`<section id="copies"><h2>Copies</h2>${copies}${failures}</section>`;
}

/** What happened lately: the last syncs, the items they skipped, events, webhook deliveries. */
function historySections(d: AccountPageData): Html {
  const syncs = table(
    ['When', 'Outcome', 'Posts listed', 'Skipped', 'Error'],
    d.syncs.map(
      (s) =>
        html`<tr data-sync-outcome="${s.outcome}"><td>${when(s.at)}</td><td class="${s.outcome === 'complete' ? 'ok' : 'bad'}">${s.outcome}</td><td class="num">${s.posts ?? '—'}</td><td class="num">${s.skipped ?? '—'}</td><td>${s.error ? html`${s.errorKind ? `${s.errorKind.replace(/_/g, ' ')}: ` : ''}<small>${s.error}</small>` : ''}</td></tr>`,
    ),
    'No sync yet.',
  );
  const skipped = table(
    ['Item', 'Why it was skipped'],
    d.account.skippedReasons.map(
      (s) => html`<tr data-skipped-item="${s.id}"><td>${s.id}</td><td>${s.reason}</td></tr>`,
    ),
    'The last sync skipped nothing.',
  );
  const events = table(
    ['When', 'Event', 'Token expiry', 'Detail'],
    d.events.map(
      (e) =>
        html`<tr data-event="${e.kind}"><td>${when(e.at)}</td><td>${e.kind.replace(/_/g, ' ')}</td><td>${when(e.expiresAt)}</td><td>${e.errorKind ? `${e.errorKind.replace(/_/g, ' ')}: ` : ''}${e.detail ? html`<small>${e.detail}</small>` : ''}</td></tr>`,
    ),
    'No event recorded.',
  );
  const deliveries = table(
    ['Created', 'Event', 'Endpoint', 'Status', 'Attempts', 'Last answer'],
    d.deliveries.map(
      (x) =>
        html`<tr data-delivery-status="${x.status}"><td>${when(x.createdAt)}</td><td>${x.eventType}</td><td><a href="/dashboard/webhooks/${encodeURIComponent(x.endpointId)}">${x.endpointId}</a><br><small>${x.endpointUrl}</small></td><td class="${x.status === 'delivered' ? 'ok' : x.status === 'failed' ? 'bad' : 'muted'}">${x.status}</td><td class="num">${x.attempts}</td><td>${x.lastHttpStatus !== null ? `HTTP ${x.lastHttpStatus}` : '—'}${x.lastError ? html`<br><small>${x.lastError}</small>` : ''}</td></tr>`,
    ),
    'No webhook delivery for this account.',
  );
  return html`<section id="syncs"><h2>Last syncs</h2>${syncs}</section>
<section id="skipped"><h2>Items skipped by the last sync</h2>${skipped}</section>
<section id="events"><h2>Recent events</h2>${events}</section>
<section id="deliveries"><h2>Webhook deliveries of its events</h2>${deliveries}</section>`;
}

export function accountPage(d: AccountPageData, o: LayoutOptions): string {
  const { account: a } = d;
  const base = `/dashboard/accounts/${encodeURIComponent(a.id)}`;
  const problem = a.status === 'reauth_required' ? explainError(a.statusReasonKind, a.statusReason) : null;
  const body = html`<h1>@${a.username}</h1>
<p class="muted">${a.id}${a.displayName ? ` · ${a.displayName}` : ''} · connected ${when(a.createdAt)} · <span data-app="${a.app ?? DEFAULT_APP}">app <a href="/dashboard/apps">${a.app ?? DEFAULT_APP}</a></span></p>
<div class="actions">${form(`${base}/sync`, 'Sync now', o.csrf)}${form(`${base}/refresh`, 'Refresh now', o.csrf)}<a class="button danger" href="${base}/remove">Remove…</a></div>
<section id="health" data-health="${d.health.verdict}"><h2>Health ${verdictBadge(d.health.verdict)}</h2>
${d.health.reasons.length ? reasonList(d.health) : html`<p class="ok">Nothing to report: synced, every post published, every copy made.</p>`}
${problem ? html`<p class="problem">${problem.summary}</p>` : ''}</section>
${a.status === 'reauth_required' ? reconnectSection(a, base, o.csrf, d) : ''}
<section id="token"><h2>Token</h2>${tokenSection(d, problem)}</section>
${ownerSection(a, base, o.csrf, d.ownerAlertsOn ?? false)}
${feedSection(d, base, o.csrf)}
${copiesSection(d)}
${historySections(d)}
<p><a class="button" href="/dashboard">Back to the accounts</a></p>`;
  return layout(`@${a.username}`, body, o);
}

/** The dashboard's 404 for an account id nobody has (or a malformed one), as a page. */
export function accountNotFoundPage(id: string, o: LayoutOptions): string {
  const body = html`<h1>No such account</h1>
<p>No account has the id <code>${id.slice(0, 128)}</code>. It may have been removed, or the link is mistyped.</p>
<p><a class="button" href="/dashboard">Back to the accounts</a></p>`;
  return layout('No such account', body, o);
}

/**
 * The owner of the account (R-OWN-10): who is told when the connection needs them, and the form
 * that sets or clears it (POST with the CSRF token, like every dashboard action).
 */
function ownerSection(a: Account, base: string, csrf: string, deploymentOn: boolean): Html {
  const o = a.owner;
  const status = !o
    ? html`<p class="muted" data-owner="none">No owner recorded: alerts go to the operator only.</p>`
    : html`<p data-owner="${o.email}">${o.name ? `${o.name} · ` : ''}<a href="mailto:${o.email}">${o.email}</a> · ${
        !o.alerts
          ? html`<span class="muted">owner alerts off for this account</span>`
          : deploymentOn
            ? html`<span class="ok">gets the expiry and reauth alerts with a one-time reconnect link</span>`
            : html`<span class="muted">would get alerts, but OWNER_ALERTS is off for this deployment</span>`
      }</p>`;
  const edit = html`<form method="post" action="${`${base}/owner`}" class="owner-form">${csrfField(csrf)}
<label>Owner email <input type="email" name="owner_email" required maxlength="254" value="${o?.email ?? ''}" autocomplete="off"></label>
<label>Name <input name="owner_name" maxlength="200" value="${o?.name ?? ''}" autocomplete="off"></label>
<label><input type="checkbox" name="owner_alerts" value="on"${!o || o.alerts ? ' checked' : ''}> send them alerts</label>
<button type="submit" class="primary">Save owner</button></form>`;
  const clear = o
    ? html`<form method="post" action="${`${base}/owner/clear`}">${csrfField(csrf)}<button type="submit">Forget the owner</button></form>`
    : '';
  return html`<section id="owner"><h2>Owner</h2>${status}${edit}${clear}</section>`;
}

/** What the reconnect section says was done about the account: the newest link, or why none was sent. */
function reconnectStatus(a: Account, d: AccountPageData, who: Html | string): Html | string {
  const link = d.reconnectLink ?? null;
  const o = a.owner;
  const made = (l: LatestReconnectLink) =>
    l.delivery === 'email'
      ? `emailed to the owner on ${when(l.createdAt)}`
      : `made here on ${when(l.createdAt)} to copy`;
  if (link?.state === 'ok')
    return link.delivery === 'email'
      ? html`${who} was emailed a reconnect link on <strong>${when(link.createdAt)}</strong>. It works once, until <strong>${when(link.expiresAt)}</strong>: the account comes back when they use it. If they cannot find the email, send a new one or copy one below.`
      : html`A reconnect link was made here on <strong>${when(link.createdAt)}</strong> for you to pass on; it works once, until <strong>${when(link.expiresAt)}</strong>.${link.lastEmailedAt ? ` The link emailed to the owner on ${when(link.lastEmailedAt)} no longer works.` : ''}`;
  if (link?.state === 'expired')
    return html`The last reconnect link (${made(link)}) expired on <strong>${when(link.expiresAt)}</strong>: send a new one.`;
  if (link)
    return `The last reconnect link (${made(link)}) no longer works (${link.state === 'used' ? 'it was used' : 'it was revoked'}): send a new one.`;
  if (!o)
    return 'No owner is recorded, so nobody was sent a reconnect link. Make a link to copy and send it to the owner, or record the owner below and email one.';
  if (!o.alerts)
    return html`${who} was not emailed: alerts are off for this account's owner. Email them a link, or make one to copy.`;
  if (!d.ownerAlertsOn)
    return html`${who} was not emailed: OWNER_ALERTS is off for this deployment. Email them a link, or make one to copy.`;
  return html`${who} has not been sent a reconnect link yet. Email them one, or make one to copy.`;
}

/**
 * An account waiting for its owner's login (R-TOK-10): what was done about it (the reconnect link
 * emailed by the alert or made here, until when it works) and the two ways to send a new one.
 * A new link revokes the earlier ones (R-OWN-12), which the buttons say.
 */
function reconnectSection(a: Account, base: string, csrf: string, d: AccountPageData): Html {
  const link = d.reconnectLink ?? null;
  const o = a.owner;
  const who = o ? html`The owner (<a href="mailto:${o.email}">${o.email}</a>)` : 'The owner';
  const action = `${base}/reconnect-link`;
  const buttons = d.linksOffered
    ? html`<div class="actions">${
        o
          ? html`<form method="post" action="${action}">${csrfField(csrf)}<input type="hidden" name="send" value="email"><button type="submit">Email ${o.email} a new link</button></form>`
          : ''
      }<form method="post" action="${action}">${csrfField(csrf)}<input type="hidden" name="send" value="copy"><button type="submit">Make a new link to copy</button></form></div>
<p class="muted">A new link replaces the earlier one: only the newest works.</p>`
    : '';
  return html`<section id="reconnect" data-link-state="${link ? link.state : 'none'}"${link ? html` data-link-delivery="${link.delivery}"` : ''}><h2>Reconnecting</h2><p>${reconnectStatus(a, d, who)}</p>${buttons}</section>`;
}

/** A reconnect link made to copy, shown once (only its digest is stored). */
export function reconnectLinkPage(
  a: { id: string; username: string },
  link: { url: string; expiresAt: Date },
  o: LayoutOptions,
): string {
  const body = html`<h1>Reconnect link for @${a.username}</h1>
<p>Send this link to the account's owner. It opens their status page with a Reconnect button; it works once, until ${when(link.expiresAt)}, and only for @${a.username}. Any earlier link no longer works. It is shown only now.</p>
<p><input id="reconnect-link" readonly size="90" value="${link.url}"></p>
<p><a class="button" href="/dashboard/accounts/${encodeURIComponent(a.id)}#reconnect">Back to @${a.username}</a></p>`;
  return layout(`Reconnect link @${a.username}`, body, o);
}
