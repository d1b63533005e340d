import { createHmac, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * CSRF protection for the dashboard, two layers:
 *  - our own forms: a synchronizer token, HMAC(session key, session id), in a hidden field and
 *    checked on every POST (a missing or wrong token => 403);
 *  - every state-changing request (ours and bull-board's fetch calls, which cannot carry our
 *    token): the browser's own statement of where it comes from, `Sec-Fetch-Site: same-origin`,
 *    or else an `Origin` equal to this server's. A request with neither is refused.
 * The session cookie is SameSite=Strict on top of both.
 */
export const CSRF_FIELD = '_csrf';

export function csrfTokenFor(key: Buffer, sessionId: string): string {
  return createHmac('sha256', key).update(`csrf\0${sessionId}`).digest('base64url');
}

export function csrfMatches(key: Buffer, sessionId: string, token: unknown): boolean {
  if (typeof token !== 'string' || token.length === 0) return false;
  const expected = Buffer.from(csrfTokenFor(key, sessionId));
  const given = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The origin this request was addressed to, as the browser sees it. */
function ownOrigin(req: Request): string {
  return `${req.protocol}://${req.headers.host ?? ''}`;
}

/**
 * True when the browser says the request comes from a page of this server. `Sec-Fetch-Site`
 * (sent by current browsers, not settable by page scripts) wins; otherwise `Origin` must be ours
 * (own host or one of `allowed`, e.g. PUBLIC_URL behind a proxy).
 */
export function hasSameOrigin(req: Request, allowed: readonly string[]): boolean {
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string' && site !== '') return site === 'same-origin';
  const origin = req.headers.origin;
  if (typeof origin !== 'string' || origin === '' || origin === 'null') return false;
  return origin === ownOrigin(req) || allowed.includes(origin);
}

export function refuse(res: Response, message: string): void {
  res.status(403).set('Cache-Control', 'no-store').type('text/plain').send(`${message}\n`);
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** For bull-board's API: every non-GET must come from a page of this server. */
export function requireSameOrigin(allowed: readonly string[]): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    if (SAFE_METHODS.has(req.method) || hasSameOrigin(req, allowed)) return next();
    refuse(res, 'Refused: this request did not come from a page of this dashboard (cross-site request).');
  };
}

/**
 * For our forms: same origin AND the session's token in the body field `_csrf`. Mount after the
 * session middleware and the urlencoded body parser.
 */
export function requireCsrfToken(
  key: Buffer,
  allowed: readonly string[],
  sessionIdOf: (res: Response) => string,
): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    if (SAFE_METHODS.has(req.method)) return next();
    const token = (req.body as Record<string, unknown> | undefined)?.[CSRF_FIELD];
    if (!csrfMatches(key, sessionIdOf(res), token)) {
      refuse(res, 'Refused: the form had no valid CSRF token. Reload the dashboard page and try again.');
      return;
    }
    if (!hasSameOrigin(req, allowed)) {
      refuse(res, 'Refused: this request did not come from a page of this dashboard (cross-site request).');
      return;
    }
    next();
  };
}
