import { html, join } from '../../util/html.ts';
import type { WebhookDelivery, WebhookEndpoint } from '../../store/webhooks.ts';
import { WEBHOOK_EVENTS } from '../../webhooks/events.ts';
import { csrfField, layout, postForm, type LayoutOptions } from './layout.ts';

/**
 * The webhooks pages of the dashboard: endpoints (add, rotate, remove) and each endpoint's
 * delivery log. Server-rendered like the rest (layout.ts), no script and no style attribute of
 * their own (the CSP allows neither); every action a POST form with the session's CSRF token.
 */
const when = (d: Date | null) => (d ? `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC` : '—');
const statusClass = (s: string) => (s === 'delivered' ? 'ok' : s === 'failed' ? 'bad' : 'muted');

function endpointRow(e: WebhookEndpoint & { last?: WebhookDelivery | undefined }, csrf: string) {
  const base = `/dashboard/webhooks/${encodeURIComponent(e.id)}`;
  const last = e.last
    ? html`${e.last.eventType} <span class="${statusClass(e.last.status)}">${e.last.status}</span><br><small>${when(e.last.createdAt)}</small>`
    : html`<span class="muted">none yet</span>`;
  const rotation = e.previousValidUntil
    ? html`<br><small>previous secret signs until ${when(e.previousValidUntil)}</small>`
    : '';
  return html`<tr data-endpoint-id="${e.id}"><td><a href="${base}">${e.id}</a>${e.description ? html`<br><small>${e.description}</small>` : ''}</td>
<td>${e.url}</td><td>${e.events.length ? join(e.events, html`<br>`) : 'all'}</td><td>${last}</td>
<td class="actions">${postForm(`${base}/rotate`, 'Rotate secret', csrf)}${postForm(`${base}/remove`, 'Remove', csrf, { cls: 'danger' })}${rotation}</td></tr>`;
}

export function webhooksPage(
  endpoints: Array<WebhookEndpoint & { last?: WebhookDelivery | undefined }>,
  o: LayoutOptions & { allowPrivate: boolean },
): string {
  const options = WEBHOOK_EVENTS.map(
    (ev) => html`<label><input type="checkbox" name="events" value="${ev}"> ${ev}</label>`,
  );
  const body = html`<h1>Webhooks</h1>
<p class="muted">Each event is POSTed as JSON, signed with the endpoint's secret (header <code>Feedmirror-Signature: t=…,v1=…</code>, HMAC-SHA256 over <code>t.body</code>; refuse a <code>t</code> more than 300 s away). Failed deliveries are retried for about 24 hours.</p>
${
  endpoints.length
    ? html`<table><thead><tr><th>Endpoint</th><th>URL</th><th>Events</th><th>Last delivery</th><th></th></tr></thead><tbody>${join(
        endpoints.map((e) => endpointRow(e, o.csrf)),
        '\n',
      )}</tbody></table>`
    : html`<p>No endpoint yet.</p>`
}
<h2>Add an endpoint</h2>
<form method="post" action="/dashboard/webhooks">${csrfField(o.csrf)}
<p><label>URL <input name="url" type="url" required size="60" placeholder="https://www.example.com/api/feedmirror"></label></p>
<p>Events (none ticked: all) ${join(options, ' ')}</p>
<p><label>Note <input name="description" maxlength="200" size="40"></label></p>
<p><button type="submit" class="primary">Add endpoint</button>${o.allowPrivate ? '' : html` <small class="muted">private and local addresses are refused (WEBHOOK_ALLOW_PRIVATE)</small>`}</p></form>`;
  return layout('Webhooks', body, o);
}

export function secretPage(e: { id: string; url: string }, secret: string, note: string, o: LayoutOptions): string {
  const body = html`<h1>Signing secret of ${e.id}</h1>
<p>${note} It is shown only now: put it in the receiver's environment (for example <code>FEEDMIRROR_WEBHOOK_SECRET</code>).</p>
<p><input id="secret" readonly size="70" value="${secret}"></p>
<p><small>${e.url}</small></p>
<p><a class="button" href="/dashboard/webhooks">Back to the webhooks</a></p>`;
  return layout('Webhook secret', body, o);
}

export function deliveriesPage(e: WebhookEndpoint, deliveries: WebhookDelivery[], o: LayoutOptions): string {
  const rows = deliveries.map(
    (
      d,
    ) => html`<tr data-delivery-id="${d.id}" data-status="${d.status}"><td>${when(d.createdAt)}</td><td>${d.eventType}<br><small>${d.eventId}</small></td>
<td class="${statusClass(d.status)}">${d.status}</td><td>${d.attempts}</td>
<td>${d.lastHttpStatus !== null ? `HTTP ${d.lastHttpStatus}` : '—'}${d.lastError ? html`<br><small>${d.lastError}</small>` : ''}</td><td>${when(d.lastAttemptAt)}</td><td>${when(d.deliveredAt)}</td></tr>`,
  );
  const body = html`<h1>Deliveries to ${e.id}</h1>
<p>${e.url} · events: ${e.events.length ? join(e.events, ', ') : 'all'}${e.description ? ` · ${e.description}` : ''}</p>
${deliveries.length ? html`<table><thead><tr><th>Created</th><th>Event</th><th>Status</th><th>Attempts</th><th>Last answer</th><th>Last attempt</th><th>Delivered</th></tr></thead><tbody>${join(rows, '\n')}</tbody></table>` : html`<p>No delivery yet.</p>`}
<p><a class="button" href="/dashboard/webhooks">Back to the webhooks</a></p>`;
  return layout(`Deliveries ${e.id}`, body, o);
}
