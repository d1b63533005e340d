import { createHash, timingSafeEqual } from 'node:crypto';
import express, { Router, type Request, type Response } from 'express';
import { getAccount } from '../store/accounts.ts';
import { getTokenInfo } from '../store/tokens.ts';
import {
  findReconnectLink,
  linkState,
  RECONNECT_TOKEN_RE,
  type ReconnectLink,
  type ReconnectLinkState,
} from '../store/owners.ts';
import { daysLeft } from '../util/clock.ts';
import { hasSameOrigin } from './csrf.ts';
import { cspWithFormRedirects } from './security-headers.ts';
import { renderOwnerPage } from './owner-pages.ts';
import { ownerCause } from '../alerts/owner.ts';
import { resolveBrand, type Brand } from '../util/brand.ts';
import type { ConnectThrottle } from './throttle.ts';
import type { Db } from '../store/db.ts';
import type { Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';

/**
 * The owner status page (R-OWN-15): `GET /reconnect/<token>`, the link an owner's alert carries.
 * No dashboard login: the link's token is the credential, read-only and scoped to its one
 * account. It shows the connection's state, the days of validity left while connected (why it
 * stopped once it needs its owner), the last successful sync, and a Reconnect button:
 * `POST /reconnect/<token>` with a form value derived from the link (and a same-origin check),
 * which starts the platform's login bound to the link: its 303 leads to another origin, so the
 * page's form-action names that origin. The link is used only when that login connects the same
 * account (src/http/connect.ts callback).
 *
 * Never on the page: a token, the owner's address, any error text of the platform. The pages
 * carry `Referrer-Policy: no-referrer` (the link is in the address bar) and `Cache-Control:
 * no-store`. An unknown link is a 404, an expired, used or replaced one a 410, both in words,
 * with whom to contact.
 */
export interface ReconnectRoutesDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  publicUrl: string;
  /** The platform's login with a fresh state bound to this link (connect.ts startLogin). */
  startLogin(reconnectHash: string): Promise<string>;
  /**
   * The origin of that login (AUTHORIZE_URL's): the Reconnect button's POST answers 303 there,
   * so the status page's form-action names it (a browser blocks the redirect otherwise).
   */
  loginOrigin: string;
  throttle: ConnectThrottle;
  /** BRAND_*: the pages' look, and whom an owner may write to (BRAND_SUPPORT_EMAIL). */
  brand?: Brand;
}

export const RECONNECT_FORM_FIELD = 'confirm';

/** The form value that proves the POST came from the page of this link (nobody else can compute it). */
export function reconnectFormValue(token: string): string {
  return createHash('sha256').update(`reconnect-form\0${token}`, 'utf8').digest('base64url');
}

function formValueMatches(token: string, given: unknown): boolean {
  if (typeof given !== 'string') return false;
  const expected = Buffer.from(reconnectFormValue(token));
  const got = Buffer.from(given);
  return got.length === expected.length && timingSafeEqual(got, expected);
}

/** Why a link does not work, in the owner's words (the status page and the callback say the same). */
export const RECONNECT_LINK_TEXT: Record<Exclude<ReconnectLinkState, 'ok'>, string> = {
  unknown: 'This reconnect link is not valid here. Check that you opened the whole link from the email.',
  expired: 'This reconnect link has expired.',
  used: 'This reconnect link was already used to reconnect the account. Each link works once.',
  revoked: 'This reconnect link was replaced by a newer one: use the link in the most recent email.',
};

/**
 * What the owner can do about a link that does not work. A reconnect link comes from an
 * automatic email, so "whoever sent it" names nobody: the brand's support address does, or the
 * person who set up the feed on the owner's website.
 */
export function reconnectLinkNext(state: Exclude<ReconnectLinkState, 'ok'>, brand: Brand | undefined): string {
  const support = resolveBrand(brand).supportEmail;
  const ask = support
    ? `ask ${support} for a new link`
    : 'ask the person who set up the feed on your website for a new link';
  switch (state) {
    case 'used':
      return `If you reconnected with it, there is nothing more to do: the feed updates by itself. If the account still needs you, ${ask}.`;
    case 'revoked':
      return `If you cannot find that email, ${ask}.`;
    case 'unknown':
      return `If it still does not work, ${ask}.`;
    case 'expired':
      return `${ask.charAt(0).toUpperCase()}${ask.slice(1)}.`;
  }
}

/** The page of a reconnect link that does not work (404 unknown, 410 the rest): why, and what to do. */
export function refusedLinkPage(state: Exclude<ReconnectLinkState, 'ok'>, brand: Brand | undefined): string {
  return renderOwnerPage('expired-link', {
    reason: RECONNECT_LINK_TEXT[state],
    whatNext: reconnectLinkNext(state, brand),
    brand,
  });
}

export function reconnectRoutes(deps: ReconnectRoutesDeps): Router {
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '2kb', parameterLimit: 5 });
  const allowed = [new URL(deps.publicUrl).origin];
  // The status page alone: its form's POST redirects to the platform's login.
  const statusPagePolicy = cspWithFormRedirects([deps.loginOrigin]);
  const headers = (res: Response) =>
    res.set({
      'Cache-Control': 'no-store',
      'Referrer-Policy': 'no-referrer',
      'X-Frame-Options': 'DENY',
      'X-Robots-Tag': 'noindex',
    });
  const refuseLink = (res: Response, state: Exclude<ReconnectLinkState, 'ok'>) => {
    headers(res)
      .status(state === 'unknown' ? 404 : 410)
      .type('html')
      .send(refusedLinkPage(state, deps.brand));
  };

  /** The link named in the path and its state (a malformed token is never looked up). */
  const linkOf = async (
    req: Request,
  ): Promise<{ token: string; link: ReconnectLink | null; state: ReconnectLinkState }> => {
    const token = String(req.params.token ?? '');
    if (!RECONNECT_TOKEN_RE.test(token)) return { token, link: null, state: 'unknown' };
    const link = await findReconnectLink(deps.db, token);
    return { token, link, state: linkState(link, deps.clock.now()) };
  };

  router.get('/reconnect/:token', async (req: Request, res: Response, next) => {
    try {
      const { token, link, state } = await linkOf(req);
      if (state !== 'ok' || !link) return refuseLink(res, state === 'ok' ? 'unknown' : state);
      const account = await getAccount(deps.db, link.accountId);
      if (!account) return refuseLink(res, 'unknown');
      const tokenInfo = await getTokenInfo(deps.db, account.id);
      const now = deps.clock.now();
      const left = tokenInfo ? daysLeft(tokenInfo.expiresAt, now) : null;
      const connected = account.status === 'active' && left !== null && left >= 0;
      headers(res)
        .set('Content-Security-Policy', statusPagePolicy)
        .type('html')
        .send(
          renderOwnerPage('status', {
            username: account.username,
            connected,
            // An active account whose token ran out is waiting for no other cause than its end.
            reason: connected
              ? null
              : ownerCause(account.status === 'active' && tokenInfo ? 'token_expired' : account.statusReasonKind),
            daysLeft: left === null ? null : Math.max(0, left),
            expiresAt: tokenInfo?.expiresAt ?? null,
            lastSyncAt: account.lastCompleteSyncAt,
            linkExpiresAt: link.expiresAt,
            reconnect: {
              action: `/reconnect/${token}`,
              fields: { [RECONNECT_FORM_FIELD]: reconnectFormValue(token) },
            },
            brand: deps.brand,
          }),
        );
    } catch (err) {
      next(err);
    }
  });

  router.post('/reconnect/:token', form, async (req: Request, res: Response, next) => {
    try {
      const { token, link, state } = await linkOf(req);
      if (state !== 'ok' || !link) return refuseLink(res, state === 'ok' ? 'unknown' : state);
      const given = (req.body as Record<string, unknown> | undefined)?.[RECONNECT_FORM_FIELD];
      if (!formValueMatches(token, given) || !hasSameOrigin(req, allowed)) {
        headers(res)
          .status(403)
          .type('html')
          .send(
            renderOwnerPage('notice', {
              title: 'Please use the button',
              lines: [
                'This request did not come from the reconnect page. Open the link from your email again and press Reconnect.',
              ],
              brand: deps.brand,
            }),
          );
        return;
      }
      const verdict = await deps.throttle.take(req.ip ?? 'unknown');
      if (!verdict.allowed) {
        res.set('Retry-After', String(verdict.retryAfterSeconds));
        headers(res)
          .status(429)
          .type('html')
          .send(
            renderOwnerPage('notice', {
              title: 'Too many attempts',
              lines: [
                `Too many logins were started from your address. Try again in ${Math.ceil(verdict.retryAfterSeconds / 60)} minute(s).`,
              ],
              brand: deps.brand,
            }),
          );
        return;
      }
      const url = await deps.startLogin(link.hash);
      headers(res).redirect(303, url);
    } catch (err) {
      next(err);
    }
  });
  return router;
}
