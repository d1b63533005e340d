import { readFileSync } from 'node:fs';
import { html } from '../../util/html.ts';
import { CSRF_FIELD } from '../csrf.ts';
import { DASHBOARD_PATH } from './paths.ts';

/** The stylesheet of the dashboard and its login page, read once. */
export const DASHBOARD_CSS = readFileSync(new URL('../dashboard/dashboard.css', import.meta.url));

/**
 * The login form: its CSRF token (bound to the login cookie's nonce), where to go after, and why
 * the last attempt failed. The dashboard's look from its stylesheet file: no inline script or
 * style under the CSP.
 */
export function loginPage(opts: { csrf: string; next: string; message?: string }): string {
  const msg = opts.message ? html`<p class="error" role="alert">${opts.message}</p>` : '';
  return String(html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Log in · feedmirror dashboard</title><link rel="stylesheet" href="${DASHBOARD_PATH}/assets/dashboard.css"></head>
<body class="login"><header><span class="brand">feedmirror</span><span class="muted">dashboard</span></header>
<main><h1>Log in</h1>${msg}
<form method="post" action="${DASHBOARD_PATH}/login">
<input type="hidden" name="${CSRF_FIELD}" value="${opts.csrf}">
<input type="hidden" name="next" value="${opts.next}">
<label for="user">User</label><input id="user" name="user" autocomplete="username" required>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Log in</button>
</form></main></body></html>
`);
}
