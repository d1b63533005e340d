import helmet from 'helmet';
import type { RequestHandler } from 'express';

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
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        'default-src': ["'none'"],
        'script-src': ["'self'"],
        'style-src': ["'self'", "'unsafe-inline'"],
        // Feed previews show copies from MEDIA_PUBLIC_URL (a bucket or CDN on another host).
        'img-src': ["'self'", 'data:', 'https:', 'http:'],
        'font-src': ["'self'"],
        'connect-src': ["'self'"],
        'manifest-src': ["'self'"],
        'form-action': ["'self'"],
        'frame-ancestors': ["'none'"],
        // bull-board's page sets <base href> to its own path on this server.
        'base-uri': ["'self'"],
        'object-src': ["'none'"],
      },
    },
    strictTransportSecurity: https ? { maxAge: 365 * 86_400, includeSubDomains: false } : false,
    referrerPolicy: { policy: 'same-origin' },
    xFrameOptions: { action: 'deny' },
    crossOriginEmbedderPolicy: false,
    // Connect and callback pages are opened by the platform's redirect: no opener relation needed.
    crossOriginOpenerPolicy: { policy: 'same-origin' },
  });
}
