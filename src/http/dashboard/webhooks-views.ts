import { escapeHtml as h } from '../pages.ts';
import { CSRF_FIELD } from '../csrf.ts';
import type { WebhookDelivery, WebhookEndpoint } from '../../store/webhooks.ts';
import { WEBHOOK_EVENTS } from '../../webhooks/events.ts';
import { layout, type LayoutOptions } from './views.ts';

/**
 * The webhooks pages of the dashboard: endpoints (add, rotate, remove) and each endpoint's
 * delivery log. Server-rendered like the rest, no script and no style attribute of their own
 * (the CSP allows neither); every value through escapeHtml; every action a POST form with the
 * session's CSRF token.
 */
const when = (d: Date | null) => (d ? `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC` : '—');

function form(action: string, label: string, csrf: string, extra = '', cls = ''): string {
  return `<form method="post" action="${h(action)}"><input type="hidden" name="${CSRF_FIELD}" value="${h(csrf)}">${extra}<button type="submit"${cls ? ` class="${cls}"` : ''}>${h(label)}</button></form>`;
}

export function webhooksPage(
  endpoints: Array<WebhookEndpoint & { last?: WebhookDelivery | undefined }>,
  o: LayoutOptions & { allowPrivate: boolean },
): string {
  const rows = endpoints
    .map((e) => {
      const base = `/dashboard/webhooks/${encodeURIComponent(e.id)}`;
      const last = e.last
        ? `${h(e.last.eventType)} <span class="${e.last.status === 'delivered' ? 'ok' : e.last.status === 'failed' ? 'bad' : 'muted'}">${h(e.last.status)}</span><br><small>${when(e.last.createdAt)}</small>`
        : '<span class="muted">none yet</span>';
      const rotation = e.previousValidUntil
        ? `<br><small>previous secret signs until ${when(e.previousValidUntil)}</small>`
        : '';
      return `<tr data-endpoint-id="${h(e.id)}"><td><a href="${base}">${h(e.id)}</a>${e.description ? `<br><small>${h(e.description)}</small>` : ''}</td>
<td>${h(e.url)}</td><td>${e.events.length ? e.events.map(h).join('<br>') : 'all'}</td><td>${last}</td>
<td class="actions">${form(`${base}/rotate`, 'Rotate secret', o.csrf)}${form(`${base}/remove`, 'Remove', o.csrf, '', 'danger')}${rotation}</td></tr>`;
    })
    .join('\n');
  const options = WEBHOOK_EVENTS.map(
    (ev) => `<label><input type="checkbox" name="events" value="${h(ev)}"> ${h(ev)}</label>`,
  ).join(' ');
  const body = `<h1>Webhooks</h1>
<p class="muted">Each event is POSTed as JSON, signed with the endpoint's secret (header <code>Feedmirror-Signature: t=…,v1=…</code>, HMAC-SHA256 over <code>t.body</code>; refuse a <code>t</code> more than 300 s away). Failed deliveries are retried for about 24 hours.</p>
${endpoints.length ? `<table><thead><tr><th>Endpoint</th><th>URL</th><th>Events</th><th>Last delivery</th><th></th></tr></thead><tbody>${rows}</tbody></table>` : '<p>No endpoint yet.</p>'}
<h2>Add an endpoint</h2>
<form method="post" action="/dashboard/webhooks"><input type="hidden" name="${CSRF_FIELD}" value="${h(o.csrf)}">
<p><label>URL <input name="url" type="url" required size="60" placeholder="https://www.example.com/api/feedmirror"></label></p>
<p>Events (none ticked: all) ${options}</p>
<p><label>Note <input name="description" maxlength="200" size="40"></label></p>
<p><button type="submit" class="primary">Add endpoint</button>${o.allowPrivate ? '' : ' <small class="muted">private and local addresses are refused (WEBHOOK_ALLOW_PRIVATE)</small>'}</p></form>`;
  return layout('Webhooks', body, o);
}

export function secretPage(e: { id: string; url: string }, secret: string, note: string, o: LayoutOptions): string {
  const body = `<h1>Signing secret of ${h(e.id)}</h1>
<p>${h(note)} It is shown only now: put it in the receiver's environment (for example <code>FEEDMIRROR_WEBHOOK_SECRET</code>).</p>
<p><input id="secret" readonly size="70" value="${h(secret)}"></p>
<p><small>${h(e.url)}</small></p>
<p><a class="button" href="/dashboard/webhooks">Back to the webhooks</a></p>`;
  return layout('Webhook secret', body, o);
}

export function deliveriesPage(e: WebhookEndpoint, deliveries: WebhookDelivery[], o: LayoutOptions): string {
  const rows = deliveries
    .map(
      (
        d,
      ) => `<tr data-delivery-id="${h(d.id)}" data-status="${h(d.status)}"><td>${when(d.createdAt)}</td><td>${h(d.eventType)}<br><small>${h(d.eventId)}</small></td>
<td class="${d.status === 'delivered' ? 'ok' : d.status === 'failed' ? 'bad' : 'muted'}">${h(d.status)}</td><td>${d.attempts}</td>
<td>${d.lastHttpStatus !== null ? `HTTP ${d.lastHttpStatus}` : '—'}${d.lastError ? `<br><small>${h(d.lastError)}</small>` : ''}</td><td>${when(d.lastAttemptAt)}</td><td>${when(d.deliveredAt)}</td></tr>`,
    )
    .join('\n');
  const body = `<h1>Deliveries to ${h(e.id)}</h1>
<p>${h(e.url)} · events: ${e.events.length ? e.events.map(h).join(', ') : 'all'}${e.description ? ` · ${h(e.description)}` : ''}</p>
${deliveries.length ? `<table><thead><tr><th>Created</th><th>Event</th><th>Status</th><th>Attempts</th><th>Last answer</th><th>Last attempt</th><th>Delivered</th></tr></thead><tbody>${rows}</tbody></table>` : '<p>No delivery yet.</p>'}
<p><a class="button" href="/dashboard/webhooks">Back to the webhooks</a></p>`;
  return layout(`Deliveries ${e.id}`, body, o);
}
