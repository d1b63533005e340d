import { Router, type Request, type Response } from 'express';
import type { ConnectDeps, ConnectedAccount } from '../accounts/connect.ts';
import { connectWithShortLivedToken } from '../accounts/connect.ts';
import { createLoginState, consumeLoginState } from '../store/login-states.ts';
import { SCOPE } from '../platform/identifiers.ts';
import { InsufficientDeveloperRoleError, MissingScopeError, PersonalAccountError, PlatformError } from '../platform/errors.ts';
import { MINUTE } from '../util/clock.ts';
import { page } from './pages.ts';

/**
 * GET /connect redirects the owner to the platform's login with a single-use, expiring state;
 * GET /callback checks the state, exchanges the code (single use, one hour), exchanges the
 * short-lived token for a long-lived one (R-TOK-1), stores it and schedules the account's jobs.
 * Every failure is a plain page that says what happened and how to retry; never a token.
 */
export interface ConnectRoutesDeps extends ConnectDeps {
  appId: string;
  authorizeUrl: string;
  publicUrl: string;
  onConnected: (account: ConnectedAccount) => Promise<void>;
  stateTtlMs?: number;
}

export function redirectUri(publicUrl: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/callback`;
}

export function connectRoutes(deps: ConnectRoutesDeps): Router {
  const router = Router();
  const ttl = deps.stateTtlMs ?? 15 * MINUTE;
  const connectUrl = `${deps.publicUrl.replace(/\/+$/, '')}/connect`;

  router.get('/connect', async (_req: Request, res: Response) => {
    const state = await createLoginState(deps.db, deps.clock.now(), ttl);
    const url = new URL(deps.authorizeUrl);
    url.searchParams.set('client_id', deps.appId);
    url.searchParams.set('redirect_uri', redirectUri(deps.publicUrl));
    url.searchParams.set('scope', SCOPE); // R-TOK-12: never the deprecated business_basic
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('state', state);
    res.set('Cache-Control', 'no-store').redirect(302, url.toString());
  });

  router.get('/callback', async (req: Request, res: Response) => {
    const q = req.query as Record<string, unknown>;
    const str = (k: string) => (typeof q[k] === 'string' ? (q[k] as string) : undefined);
    const fail = (status: number, title: string, ...lines: string[]) =>
      res.status(status).set('Cache-Control', 'no-store').type('html').send(page(title, lines, { retryUrl: connectUrl }));

    const state = str('state');
    if (!state) return fail(400, 'Login could not be checked', 'The platform sent no state with the login, so it cannot be matched to a connect request. Start again from the connect link.');
    const verdict = await consumeLoginState(deps.db, state, deps.clock.now());
    if (verdict !== 'ok') {
      const why = {
        unknown: 'This login does not match any connect request made here (a forged or foreign link).',
        used: 'This login link was already used. Each login can be used once.',
        expired: 'This login took too long and its request expired.',
      }[verdict];
      return fail(400, 'Login link not valid', why, 'Start again from the connect link.');
    }
    if (str('error')) {
      const reason = str('error_reason') === 'user_denied' || str('error') === 'access_denied' ? 'The login was cancelled or the permission was declined.' : `The platform reported: ${str('error_description') ?? str('error')}.`;
      return fail(403, 'Account not connected', reason, `To connect, log in again and approve the ${SCOPE} permission.`);
    }
    const code = str('code');
    if (!code) return fail(400, 'Login incomplete', 'The platform sent neither a code nor an error. Start again from the connect link.');

    try {
      const short = await deps.platform.exchangeCode(code, redirectUri(deps.publicUrl));
      const account = await connectWithShortLivedToken(deps, short.accessToken, { permissions: short.permissions });
      await deps.onConnected(account);
      res
        .status(200)
        .set('Cache-Control', 'no-store')
        .type('html')
        .send(page('Account connected', [`@${account.username} is connected. Its access is valid until ${account.expiresAt.toISOString().slice(0, 10)} and will be renewed automatically.`, 'You can close this page.']));
    } catch (err) {
      deps.logger.warn({ err }, 'connect failed');
      if (err instanceof PersonalAccountError || err instanceof MissingScopeError || err instanceof InsufficientDeveloperRoleError) {
        return fail(400, 'Account not connected', err.message);
      }
      if (err instanceof PlatformError && (err.code === 100 || err.status === 400)) {
        return fail(400, 'Login expired', 'The login code was already used or has expired (codes live one hour and work once).', 'Log in again from the connect link.');
      }
      return fail(502, 'Account not connected', `The platform could not be reached or answered unexpectedly (${(err as Error).message}). Try again in a few minutes.`);
    }
  });
  return router;
}
