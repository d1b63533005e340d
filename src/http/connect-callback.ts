import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { AppFaultError, appFailure, connectWithShortLivedToken, WrongAccountError } from '../accounts/connect.ts';
import { exchangeClient } from '../accounts/apps.ts';
import {
  InsufficientDeveloperRoleError,
  MissingScopeError,
  PersonalAccountError,
  PlatformError,
} from '../platform/errors.ts';
import { SCOPE } from '../platform/identifiers.ts';
import { getAccount } from '../store/accounts.ts';
import { invitationOwner, releaseInvitation, stateOfHash, takeInvitation } from '../store/invitations.ts';
import { takeLoginState } from '../store/login-states.ts';
import {
  getReconnectLinkByHash,
  linkState,
  releaseReconnectLink,
  takeReconnectLink,
  type ReconnectLink,
} from '../store/owners.ts';
import { INVITATION_TEXT, RECONNECT_AGAIN, redirectUri, startLogin, type ConnectFlow } from './connect-flow.ts';
import { renderOwnerPage } from './owner-pages.ts';

/**
 * GET /callback: the platform's answer to a login. The state is checked and used up; a declined
 * login says so; a code takes the invitation (or the owner's reconnect link) before anything is
 * connected (two callbacks: one wins), is exchanged (R-TOK-1) and the account stored and
 * scheduled; a failure gives them back and says what to do in our own words.
 */
export function callbackRoute(flow: ConnectFlow): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    callback(flow, req, res).catch(next);
  };
}

/** A login state already used or expired, or none. */
const LOGIN_STATE_TEXT = {
  unknown: 'This login does not match any connect request made here (a forged or foreign link).',
  used: 'This login link was already used. Each login can be used once.',
  expired: 'This login took too long and its request expired.',
};

async function callback(flow: ConnectFlow, req: Request, res: Response): Promise<void> {
  const { deps, again } = flow;
  const q = req.query as Record<string, unknown>;
  const str = (k: string) => (typeof q[k] === 'string' ? q[k] : undefined);
  const fail = (status: number, title: string, ...lines: string[]) => flow.notice(res, status, title, lines);

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
    const why = LOGIN_STATE_TEXT[taken.result];
    if (taken.reconnectHash) return usedOrLateReconnectLogin(flow, res, why, taken.reconnectHash);
    if (taken.invitationHash) return usedOrLateInvitationLogin(flow, res, why, taken.invitationHash);
    return fail(400, 'Login link not valid', why, again);
  }
  const error = str('error');
  if (error) {
    // Fixed texts only: error_description is the platform's (or an attacker's) free text.
    const declined = str('error_reason') === 'user_denied' || error === 'access_denied';
    return flow.page(
      res,
      403,
      renderOwnerPage('declined', {
        lines: [
          declined
            ? 'The login was cancelled or the permission was declined.'
            : 'The platform did not complete the login.',
          `Nothing was connected. To connect, log in again and approve the ${SCOPE} permission: it lets this service read your posts to show them on a website, nothing else.`,
        ],
        retryUrl: await flow.retryUrlFor(taken.invitationHash, taken.reconnectHash),
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
    const linkTaken = reconnect ? await takeReconnectLink(deps.db, taken.reconnectHash, now) : 'unknown';
    if (linkTaken !== 'ok' || !reconnect) return flow.linkRefused(res, linkTaken === 'ok' ? 'unknown' : linkTaken);
  }
  try {
    await connectAccount(flow, res, code, invitation, reconnect, taken.app);
  } catch (err) {
    await giveBack(flow, now, invitation, reconnect);
    await connectFailed(flow, res, err, taken, reconnect);
  }
}

/** The code exchanged, the account stored and scheduled, and the done page. */
async function connectAccount(
  flow: ConnectFlow,
  res: Response,
  code: string,
  invitation: string | null,
  reconnect: ReconnectLink | null,
  app: string | null,
): Promise<void> {
  const { deps } = flow;
  // The app the login was started with (its state says): its id and secret exchange the code.
  const client = await exchangeClient(deps, app);
  let short;
  try {
    short = await client.exchangeCode(code, redirectUri(deps.publicUrl));
  } catch (err) {
    throw await appFailure(deps, app, err);
  }
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
    app,
  });
  await deps.onConnected?.(account);
  flow.page(
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
}

/** A failed connection gives back what it took: the invitation, the owner's link. */
async function giveBack(
  flow: ConnectFlow,
  now: Date,
  invitation: string | null,
  reconnect: ReconnectLink | null,
): Promise<void> {
  const { deps } = flow;
  if (invitation)
    await releaseInvitation(deps.db, invitation, now).catch((e: unknown) =>
      deps.logger.warn({ err: e }, 'could not give the invitation back'),
    );
  if (reconnect)
    await releaseReconnectLink(deps.db, reconnect.hash, now).catch((e: unknown) =>
      deps.logger.warn({ err: e }, 'could not give the reconnect link back'),
    );
}

/** Why the connection failed, in the owner's words, with "Try again" through the same door. */
async function connectFailed(
  flow: ConnectFlow,
  res: Response,
  err: unknown,
  taken: { invitationHash: string | null; reconnectHash: string | null },
  reconnect: ReconnectLink | null,
): Promise<void> {
  const { deps } = flow;
  if (err instanceof WrongAccountError && reconnect) {
    deps.logger.warn(
      { accountId: reconnect.accountId, otherAccountId: err.actualId },
      'reconnect link: the login was for another account; nothing stored',
    );
    const expected = await getAccount(deps.db, reconnect.accountId);
    const retryUrl = await flow.retryUrlFor(null, reconnect.hash);
    return flow.page(
      res,
      403,
      renderOwnerPage('wrong-account', {
        ...(expected ? { expectedUsername: expected.username } : {}),
        retryUrl,
        brand: deps.brand,
      }),
    );
  }
  deps.logger.warn({ err }, 'connect failed');
  if (err instanceof AppFaultError)
    // The operator's app, not the owner: nothing they can do but wait for the operator (who is
    // alerted naming the app); no Try again until it is fixed. The page never names the secret.
    return flow.notice(res, 503, 'Account not connected', [
      'The service this link belongs to cannot connect accounts right now: its operator has to fix its platform app. They have been told.',
      'Nothing was connected. Open the link again later, or ask the operator when it works again.',
    ]);
  const failWithRetry = async (status: number, title: string, ...lines: string[]) =>
    flow.notice(res, status, title, lines, await flow.retryUrlFor(taken.invitationHash, taken.reconnectHash));
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
  if (err instanceof PlatformError && (err.code === 100 || err.status === 400))
    return failWithRetry(
      400,
      'Login expired',
      'The login code was already used or has expired (codes live one hour and work once).',
      reconnect ? RECONNECT_AGAIN : flow.again,
    );
  return failWithRetry(
    502,
    'Account not connected',
    'The platform could not be reached or answered unexpectedly. Try again in a few minutes.',
  );
}

/**
 * A used or expired login state of an owner's reconnect link: the owner reloaded the page the
 * login ended on (the done page too), or took too long on the platform. Where to go depends on
 * the link: still open, a fresh login bound to it; used, the account was reconnected (a link is
 * used only by a login that reconnects its account); otherwise the link's own page.
 */
async function usedOrLateReconnectLogin(
  flow: ConnectFlow,
  res: Response,
  why: string,
  reconnectHash: string,
): Promise<void> {
  const { deps } = flow;
  const state = linkState(await getReconnectLinkByHash(deps.db, reconnectHash), deps.clock.now());
  if (state === 'ok')
    return flow.notice(
      res,
      400,
      'Login link not valid',
      [why, 'Press Try again to log in once more, or open the link from your email again.'],
      await startLogin(deps, { reconnectHash }),
    );
  if (state === 'used')
    return flow.notice(res, 400, 'Nothing more to do', [
      why,
      'The reconnect link from your email has been used: the account was reconnected, and its feed updates by itself.',
    ]);
  flow.linkRefused(res, state);
}

/** The same for a login started from an invitation (taken only by a login that connects). */
async function usedOrLateInvitationLogin(
  flow: ConnectFlow,
  res: Response,
  why: string,
  invitationHash: string,
): Promise<void> {
  const { deps } = flow;
  const state = await stateOfHash(deps.db, invitationHash, deps.clock.now());
  if (state === 'ok')
    return flow.notice(
      res,
      400,
      'Login link not valid',
      [why, 'Press Try again to log in once more, or open your invitation link again.'],
      await startLogin(deps, { invitationHash }),
    );
  if (state === 'used')
    return flow.notice(res, 400, 'Nothing more to do', [
      why,
      'The invitation has been used: the account was connected, and its feed updates by itself.',
    ]);
  flow.notice(res, 403, 'Invitation not valid', [INVITATION_TEXT[state], 'Ask the operator for a new invitation.']);
}
