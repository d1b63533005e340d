import helmet from 'helmet';
import type { RequestHandler } from 'express';

/**
 * The Content-Security-Policy's directives. form-action is 'self' on every page but one whose
 * form's POST answers with a redirect to another origin: Chromium checks form-action against
 * every redirect of a form's navigation and blocks the one that leaves the allowed origins
 * ("Sending form data to … violates … form-action"), so such a page names its redirect's origin
 * (cspWithFormRedirects). Only the owner's Reconnect form does that (its POST answers 303 to the
 * platform's login, AUTHORIZE_URL): src/http/reconnect.ts.
 */
function directives(formRedirectsTo: readonly string[] = []): Record<string, string[]> {
  return {
    'default-src': ["'none'"],
    'script-src': ["'self'"],
    'style-src': ["'self'", "'unsafe-inline'"],
    // Feed previews show copies from MEDIA_PUBLIC_URL (a bucket or CDN on another host).
    'img-src': ["'self'", 'data:', 'https:', 'http:'],
    'font-src': ["'self'"],
    'connect-src': ["'self'"],
    'manifest-src': ["'self'"],
    'form-action': ["'self'", ...formRedirectsTo],
    'frame-ancestors': ["'none'"],
    // bull-board's page sets <base href> to its own path on this server.
    'base-uri': ["'self'"],
    'object-src': ["'none'"],
  };
}

/**
 * The policy of every page with `origins` (http(s) origins, e.g. AUTHORIZE_URL's) added to
 * form-action, for the response whose form's POST redirects there. Anything but an origin throws.
 */
export function cspWithFormRedirects(origins: readonly string[]): string {
  for (const o of origins) {
    const u = new URL(o);
    if (!/^https?:$/.test(u.protocol) || u.origin !== o) throw new Error(`not an http(s) origin: ${o}`);
  }
  return Object.entries(directives(origins))
    .map(([name, values]) => `${name} ${values.join(' ')}`)
    .join(';');
}

/**
 * Security headers on every response of `feedmirror serve` (helmet), errors and 404s included:
 *  - a Content-Security-Policy without inline script: every script is a file of this server
 *    (the dashboard's widget, bull-board's bundles); inline styles stay allowed (bull-board's
 *    React UI and the plain pages use them; a style cannot run code);
 *  - frame-ancestors 'none' and X-Frame-Options DENY: no page of ours inside another site's frame
 *    (clickjacking the dashboard's buttons);
 *  - X-Content-Type-Options: nosniff everywhere, feeds and media included;
 *  - Referrer-Policy same-origin: the callback's query (the login code) never leaves in a
 *    Referer, while our own forms still carry an Origin the CSRF check reads;
 *  - Strict-Transport-Security only when PUBLIC_URL is https (on plain http it would be ignored
 *    at best, and would lock browsers out of a server moved back to http at worst).
 * Cross-Origin-Resource-Policy is same-origin by default; the feed API and the public media
 * set cross-origin themselves, since other sites load them.
 */
export function securityHeaders(opts: { publicUrl?: string | undefined }): RequestHandler {
  const https = opts.publicUrl ? new URL(opts.publicUrl).protocol === 'https:' : false;
  return helmet({
    contentSecurityPolicy: { useDefaults: false, directives: directives() },
    strictTransportSecurity: https ? { maxAge: 365 * 86_400, includeSubDomains: false } : false,
    referrerPolicy: { policy: 'same-origin' },
    xFrameOptions: { action: 'deny' },
    crossOriginEmbedderPolicy: false,
    // Connect and callback pages are opened by the platform's redirect: no opener relation needed.
    crossOriginOpenerPolicy: { policy: 'same-origin' },
  });
}
