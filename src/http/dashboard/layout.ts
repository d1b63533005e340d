import { html, type Html } from '../../util/html.ts';
import { CSRF_FIELD } from '../csrf.ts';

/**
 * The frame of every dashboard page and the pieces every page's forms share. Pages are
 * server-rendered with the `html` tag (src/util/html.ts: every value escaped unless it is markup
 * the code built), with no script of our own but files the CSP allows; every action is a POST
 * form carrying the session's CSRF token.
 */

/** The dashboard's one stylesheet (a file: the CSP allows no inline script, and the login page shares it). */
export const DASHBOARD_STYLESHEET = '/dashboard/assets/dashboard.css';

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

/** A time as the accounts list shows it: to the minute, in UTC. */
export const when = (d: Date | null) => (d ? `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC` : 'never');

/** The hidden field with the session's CSRF token (csrf.ts checks it on every POST). */
export function csrfField(csrf: string): Html {
  return html`<input type="hidden" name="${CSRF_FIELD}" value="${csrf}">`;
}

/** A one-button POST form: the CSRF token, any extra fields, the button. */
export function postForm(
  action: string,
  label: string,
  csrf: string,
  opts: { extra?: Html | '' | undefined; cls?: string | undefined } = {},
): Html {
  return html`<form method="post" action="${action}">${csrfField(csrf)}${opts.extra}<button type="submit"${opts.cls ? html` class="${opts.cls}"` : ''}>${label}</button></form>`;
}

/** A complete dashboard page: the header (navigation, log out), the flash, the body. */
export function layout(title: string, body: Html, o: LayoutOptions): string {
  const flash = o.flash ? html`<p class="flash ${o.flash.kind}" role="status">${o.flash.text}</p>` : '';
  const logout =
    o.mode === 'password'
      ? html`<form method="post" action="/dashboard/logout">${csrfField(o.csrf)}<button type="submit">Log out (${o.user})</button></form><form method="post" action="/dashboard/logout-everywhere">${csrfField(o.csrf)}<button type="submit" title="End every session of ${o.user}, in every browser">Log out everywhere</button></form>`
      : html`<span class="muted">no login: loopback only</span>`;
  return String(html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · feedmirror</title><link rel="stylesheet" href="${DASHBOARD_STYLESHEET}"></head>
<body><header><a class="brand" href="/dashboard">feedmirror</a><a href="/dashboard">Accounts</a><a href="/dashboard/queues">Queues</a><a href="/dashboard/widgets">Widgets</a><a href="/dashboard/webhooks">Webhooks</a><a href="/dashboard/apps">Apps</a>${o.connectUrl ? html`<a href="${o.connectUrl}">Connect an account</a>` : ''}${logout}</header>
<main>${flash}${body}</main></body></html>
`);
}
