import type { NextFunction, Request, Response } from 'express';
import type { Queue } from 'bullmq';
import { z } from 'zod';
import type { AccountLifecycle } from '../../accounts/lifecycle.ts';
import type { HealthPolicy } from '../../accounts/health.ts';
import type { InvitationEmailOutcome } from '../../alerts/invitation-email.ts';
import type { OwnerLinkDeps } from '../../alerts/owner-links.ts';
import type { FeedHideOutcome } from '../../feeds/hide.ts';
import type { ConfirmedRemoval } from '../../feeds/removal.ts';
import type { ObjectStorage } from '../../storage/types.ts';
import { getAccount, type Account } from '../../store/accounts.ts';
import type { TokenCipher } from '../../store/crypto.ts';
import type { Db } from '../../store/db.ts';
import type { InvitationOwner } from '../../store/invitations.ts';
import type { Clock } from '../../util/clock.ts';
import type { Logger } from '../../util/logger.ts';
import type { WidgetDeps } from '../../widgets/publish.ts';
import { csrfTokenFor } from '../csrf.ts';
import { FLASH_COOKIE, parseCookies, setCookie } from '../auth/cookies.ts';
import { DASHBOARD_PATH } from '../auth/paths.ts';
import { sessionOf } from '../auth/sessions.ts';
import type { DashboardAuth } from '../auth/settings.ts';
import { signValue, verifyValue } from '../auth/signing.ts';
import { accountNotFoundPage } from './account-views.ts';
import { RETURN_FIELD } from './health-views.ts';
import { FLASH_KINDS, type Flash, type LayoutOptions } from './layout.ts';
import { signedPreviewPath } from './preview-links.ts';

/**
 * What the dashboard's route modules share: its dependencies, and the helpers every page and
 * action uses (the layout's options, the flash message, the account named in the path, the
 * page headers). Each resource registers its routes with this (index.ts composes them).
 */
export interface DashboardQueues {
  tokenRefresh: Queue;
  feedSync: Queue;
  maintenance: Queue;
  mirrorMedia?: Queue;
  publishFeed?: Queue;
  webhooks?: Queue;
}

export interface DashboardDeps {
  auth: DashboardAuth;
  db: Db;
  queues: DashboardQueues;
  /** Removing an account (its schedules stop first). */
  lifecycle: Pick<AccountLifecycle, 'apply'>;
  /** Used to tell whether feeds carry addresses a browser can load (local storage without MEDIA_PUBLIC_URL cannot). */
  storage?: ObjectStorage;
  clock: Clock;
  logger: Logger;
  /** Connecting accounts (APP_ID/APP_SECRET set); omitted: the dashboard offers no connect. */
  connect?: DashboardConnect;
  /** APP_ID, the default app's id, for the apps page (undefined: not set). */
  defaultAppId?: string;
  /** Webhook endpoints (add, rotate, remove, delivery log); omitted: no webhooks page. */
  webhooks?: { cipher: TokenCipher; allowPrivate: boolean };
  /** Confirming a held removal (src/feeds/removal.ts confirmHeldRemoval); omitted: the CLI only. */
  removals?: { confirm(accountId: string): Promise<ConfirmedRemoval | null> };
  /** SYNC_INTERVAL_MINUTES in ms: when an account's feed counts as stale (its health); default 60 min. */
  syncIntervalMs?: number;
  /** R-MED-13: the pinned API version and the warning lead, for every account's health. */
  apiVersion?: { version: string; warnDays: number };
  /** Widgets (create, edit, preview, hide, delete): published with these; omitted: no widgets page. */
  widgets?: WidgetDeps;
  /** Hiding a post from its account's feed (src/feeds/hide.ts, R-OWN-17); omitted: the CLI only. */
  feedHides?: FeedHides;
  /** OWNER_ALERTS: the account page says whether its owner gets alerts. */
  ownerAlertsOn?: boolean;
  /** New reconnect links from the page of an account waiting for its owner (emailed, or shown to copy); omitted: none. */
  ownerLinks?: OwnerLinkDeps;
}

/** src/feeds/hide.ts with the server's feed dependencies (the same calls as `feedmirror feeds hide|unhide`). */
export interface FeedHides {
  hide(accountId: string, postId: string): Promise<FeedHideOutcome>;
  unhide(accountId: string, postId: string): Promise<FeedHideOutcome>;
}

export interface DashboardConnect {
  /** The platform's login address with a fresh login state (the operator connects from here). */
  start(): Promise<string>;
  /**
   * A one-time invitation link for an account owner (carrying the owner's contact when given);
   * with `send`, emailed to that owner (src/alerts/invitation-email.ts), `email` saying how it went.
   */
  invite(
    ttlMs: number,
    owner?: InvitationOwner | null,
    opts?: { send?: boolean; app?: string | null },
  ): Promise<{ url: string; expiresAt: Date; email: InvitationEmailOutcome | null }>;
}

/** An async route handler whose failure reaches the error handlers. */
export type AsyncHandler = (req: Request, res: Response) => Promise<void>;

export interface DashboardContext {
  deps: DashboardDeps;
  wrap(fn: AsyncHandler): (req: Request, res: Response, next: NextFunction) => void;
  /** The layout's options for this request (its CSRF token; the flash, shown once). */
  layoutOf(req: Request, res: Response): LayoutOptions;
  /** An action's outcome: shown once on the page it redirects to (303). */
  flashTo(res: Response, flash: Flash, to?: string): void;
  pageHeaders(res: Response): void;
  /** The account named in the path, or a 404 page (null); ids are checked before any lookup. */
  accountParam(req: Request, res: Response): Promise<Account | null>;
  /** Where an account action's outcome shows: the page its form was on (the account's, or the list). */
  backTo(req: Request, account: { id: string }): string;
  /** R-HLT-1: every page computes health with the same policy. */
  healthPolicy(): HealthPolicy;
  /** What keeps previews and widgets from showing images (storage the browser cannot read). */
  storageWarnings(): string[];
  /** The address the preview's script reads a document at (preview-links.ts). */
  previewPath(path: string, query?: Record<string, string>): string;
}

export const ACCOUNT_ID_RE = /^[A-Za-z0-9_-]{1,128}$/;
/** The most fields a dashboard form sends, a widget's aside (the largest, a webhook's, sends 9). */
export const FORM_MAX_FIELDS = 20;

/** Headers for every dashboard page: not cached, not framed, no script but ours. */
export function pageHeaders(res: Response): void {
  res.set({
    'Cache-Control': 'no-store',
    'X-Frame-Options': 'DENY',
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'same-origin',
    'Content-Security-Policy':
      "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' http: https: data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  });
}

const flashSchema = z.object({ kind: z.enum(FLASH_KINDS), text: z.string().max(500) });

const wrap =
  (fn: AsyncHandler) =>
  (req: Request, res: Response, next: NextFunction): void => {
    fn(req, res).catch(next);
  };

export function dashboardContext(deps: DashboardDeps): DashboardContext {
  const { auth, db, clock } = deps;
  /** The flash set by the last action, shown once. */
  const takeFlash = (req: Request, res: Response): Flash | undefined => {
    const raw = parseCookies(req.headers.cookie)[FLASH_COOKIE];
    if (!raw) return undefined;
    setCookie(res, auth, FLASH_COOKIE, '', 0);
    const parsed = flashSchema.safeParse(verifyValue(auth.sessionKey, 'flash', raw));
    return parsed.success ? parsed.data : undefined;
  };
  const layoutOf = (req: Request, res: Response): LayoutOptions => ({
    csrf: csrfTokenFor(auth.sessionKey, sessionOf(res).sid),
    flash: takeFlash(req, res),
    mode: auth.mode,
    user: auth.user,
    connectUrl: deps.connect ? `${DASHBOARD_PATH}/connect` : undefined,
  });
  return {
    deps,
    wrap,
    layoutOf,
    pageHeaders,
    flashTo: (res, flash, to = DASHBOARD_PATH) => {
      setCookie(res, auth, FLASH_COOKIE, signValue(auth.sessionKey, 'flash', flash), 60_000);
      res.redirect(303, to);
    },
    accountParam: async (req, res) => {
      const id = String(req.params.id ?? '');
      const account = ACCOUNT_ID_RE.test(id) ? await getAccount(db, id) : null;
      if (!account) {
        pageHeaders(res);
        res
          .status(404)
          .type('html')
          .send(accountNotFoundPage(id, layoutOf(req, res)));
        return null;
      }
      return account;
    },
    backTo: (req, account) =>
      (req.body as Record<string, unknown>)[RETURN_FIELD] === 'account'
        ? `${DASHBOARD_PATH}/accounts/${encodeURIComponent(account.id)}`
        : DASHBOARD_PATH,
    healthPolicy: () => ({
      now: clock.now(),
      syncIntervalMs: deps.syncIntervalMs ?? 60 * 60_000,
      ...(deps.apiVersion ? { apiVersion: deps.apiVersion } : {}),
    }),
    storageWarnings: () => storageWarnings(deps.storage),
    previewPath: (path, query) => signedPreviewPath(auth.sessionKey, path, query),
  };
}

function storageWarnings(storage: ObjectStorage | undefined): string[] {
  if (!storage) return [];
  let sample: string;
  try {
    sample = storage.publicUrl('widget/feedmirror-widget.js');
  } catch {
    return [];
  }
  return /^https?:\/\//.test(sample)
    ? []
    : [
        'Mirrored images are published with file:// addresses, which no browser loads from a web page. Set MEDIA_PUBLIC_URL (for local storage served by this server: MEDIA_PUBLIC_URL = PUBLIC_URL) and sync again.',
      ];
}
