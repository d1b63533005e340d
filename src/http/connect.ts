import { Router, type Request, type Response } from 'express';
import type { ConnectDeps, ConnectedAccount } from '../accounts/connect.ts';
import { connectWithShortLivedToken, WrongAccountError } from '../accounts/connect.ts';
import { getAccount } from '../store/accounts.ts';
import {
  getReconnectLinkByHash,
  linkState,
  releaseReconnectLink,
  takeReconnectLink,
  type ReconnectLinkState,
} from '../store/owners.ts';
import { reconnectRoutes, refusedLinkPage } from './reconnect.ts';
import { createLoginState, takeLoginState } from '../store/login-states.ts';
import {
  checkInvitation,
  hashInvitation,
  invitationOwner,
  releaseInvitation,
  stateOfHash,
  takeInvitation,
  type InvitationState,
} from '../store/invitations.ts';
import { SCOPE } from '../platform/identifiers.ts';
import {
  InsufficientDeveloperRoleError,
  MissingScopeError,
  PersonalAccountError,
  PlatformError,
} from '../platform/errors.ts';
import { MINUTE } from '../util/clock.ts';
import { renderOwnerPage } from './owner-pages.ts';
import type { Brand } from '../util/brand.ts';
import { ConnectThrottle } from './throttle.ts';

/**
 * GET /connect starts the platform's login with a single-use, expiring state; GET /callback
 * checks the state, exchanges the code (single use, one hour), exchanges the short-lived token
 * for a long-lived one (R-TOK-1), stores it and schedules the account's jobs.
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
export interface ConnectRoutesDeps extends ConnectDeps {
  appId: string;
  authorizeUrl: string;
  publicUrl: string;
  /** After the account is stored, active and scheduled (deps.lifecycle). */
  onConnected?: (account: ConnectedAccount) => Promise<void>;
  stateTtlMs?: number;
  /** CONNECT_OPEN: anyone may start a login (no invitation needed). */
  open?: boolean;
  /** Per-client limit on starting logins (Redis-backed in serve); default: this process, 10 a minute. */
  throttle?: ConnectThrottle;
  /** BRAND_*: the look of the pages an owner sees. */
  brand?: Brand;
  /** The address of an account's published feed, named on the done page. */
  feedUrl?: (accountId: string) => string;
}

export function redirectUri(publicUrl: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/callback`;
}

export function invitationUrl(publicUrl: string, token: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/connect?invite=${encodeURIComponent(token)}`;
}

/** The platform's authorize address with a fresh login state (the one place states are made). */
export async function startLogin(
  deps: ConnectRoutesDeps,
  opts: { invitationHash?: string; reconnectHash?: string } = {},
): Promise<string> {
  const state = await createLoginState(deps.db, deps.clock.now(), deps.stateTtlMs ?? 15 * MINUTE, {
    invitationHash: opts.invitationHash ?? null,
    reconnectHash: opts.reconnectHash ?? null,
  });
  const url = new URL(deps.authorizeUrl);
  url.searchParams.set('client_id', deps.appId);
  url.searchParams.set('redirect_uri', redirectUri(deps.publicUrl));
  url.searchParams.set('scope', SCOPE); // R-TOK-12: never the deprecated business_basic
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('state', state);
  return url.toString();
}

/** What an owner does after a failed login through their reconnect link. */
const RECONNECT_AGAIN = 'Open the link from your email again and press Reconnect.';

const INVITATION_TEXT: Record<Exclude<InvitationState, 'ok'>, string> = {
  unknown: 'This invitation link is not valid here. Check that you copied the whole link.',
  expired: 'This invitation has expired.',
  used: 'This invitation was already used to connect an account. Each invitation works once.',
};

export function connectRoutes(deps: ConnectRoutesDeps): Router {
  const router = Router();
  const throttle = deps.throttle ?? new ConnectThrottle({ prefix: 'local' });
  const base = deps.publicUrl.replace(/\/+$/, '');
  const html = (res: Response, status: number, doc: string) =>
    res.status(status).set('Cache-Control', 'no-store').type('html').send(doc);
  const send = (res: Response, status: number, title: string, lines: string[], retryUrl?: string) =>
    html(res, status, renderOwnerPage('notice', { title, lines, retryUrl, brand: deps.brand }));

  /**
   * Where "Try again" leads after a login that did not connect: the same door the login came
   * through. An invitation is never used up by a declined or failed login, but only its hash is
   * stored, so its link cannot be rebuilt: a fresh single-use login state bound to the same
   * invitation leads straight back to the platform's login (and the invitation is still taken
   * only by a login that connects). The operator's own login goes back through the dashboard
   * (behind its session); with CONNECT_OPEN, /connect. No link for a spent or expired invitation.
   */
  async function retryUrlFor(
    invitationHash: string | null,
    reconnectHash: string | null = null,
  ): Promise<string | undefined> {
    if (reconnectHash) {
      // An owner's reconnect link: a fresh login bound to the same link, while it still works.
      const link = await getReconnectLinkByHash(deps.db, reconnectHash);
      return linkState(link, deps.clock.now()) === 'ok' ? startLogin(deps, { reconnectHash }) : undefined;
    }
    if (deps.open) return `${base}/connect`;
    if (!invitationHash) return `${base}/dashboard/connect`;
    if ((await stateOfHash(deps.db, invitationHash, deps.clock.now())) !== 'ok') return undefined;
    return startLogin(deps, { invitationHash });
  }

  router.use(
    reconnectRoutes({
      db: deps.db,
      clock: deps.clock,
      logger: deps.logger,
      publicUrl: deps.publicUrl,
      throttle,
      startLogin: (reconnectHash) => startLogin(deps, { reconnectHash }),
      loginOrigin: new URL(deps.authorizeUrl).origin,
      ...(deps.brand ? { brand: deps.brand } : {}),
    }),
  );

  router.get('/connect', async (req: Request, res: Response, next) => {
    try {
      const invite = typeof req.query.invite === 'string' ? req.query.invite : undefined;
      if (!deps.open && invite === undefined) {
        // Closed by default: no state is written, nothing is looked up.
        return send(res, 403, 'An invitation is needed', [
          'Connecting an account to this feedmirror needs an invitation link from its operator.',
          'Ask the operator for one: they create it in the dashboard (Accounts, "Invite an owner") or with the command feedmirror accounts invite, and send it to you. The link works once and expires.',
        ]);
      }
      // Each start writes a login state: bounded per client address.
      const verdict = await throttle.take(req.ip ?? 'unknown');
      if (!verdict.allowed) {
        res.set('Retry-After', String(verdict.retryAfterSeconds));
        return send(res, 429, 'Too many attempts', [
          `Too many logins were started from your address. Try again in ${Math.ceil(verdict.retryAfterSeconds / 60)} minute(s).`,
        ]);
      }
      let invitationHash: string | undefined;
      if (invite !== undefined && !deps.open) {
        const state = await checkInvitation(deps.db, invite, deps.clock.now());
        if (state !== 'ok')
          return send(res, 403, 'Invitation not valid', [
            INVITATION_TEXT[state],
            'Ask the operator for a new invitation.',
          ]);
        invitationHash = hashInvitation(invite);
      }
      const url = await startLogin(deps, invitationHash ? { invitationHash } : {});
      res.set('Cache-Control', 'no-store').redirect(302, url);
    } catch (err) {
      next(err);
    }
  });

  router.get('/callback', async (req: Request, res: Response, next) => {
    try {
      await callback(req, res);
    } catch (err) {
      next(err);
    }
  });

  async function callback(req: Request, res: Response): Promise<void> {
    const q = req.query as Record<string, unknown>;
    const str = (k: string) => (typeof q[k] === 'string' ? (q[k] as string) : undefined);
    const fail = (status: number, title: string, ...lines: string[]) => void send(res, status, title, lines);

    const again = deps.open
      ? 'Start again from the connect link.'
      : 'Open your invitation link again, or ask the operator for a new one.';

    const state = str('state');
    if (!state)
      return fail(
        400,
        'Login could not be checked',
        'The platform sent no state with the login, so it cannot be matched to a connect request.',
        again,
      );
    const now = deps.clock.now();
    const taken = await takeLoginState(deps.db, state, now);
    if (taken.result !== 'ok') {
      const why = {
        unknown: 'This login does not match any connect request made here (a forged or foreign link).',
        used: 'This login link was already used. Each login can be used once.',
        expired: 'This login took too long and its request expired.',
      }[taken.result];
      if (taken.reconnectHash) return usedOrLateReconnectLogin(res, why, taken.reconnectHash);
      if (taken.invitationHash) return usedOrLateInvitationLogin(res, why, taken.invitationHash);
      return fail(400, 'Login link not valid', why, again);
    }
    const failWithRetry = async (status: number, title: string, ...lines: string[]) =>
      void send(res, status, title, lines, await retryUrlFor(taken.invitationHash, taken.reconnectHash));
    const error = str('error');
    if (error) {
      // Fixed texts only: error_description is the platform's (or an attacker's) free text.
      const declined = str('error_reason') === 'user_denied' || error === 'access_denied';
      return void html(
        res,
        403,
        renderOwnerPage('declined', {
          lines: [
            declined
              ? 'The login was cancelled or the permission was declined.'
              : 'The platform did not complete the login.',
            `Nothing was connected. To connect, log in again and approve the ${SCOPE} permission: it lets this service read your posts to show them on a website, nothing else.`,
          ],
          retryUrl: await retryUrlFor(taken.invitationHash, taken.reconnectHash),
          brand: deps.brand,
        }),
      );
    }
    const code = str('code');
    if (!code) return fail(400, 'Login incomplete', 'The platform sent neither a code nor an error.', again);

    // The invitation (or the owner's reconnect link) is taken before anything is connected (two
    // callbacks: one wins), and given back if the connection then fails.
    const invitation = taken.invitationHash;
    if (invitation) {
      const inv = await takeInvitation(deps.db, invitation, now);
      if (inv !== 'ok')
        return fail(403, 'Invitation not valid', INVITATION_TEXT[inv], 'Ask the operator for a new invitation.');
    }
    const reconnect = taken.reconnectHash ? await getReconnectLinkByHash(deps.db, taken.reconnectHash) : null;
    if (taken.reconnectHash) {
      const state = reconnect ? await takeReconnectLink(deps.db, taken.reconnectHash, now) : 'unknown';
      if (state !== 'ok' || !reconnect) return linkRefused(res, state === 'ok' ? 'unknown' : state);
    }
    const giveBack = async () => {
      if (invitation)
        await releaseInvitation(deps.db, invitation, now).catch((e: unknown) =>
          deps.logger.warn({ err: e }, 'could not give the invitation back'),
        );
      if (reconnect)
        await releaseReconnectLink(deps.db, reconnect.hash, now).catch((e: unknown) =>
          deps.logger.warn({ err: e }, 'could not give the reconnect link back'),
        );
    };
    try {
      const short = await deps.platform.exchangeCode(code, redirectUri(deps.publicUrl));
      // R-OWN-13: a reconnect link's login connects its own account or nothing. The code's user
      // id is checked before the token is exchanged; the profile is checked again before storing.
      if (reconnect && short.userId && short.userId !== reconnect.accountId)
        throw new WrongAccountError(reconnect.accountId, short.userId);
      const owner = invitation ? await invitationOwner(deps.db, invitation) : null;
      // Stored and committed, then scheduled (src/accounts/connect.ts); one "account connected" line.
      const account = await connectWithShortLivedToken(deps, short.accessToken, {
        permissions: short.permissions,
        via: reconnect ? 'reconnect_link' : invitation ? 'invitation' : 'login',
        ...(reconnect ? { expectedAccountId: reconnect.accountId } : {}),
        ...(owner ? { owner } : {}),
      });
      await deps.onConnected?.(account);
      html(
        res,
        200,
        renderOwnerPage('done', {
          username: account.username,
          expiresAt: account.expiresAt,
          scheduled: account.scheduled,
          feedUrl: deps.feedUrl?.(account.id),
          reconnected: reconnect !== null,
          brand: deps.brand,
        }),
      );
    } catch (err) {
      await giveBack();
      if (err instanceof WrongAccountError && reconnect) {
        deps.logger.warn(
          { accountId: reconnect.accountId, otherAccountId: err.actualId },
          'reconnect link: the login was for another account; nothing stored',
        );
        const expected = await getAccount(deps.db, reconnect.accountId);
        const retryUrl = await retryUrlFor(null, reconnect.hash);
        html(
          res,
          403,
          renderOwnerPage('wrong-account', {
            ...(expected ? { expectedUsername: expected.username } : {}),
            retryUrl,
            brand: deps.brand,
          }),
        );
        return;
      }
      deps.logger.warn({ err }, 'connect failed');
      if (err instanceof PersonalAccountError)
        return failWithRetry(
          400,
          'Account not connected',
          'This is a personal account. Only professional accounts (Business or Creator) can be connected: switch the account type in the app, then connect again.',
        );
      if (err instanceof MissingScopeError)
        return failWithRetry(
          400,
          'Account not connected',
          `The login did not grant the ${SCOPE} permission. Connect again and leave it ticked on the approval screen.`,
        );
      if (err instanceof InsufficientDeveloperRoleError)
        return failWithRetry(
          400,
          'Account not connected',
          'The app is in development mode and this account has not accepted its tester role. Accept it in the app (settings, "Apps and websites"), then connect again.',
        );
      if (err instanceof PlatformError && (err.code === 100 || err.status === 400)) {
        return failWithRetry(
          400,
          'Login expired',
          'The login code was already used or has expired (codes live one hour and work once).',
          reconnect ? RECONNECT_AGAIN : again,
        );
      }
      return failWithRetry(
        502,
        'Account not connected',
        'The platform could not be reached or answered unexpectedly. Try again in a few minutes.',
      );
    }
  }
  /**
   * A used or expired login state of an owner's reconnect link: the owner reloaded the page the
   * login ended on (the done page too), or took too long on the platform. Where to go depends on
   * the link: still open, a fresh login bound to it; used, the account was reconnected (a link is
   * used only by a login that reconnects its account); otherwise the link's own page.
   */
  async function usedOrLateReconnectLogin(res: Response, why: string, reconnectHash: string): Promise<void> {
    const state = linkState(await getReconnectLinkByHash(deps.db, reconnectHash), deps.clock.now());
    if (state === 'ok')
      return void send(
        res,
        400,
        'Login link not valid',
        [why, 'Press Try again to log in once more, or open the link from your email again.'],
        await startLogin(deps, { reconnectHash }),
      );
    if (state === 'used')
      return void send(res, 400, 'Nothing more to do', [
        why,
        'The reconnect link from your email has been used: the account was reconnected, and its feed updates by itself.',
      ]);
    linkRefused(res, state);
  }

  /** The same for a login started from an invitation (taken only by a login that connects). */
  async function usedOrLateInvitationLogin(res: Response, why: string, invitationHash: string): Promise<void> {
    const state = await stateOfHash(deps.db, invitationHash, deps.clock.now());
    if (state === 'ok')
      return void send(
        res,
        400,
        'Login link not valid',
        [why, 'Press Try again to log in once more, or open your invitation link again.'],
        await startLogin(deps, { invitationHash }),
      );
    if (state === 'used')
      return void send(res, 400, 'Nothing more to do', [
        why,
        'The invitation has been used: the account was connected, and its feed updates by itself.',
      ]);
    send(res, 403, 'Invitation not valid', [INVITATION_TEXT[state], 'Ask the operator for a new invitation.']);
  }

  function linkRefused(res: Response, state: Exclude<ReconnectLinkState, 'ok'>): void {
    res
      .set('Referrer-Policy', 'no-referrer')
      .status(state === 'unknown' ? 404 : 410)
      .set('Cache-Control', 'no-store')
      .type('html')
      .send(refusedLinkPage(state, deps.brand));
  }
  return router;
}
