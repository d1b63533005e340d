import type { Response } from 'express';
import type { ConnectDeps, ConnectedAccount } from '../accounts/connect.ts';
import { SCOPE } from '../platform/identifiers.ts';
import { invitationApp, stateOfHash, type InvitationState } from '../store/invitations.ts';
import { appOfAccount, requireApp } from '../store/apps.ts';
import { createLoginState } from '../store/login-states.ts';
import { getReconnectLinkByHash, linkState, type ReconnectLinkState } from '../store/owners.ts';
import type { Brand } from '../util/brand.ts';
import { MINUTE } from '../util/clock.ts';
import { renderOwnerPage } from './owner-pages.ts';
import { refusedLinkPage } from './reconnect.ts';
import { ConnectThrottle } from './throttle.ts';

/**
 * What the connect routes (connect.ts) and the callback (connect-callback.ts) share: their
 * dependencies, the one place login states are made, and the pages an owner sees on the way
 * (owner-pages.ts, in the operator's brand), with the "Try again" link each failure offers.
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

/** The app of the account a reconnect link is bound to. */
async function reconnectApp(db: ConnectRoutesDeps['db'], reconnectHash: string): Promise<string | null> {
  const link = await getReconnectLinkByHash(db, reconnectHash);
  return link ? appOfAccount(db, link.accountId) : null;
}

export function redirectUri(publicUrl: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/callback`;
}

/** The platform's authorize address with a fresh login state (the one place states are made). */
export async function startLogin(
  deps: ConnectRoutesDeps,
  opts: { invitationHash?: string; reconnectHash?: string } = {},
): Promise<string> {
  // The login goes to the app of the invitation, or of the reconnect link's account; the state
  // remembers it, so the one callback knows whose code it gets.
  const app = opts.invitationHash
    ? await invitationApp(deps.db, opts.invitationHash)
    : opts.reconnectHash
      ? await reconnectApp(deps.db, opts.reconnectHash)
      : null;
  const clientId = app ? (await requireApp(deps.db, app)).appId : deps.appId;
  const state = await createLoginState(deps.db, deps.clock.now(), deps.stateTtlMs ?? 15 * MINUTE, {
    invitationHash: opts.invitationHash ?? null,
    reconnectHash: opts.reconnectHash ?? null,
    app,
  });
  const url = new URL(deps.authorizeUrl);
  url.searchParams.set('client_id', clientId);
  url.searchParams.set('redirect_uri', redirectUri(deps.publicUrl));
  url.searchParams.set('scope', SCOPE); // R-TOK-12: never the deprecated business_basic
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('state', state);
  return url.toString();
}

/** What an owner does after a failed login through their reconnect link. */
export const RECONNECT_AGAIN = 'Open the link from your email again and press Reconnect.';

export const INVITATION_TEXT: Record<Exclude<InvitationState, 'ok'>, string> = {
  unknown: 'This invitation link is not valid here. Check that you copied the whole link.',
  expired: 'This invitation has expired.',
  used: 'This invitation was already used to connect an account. Each invitation works once.',
};

export interface ConnectFlow {
  deps: ConnectRoutesDeps;
  throttle: ConnectThrottle;
  /** What to do after a failed login that came without a reconnect link. */
  again: string;
  /** An owner page (a complete document) with its status, never cached. */
  page(res: Response, status: number, doc: string): void;
  /** The notice page: a title, lines of our own words, and "Try again" when there is a way. */
  notice(res: Response, status: number, title: string, lines: string[], retryUrl?: string): void;
  /** Where "Try again" leads after a login that did not connect (undefined: nowhere). */
  retryUrlFor(invitationHash: string | null, reconnectHash?: string | null): Promise<string | undefined>;
  /** The page of a reconnect link that does not work (404 unknown, 410 the rest). */
  linkRefused(res: Response, state: Exclude<ReconnectLinkState, 'ok'>): void;
}

export function connectFlow(deps: ConnectRoutesDeps): ConnectFlow {
  const base = deps.publicUrl.replace(/\/+$/, '');
  const page = (res: Response, status: number, doc: string) => {
    res.status(status).set('Cache-Control', 'no-store').type('html').send(doc);
  };
  return {
    deps,
    throttle: deps.throttle ?? new ConnectThrottle({ prefix: 'local' }),
    again: deps.open
      ? 'Start again from the connect link.'
      : 'Open your invitation link again, or ask the operator for a new one.',
    page,
    notice: (res, status, title, lines, retryUrl) =>
      page(res, status, renderOwnerPage('notice', { title, lines, retryUrl, brand: deps.brand })),
    /**
     * The same door the login came through. An invitation is never used up by a declined or
     * failed login, but only its hash is stored, so its link cannot be rebuilt: a fresh
     * single-use login state bound to the same invitation leads straight back to the platform's
     * login (and the invitation is still taken only by a login that connects). The operator's
     * own login goes back through the dashboard (behind its session); with CONNECT_OPEN,
     * /connect. No link for a spent or expired invitation.
     */
    retryUrlFor: async (invitationHash, reconnectHash = null) => {
      if (reconnectHash) {
        // An owner's reconnect link: a fresh login bound to the same link, while it still works.
        const link = await getReconnectLinkByHash(deps.db, reconnectHash);
        return linkState(link, deps.clock.now()) === 'ok' ? startLogin(deps, { reconnectHash }) : undefined;
      }
      if (deps.open) return `${base}/connect`;
      if (!invitationHash) return `${base}/dashboard/connect`;
      if ((await stateOfHash(deps.db, invitationHash, deps.clock.now())) !== 'ok') return undefined;
      return startLogin(deps, { invitationHash });
    },
    linkRefused: (res, state) => {
      res
        .set('Referrer-Policy', 'no-referrer')
        .status(state === 'unknown' ? 404 : 410)
        .set('Cache-Control', 'no-store')
        .type('html')
        .send(refusedLinkPage(state, deps.brand));
    },
  };
}
