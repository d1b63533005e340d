import { Router, type Request, type Response } from 'express';
import { checkInvitation, hashInvitation } from '../store/invitations.ts';
import { callbackRoute } from './connect-callback.ts';
import { connectFlow, INVITATION_TEXT, startLogin, type ConnectFlow, type ConnectRoutesDeps } from './connect-flow.ts';
import { reconnectRoutes } from './reconnect.ts';

export { redirectUri, startLogin, type ConnectRoutesDeps } from './connect-flow.ts';

/**
 * GET /connect starts the platform's login with a single-use, expiring state; GET /callback
 * checks the state, exchanges the code (single use, one hour), exchanges the short-lived token
 * for a long-lived one (R-TOK-1), stores it and schedules the account's jobs
 * (connect-callback.ts).
 *
 * Who may start a login: by default only the holder of an invitation (`/connect?invite=...`,
 * made in the dashboard or with `feedmirror accounts invite`) or the operator from the
 * dashboard (/dashboard/connect, behind the login). An anonymous /connect gets a page that says
 * how to get an invitation, and writes nothing. CONNECT_OPEN=true restores self-service.
 * Starting a login is rate-limited per client address (each start writes a login state).
 *
 * Every failure is a plain page in our own words: the platform's free text
 * (error_description) is never shown on the operator's domain, where it could pass for ours.
 * The pages carry the operator's brand (src/http/owner-pages.ts); a declined or failed login
 * offers "Try again" through the same door, and the done page says which account was connected
 * and what happens next.
 */
export function invitationUrl(publicUrl: string, token: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/connect?invite=${encodeURIComponent(token)}`;
}

export function connectRoutes(deps: ConnectRoutesDeps): Router {
  const router = Router();
  const flow = connectFlow(deps);
  router.use(
    reconnectRoutes({
      db: deps.db,
      clock: deps.clock,
      logger: deps.logger,
      publicUrl: deps.publicUrl,
      throttle: flow.throttle,
      startLogin: (reconnectHash) => startLogin(deps, { reconnectHash }),
      loginOrigin: new URL(deps.authorizeUrl).origin,
      ...(deps.brand ? { brand: deps.brand } : {}),
    }),
  );
  router.get('/connect', (req: Request, res: Response, next) => {
    connectStart(flow, req, res).catch(next);
  });
  router.get('/callback', callbackRoute(flow));
  return router;
}

/** GET /connect: with an invitation (or CONNECT_OPEN), to the platform's login; otherwise a page saying how. */
async function connectStart(flow: ConnectFlow, req: Request, res: Response): Promise<void> {
  const { deps } = flow;
  const invite = typeof req.query.invite === 'string' ? req.query.invite : undefined;
  if (!deps.open && invite === undefined) {
    // Closed by default: no state is written, nothing is looked up.
    return flow.notice(res, 403, 'An invitation is needed', [
      'Connecting an account to this feedmirror needs an invitation link from its operator.',
      'Ask the operator for one: they create it in the dashboard (Accounts, "Invite an owner") or with the command feedmirror accounts invite, and send it to you. The link works once and expires.',
    ]);
  }
  // Each start writes a login state: bounded per client address.
  const verdict = await flow.throttle.take(req.ip ?? 'unknown');
  if (!verdict.allowed) {
    res.set('Retry-After', String(verdict.retryAfterSeconds));
    return flow.notice(res, 429, 'Too many attempts', [
      `Too many logins were started from your address. Try again in ${Math.ceil(verdict.retryAfterSeconds / 60)} minute(s).`,
    ]);
  }
  let invitationHash: string | undefined;
  if (invite !== undefined && !deps.open) {
    const state = await checkInvitation(deps.db, invite, deps.clock.now());
    if (state !== 'ok')
      return flow.notice(res, 403, 'Invitation not valid', [
        INVITATION_TEXT[state],
        'Ask the operator for a new invitation.',
      ]);
    invitationHash = hashInvitation(invite);
  }
  const url = await startLogin(deps, invitationHash ? { invitationHash } : {});
  res.set('Cache-Control', 'no-store').redirect(302, url);
}
