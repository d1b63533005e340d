import { resolveBrand, type Brand, type ResolvedBrand } from '../util/brand.ts';
import { html, join, raw, type Html } from '../util/html.ts';

/**
 * The pages an account's owner sees, branded (BRAND_NAME, BRAND_LOGO_URL, BRAND_SUPPORT_EMAIL,
 * BRAND_ACCENT_COLOR): the result of a connect or reconnect login, a link that no longer works,
 * a login with the wrong account, and the owner's status page.
 *
 *   renderOwnerPage(kind, vars) -> a complete HTML document
 *
 * kind           | vars (? = optional; every kind also takes brand?)
 * ---------------|----------------------------------------------------------------------------
 * done           | username, expiresAt?, reconnected?, feedUrl?, scheduled?
 * declined       | title?, lines (what happened, our own words), retryUrl? ("Try again")
 * expired-link   | reason (one sentence), retryUrl? , whatNext?
 * wrong-account  | expectedUsername?, retryUrl?
 * status         | username, connected, reason?, daysLeft?, expiresAt?, lastSyncAt?, linkExpiresAt?,
 *                | reconnect?: { url } or { action, fields } (a POST form); the days left are shown
 *                | only while connected, the reason only while not
 * notice         | title, lines, retryUrl?, status? (any other page of the connect flow)
 *
 * No script anywhere (the Content-Security-Policy allows none inline: src/http/security-headers.ts);
 * one <style> block (style-src allows inline styles); nothing loaded from elsewhere but the
 * brand's https logo (img-src allows https:). Built with the `html` tag (src/util/html.ts): every
 * value is escaped.
 */
export type OwnerPageKind = 'done' | 'declined' | 'expired-link' | 'wrong-account' | 'status' | 'notice';

interface Common {
  brand?: Brand | undefined;
}
export interface OwnerPageVars {
  done: Common & {
    username: string;
    expiresAt?: Date | undefined;
    /** A reconnect (owner's link) rather than a first connection. */
    reconnected?: boolean | undefined;
    /** Where the feed is published (the feed API's address), for whoever set up the website. */
    feedUrl?: string | undefined;
    /** False when the account's jobs could not be made now: the first sync then waits for the worker. */
    scheduled?: boolean | undefined;
  };
  declined: Common & { title?: string | undefined; lines: string[]; retryUrl?: string | undefined };
  'expired-link': Common & { reason: string; retryUrl?: string | undefined; whatNext?: string | undefined };
  'wrong-account': Common & { expectedUsername?: string | undefined; retryUrl?: string | undefined };
  status: Common & {
    username: string;
    connected: boolean;
    /** Why it stopped, in plain words (shown when not connected). */
    reason?: string | null | undefined;
    /** The token's days left and end (shown while connected: once it is refused they mean nothing). */
    daysLeft?: number | null | undefined;
    expiresAt?: Date | null | undefined;
    lastSyncAt?: Date | null | undefined;
    /** Until when the owner's link works. */
    linkExpiresAt?: Date | undefined;
    reconnect?: { url: string } | { action: string; fields: Record<string, string> } | undefined;
  };
  notice: Common & { title: string; lines: string[]; retryUrl?: string | undefined };
}

const when = (d: Date) => {
  const day = d.toLocaleDateString('en-GB', {
    weekday: 'long',
    day: 'numeric',
    month: 'long',
    year: 'numeric',
    timeZone: 'UTC',
  });
  const time = d.toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit', hour12: false, timeZone: 'UTC' });
  return `${day}, ${time} UTC`;
};

/** Only http(s) links reach an href; anything else is dropped (never a javascript: button). */
function href(url: string | undefined): string | undefined {
  if (!url) return undefined;
  if (url.startsWith('/') && !url.startsWith('//')) return url;
  try {
    return ['http:', 'https:'].includes(new URL(url).protocol) ? url : undefined;
  } catch {
    return undefined;
  }
}

const capitalise = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
const p = (text: string) => html`<p>${text}</p>`;
const button = (url: string | undefined, label: string) => {
  const u = href(url);
  return u ? html`<p class="actions"><a class="button" href="${u}">${label}</a></p>` : '';
};

function css(b: ResolvedBrand): string {
  return `:root{--accent:${b.accentColor};--accent-text:${b.accentText}}
*{box-sizing:border-box}
body{margin:0;background:#f3f4f6;color:#111827;font:16px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
.wrap{max-width:36rem;margin:0 auto;padding:2rem 1rem}
.card{background:#fff;border:1px solid #e5e7eb;border-radius:10px;overflow:hidden}
.brand{display:flex;align-items:center;gap:.6rem;padding:1rem 1.5rem;border-bottom:3px solid var(--accent);font-weight:700;font-size:1.1rem}
.brand img{display:block;height:32px;width:auto}
main{padding:1.5rem}
h1{font-size:1.45rem;line-height:1.25;margin:0 0 1rem}
h2{font-size:1.05rem;margin:1.5rem 0 .5rem}
p{margin:0 0 1rem}
.actions{margin:1.5rem 0}
.button,button{display:inline-block;background:var(--accent);color:var(--accent-text);border:0;border-radius:6px;padding:.75rem 1.4rem;font:inherit;font-weight:700;text-decoration:none;cursor:pointer}
.button:focus-visible,button:focus-visible{outline:3px solid #111827;outline-offset:2px}
.state{display:inline-block;border-radius:999px;padding:.1rem .7rem;font-weight:600;font-size:.95rem}
.state.ok{background:#dcfce7;color:#14532d}
.state.bad{background:#fee2e2;color:#7f1d1d}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.35rem 1rem;margin:0 0 1rem}
dt{color:#4b5563}
dd{margin:0}
.muted{color:#4b5563;font-size:.92rem}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.9em;word-break:break-all}
footer{padding:1rem 1.5rem;border-top:1px solid #e5e7eb;color:#4b5563;font-size:.9rem}
footer a{color:inherit}`;
}

/** The branded document around a body the caller built with `html`. */
export function ownerDocument(opts: { title: string; body: Html; brand?: Brand | undefined }): string {
  const b = resolveBrand(opts.brand);
  const head = b.logoUrl ? html`<img src="${b.logoUrl}" alt="${b.name}">` : html`<span>${b.name}</span>`;
  const foot = b.supportEmail
    ? html`Questions? Write to <a href="mailto:${b.supportEmail}">${b.supportEmail}</a>.`
    : b.name;
  // The stylesheet is ours (the brand's colours are checked #rrggbb by resolveBrand): raw, as CSS.
  return String(html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${opts.title} · ${b.name}</title>
<style>${raw(css(b))}</style>
</head>
<body>
<div class="wrap">
<div class="card">
<header class="brand">${head}</header>
<main>
<h1>${opts.title}</h1>
${opts.body}
</main>
<footer>${foot}</footer>
</div>
</div>
</body>
</html>
`);
}

/** A page's title and its body's blocks (an empty string is left out). */
interface OwnerPage {
  title: string;
  body: Array<Html | ''>;
}

const date = (d: Date) =>
  d.toLocaleDateString('en-GB', { day: 'numeric', month: 'long', year: 'numeric', timeZone: 'UTC' });

const PAGES: { [K in OwnerPageKind]: (v: OwnerPageVars[K]) => OwnerPage } = {
  done: (v) => {
    const who = `@${v.username}`;
    const until = v.expiresAt ? ` Its access is valid until ${date(v.expiresAt)} and renews automatically.` : '';
    const feed = href(v.feedUrl);
    return {
      title: v.reconnected ? 'Account reconnected' : 'Account connected',
      body: [
        p(`${v.reconnected ? 'Thank you: ' : ''}${who} is connected${v.reconnected ? ' again' : ''}.${until}`),
        html`<h2>What happens next</h2>`,
        // A reconnected account's posts are on the website already: only new ones are to come.
        p(
          `${v.reconnected ? `New posts of ${who} are read again` : `The first posts of ${who} are read`} ${
            v.scheduled === false
              ? 'within a few minutes, as soon as the feed service picks the account up.'
              : 'within a minute or so.'
          }`,
        ),
        p(
          v.reconnected
            ? 'They appear on the website that shows this feed as before; there is nothing else to do.'
            : 'They then appear on the website that shows this feed; new posts follow by themselves.',
        ),
        feed ? html`<p class="muted">Feed address, for whoever set up the website: <code>${feed}</code></p>` : '',
        p('You can close this page.'),
      ],
    };
  },
  declined: (v) => ({
    title: v.title ?? 'Account not connected',
    body: [
      ...v.lines.map(p),
      href(v.retryUrl)
        ? button(v.retryUrl, 'Try again')
        : p('To try again, ask for a new link from whoever sent you this one.'),
    ],
  }),
  'expired-link': (v) => ({
    title: 'This link no longer works',
    body: [
      p(v.reason),
      p(
        v.whatNext ?? 'Ask for a new link from whoever sent you this one; each link works once and for a limited time.',
      ),
      button(v.retryUrl, 'Try again'),
    ],
  }),
  'wrong-account': (v) => {
    const who = v.expectedUsername ? `@${v.expectedUsername}` : 'the account this link is for';
    return {
      title: 'Wrong account',
      body: [
        p(`You logged in with another account. This link is for ${who} only, so nothing was changed.`),
        p(`Log out of the platform (or open the link in a private window), then try again and log in as ${who}.`),
        button(v.retryUrl, 'Try again'),
      ],
    };
  },
  status: statusPage,
  notice: (v) => ({ title: v.title, body: [...v.lines.map(p), button(v.retryUrl, 'Try again')] }),
};

/** The owner's status page: the connection's state, and the Reconnect button. */
function statusPage(v: OwnerPageVars['status']): OwnerPage {
  const who = `@${v.username}`;
  const lastSync = html`<dt>Last successful update</dt><dd data-last-sync>${v.lastSyncAt ? when(v.lastSyncAt) : 'not yet'}</dd>`;
  // Connected: the days left count, and reconnecting before they end avoids a gap. Once the
  // account needs its owner they count for nothing (the platform refuses the token whatever
  // its date), so the page says why it stopped and what the website shows meanwhile instead.
  const rows = v.connected
    ? [
        html`<dt>Connection</dt><dd><span class="state ok" data-state="connected">Connected</span></dd>`,
        html`<dt>Validity left</dt><dd data-days-left="${v.daysLeft ?? ''}">${
          v.daysLeft !== null && v.daysLeft !== undefined
            ? `${v.daysLeft} day${v.daysLeft === 1 ? '' : 's'}${v.expiresAt ? ` (until ${when(v.expiresAt)})` : ''}`
            : 'unknown'
        }</dd>`,
        lastSync,
      ]
    : [
        html`<dt>Connection</dt><dd><span class="state bad" data-state="needs_owner">Not updating: needs you to reconnect</span></dd>`,
        html`<dt>Why</dt><dd data-reason>${v.reason ? capitalise(v.reason) : 'The platform no longer accepts the connection'}.</dd>`,
        lastSync,
      ];
  const why = v.connected
    ? `The connection to ${who} works. Reconnect before it ends to keep your website's feed updating without a gap.`
    : `The connection to ${who} has stopped working. Your website keeps showing the posts of the last successful update; new posts reach it again once you reconnect.`;
  let action: Html | '' = '';
  if (v.reconnect && 'url' in v.reconnect) action = button(v.reconnect.url, `Reconnect ${who}`);
  else if (v.reconnect) {
    const fields = Object.entries(v.reconnect.fields).map(
      ([k, val]) => html`<input type="hidden" name="${k}" value="${val}">`,
    );
    action = html`<form class="actions" method="post" action="${href(v.reconnect.action) ?? ''}">${fields}<button type="submit">Reconnect ${who}</button></form>`;
  }
  return {
    title: `Your feed of ${who}`,
    body: [
      p(why),
      html`<dl>
<dt>Account</dt><dd>${who}</dd>
${join(rows, '\n')}
</dl>`,
      action
        ? html`<p>Press Reconnect, log in as <strong>${who}</strong> on the platform and approve access. Your password is never seen here.${v.linkExpiresAt ? ` This link works once, until ${when(v.linkExpiresAt)}.` : ''}</p>\n${action}`
        : '',
    ],
  };
}

export function renderOwnerPage<K extends OwnerPageKind>(kind: K, vars: OwnerPageVars[K]): string {
  const render = PAGES[kind] as ((v: OwnerPageVars[K]) => OwnerPage) | undefined;
  if (!render) throw new Error(`unknown owner page ${String(kind)}`);
  const { title, body } = render(vars);
  return ownerDocument({ title, body: join(body.filter(Boolean), '\n'), brand: vars.brand });
}
