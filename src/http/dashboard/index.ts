import express, { Router, type NextFunction, type Request, type Response } from 'express';
import type { Queue } from 'bullmq';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { z } from 'zod';
import { JOBS, enqueue, manualJobId } from '../../../jobs/catalogue.ts';
import { requestSync } from '../../../jobs/sync-requests.ts';
import type { AccountLifecycle } from '../../accounts/lifecycle.ts';
import type { ConfirmedRemoval } from '../../feeds/removal.ts';
import { getAccount, listSyncRuns } from '../../store/accounts.ts';
import { loadAccountHealth } from '../../accounts/health.ts';
import { listCopyFailures } from '../../store/copy-failures.ts';
import { getRemovalHold } from '../../store/holds.ts';
import { clearOwner, setOwner } from '../../store/owners.ts';
import { listInvitations, type InvitationOwner } from '../../store/invitations.ts';
import type { InvitationEmailOutcome } from '../../alerts/invitation-email.ts';
import { firstIssue, ownerInputSchema } from '../../accounts/owner-contact.ts';
import { accountCopyTotals, listAccountDeliveries, listAccountEvents } from '../../store/health-facts.ts';
import { accountNotFoundPage, accountPage, reconnectLinkPage } from './account-views.ts';
import { emailOwnerLink, makeOwnerLink, OwnerLinkRefused, type OwnerLinkDeps } from '../../alerts/owner-links.ts';
import { latestReconnectLinks } from '../../store/owners.ts';
import type { Db } from '../../store/db.ts';
import type { ObjectStorage } from '../../storage/types.ts';
import type { Clock } from '../../util/clock.ts';
import type { Logger } from '../../util/logger.ts';
import { redactText } from '../../util/redact.ts';
import { widgetSource, WIDGET_CONTENT_TYPE } from '../../widget/index.ts';
import { FLASH_COOKIE, parseCookies, setCookie } from '../auth/cookies.ts';
import { requireSession } from '../auth/middleware.ts';
import { DASHBOARD_PATH } from '../auth/paths.ts';
import { loginRoutes, logoutHandler } from '../auth/routes.ts';
import { sessionOf } from '../auth/sessions.ts';
import type { DashboardAuth } from '../auth/settings.ts';
import { signValue, verifyValue } from '../auth/signing.ts';
import { csrfTokenFor, requireCsrfToken, requireSameOrigin } from '../csrf.ts';
import { loadAccountOverviews } from './data.ts';
import { describeRefreshOutcome, refreshFlashKind } from '../../accounts/refresh-words.ts';
import { FLASH_KINDS, type Flash, type LayoutOptions } from './layout.ts';
import { RETURN_FIELD } from './health-views.ts';
import { accountsPage, removeConfirmPage } from './accounts-views.ts';
import { invitationPage } from './invitations-views.ts';
import { previewPage, PREVIEW_LAYOUTS, PREVIEW_WIDGET_ID, type PreviewLayout } from './preview-views.ts';
import { deliveriesPage, secretPage, webhooksPage } from './webhooks-views.ts';
import type { TokenCipher } from '../../store/crypto.ts';
import { getEndpoint, listDeliveries, listEndpoints, removeEndpoint } from '../../store/webhooks.ts';
import { EndpointInputError, registerEndpoint, rotateSecret } from '../../webhooks/endpoints.ts';
import { buildWidgetDocument, type WidgetDeps } from '../../widgets/publish.ts';
import {
  isWidgetFormPost,
  registerWidgetRoutes,
  widgetPreviewDocument,
  WIDGET_FORM_MAX_FIELDS,
  type FeedHides,
} from './widgets-routes.ts';
import { requirePreviewSignature, signedPreviewPath } from './preview-links.ts';
import { isClientError } from '../errors.ts';

/**
 * The operator dashboard under /dashboard: the accounts page and its actions, the feed preview,
 * and bull-board at /dashboard/queues, all behind the same login (auth.ts) and CSRF checks
 * (csrf.ts).
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
  /** Webhook endpoints (add, rotate, remove, delivery log); omitted: no webhooks page. */
  webhooks?: { cipher: TokenCipher; allowPrivate: boolean };
  /** Confirming a held removal (src/feeds/removal.ts confirmHeldRemoval); omitted: the CLI only. */
  removals?: { confirm(accountId: string): Promise<ConfirmedRemoval | null> };
  /** SYNC_INTERVAL_MINUTES in ms: when an account's feed counts as stale (its health); default 60 min. */
  syncIntervalMs?: number;
  /** Widgets (create, edit, preview, hide, delete): published with these; omitted: no widgets page. */
  widgets?: WidgetDeps;
  /** Hiding a post from its account's feed (src/feeds/hide.ts, R-OWN-17); omitted: the CLI only. */
  feedHides?: FeedHides;
  /** OWNER_ALERTS: the account page says whether its owner gets alerts. */
  ownerAlertsOn?: boolean;
  /** New reconnect links from the page of an account waiting for its owner (emailed, or shown to copy); omitted: none. */
  ownerLinks?: OwnerLinkDeps;
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
    opts?: { send?: boolean },
  ): Promise<{ url: string; expiresAt: Date; email: InvitationEmailOutcome | null }>;
}

const INVITATION_TTLS: Record<string, number> = { '1d': 86_400_000, '7d': 7 * 86_400_000, '30d': 30 * 86_400_000 };

export const BULL_BOARD_PATH = `${DASHBOARD_PATH}/queues`;
const ACCOUNT_ID_RE = /^[A-Za-z0-9_-]{1,128}$/;
/** The most fields a dashboard form sends, a widget's aside (the largest, a webhook's, sends 9). */
export const FORM_MAX_FIELDS = 20;

/** Headers for every dashboard page: not cached, not framed, no script but ours. */
function pageHeaders(res: Response): void {
  res.set({
    'Cache-Control': 'no-store',
    'X-Frame-Options': 'DENY',
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'same-origin',
    'Content-Security-Policy':
      "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' http: https: data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  });
}

/** bull-board with feedmirror's queues; its UI calls its own API under the same base path. */
export function bullBoardRouter(queues: DashboardQueues): express.Express {
  const serverAdapter = new ExpressAdapter().setBasePath(BULL_BOARD_PATH);
  const list = [
    queues.tokenRefresh,
    queues.feedSync,
    queues.mirrorMedia,
    queues.publishFeed,
    queues.maintenance,
    queues.webhooks,
  ].filter((q): q is Queue => q !== undefined);
  createBullBoard({
    queues: list.map((q) => new BullMQAdapter(q)),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'feedmirror queues', miscLinks: [{ text: 'Accounts', url: DASHBOARD_PATH }] } },
  });
  return serverAdapter.getRouter() as express.Express;
}

const previewLayout = (v: unknown): PreviewLayout =>
  (PREVIEW_LAYOUTS as readonly unknown[]).includes(v) ? (v as PreviewLayout) : 'grid';

const flashSchema = z.object({ kind: z.enum(FLASH_KINDS), text: z.string().max(500) });

export function dashboardRouter(deps: DashboardDeps): Router {
  const { auth, db, queues, clock, logger } = deps;
  const router = Router();
  // Every form sends at most 20 fields but a widget's (its settings, a checkbox per post type and
  // per account: WIDGET_FORM_MAX_FIELDS); more is a 413 (docs/security.md).
  const form = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: FORM_MAX_FIELDS });
  const widgetForm = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: WIDGET_FORM_MAX_FIELDS });
  const csrfOf = (res: Response) => csrfTokenFor(auth.sessionKey, sessionOf(res).sid);

  const wrap =
    (fn: (req: Request, res: Response) => Promise<void>) => (req: Request, res: Response, next: NextFunction) => {
      fn(req, res).catch(next);
    };

  router.use(loginRoutes(auth));

  /**
   * The account preview's document: this account alone in a widget with the default options,
   * built by the function that publishes every widget (R-WID-1, R-WID-2), without a views address.
   */
  const accountPreviewDocument = async (req: Request, res: Response) => {
    const id = String(req.params.id ?? '');
    const account = ACCOUNT_ID_RE.test(id) ? await getAccount(db, id) : null;
    if (!account || !deps.storage) {
      res
        .status(404)
        .type('text/plain')
        .send(account ? 'No storage to read the feed from.\n' : 'No such account.\n');
      return;
    }
    const now = clock.now();
    const doc = await buildWidgetDocument(
      { db, storage: deps.storage, clock },
      {
        id: PREVIEW_WIDGET_ID,
        name: `@${account.username}`,
        layout: previewLayout(req.query.layout),
        options: {},
        createdAt: now,
        updatedAt: now,
        accountIds: [account.id],
        hiddenPostIds: [],
        publishedHash: null,
        publishedAt: null,
        publishedAccounts: [],
      },
    );
    res.set('Cache-Control', 'no-store').json(doc);
  };
  // The previews' documents at their signed addresses, for the widget script that sends no
  // cookie (preview-links.ts); unsigned, the same paths need the session (below).
  const previewDocuments = Router();
  previewDocuments.get(
    '/accounts/:id/preview/document.json',
    requirePreviewSignature(auth.sessionKey),
    wrap(accountPreviewDocument),
  );
  if (deps.widgets)
    previewDocuments.get(
      '/widgets/:id/document.json',
      requirePreviewSignature(auth.sessionKey),
      wrap(widgetPreviewDocument(deps.widgets)),
    );
  router.use(DASHBOARD_PATH, previewDocuments);

  // Everything below needs a session (GET /dashboard/login above does not).
  const guarded = Router();
  router.use(DASHBOARD_PATH, requireSession(auth), guarded);

  // bull-board: its UI and its API. Its POST/PUT/DELETE calls (retry, clean, promote...) come from
  // its own fetch calls, which cannot carry our form token: they must come from this origin
  // (Sec-Fetch-Site / Origin), and the SameSite=Strict cookie keeps other sites out as well.
  guarded.use(
    '/queues',
    (_req: Request, res: Response, next: NextFunction) => {
      // Security headers (CSP without inline script, frame-ancestors 'none', nosniff) come from
      // the app-wide helmet (security-headers.ts); bull-board's UI is script files only.
      res.set('Cache-Control', 'no-store');
      // bull-board's page links web fonts on a public CDN: without internet (and under our CSP)
      // that is a failed request in every console. Its page is rendered without the link; the
      // UI falls back to the system fonts.
      const render = res.render.bind(res) as (
        view: string,
        options: object,
        cb: (err: Error | null, html?: string) => void,
      ) => void;
      (res as { render: unknown }).render = (view: string, options: object = {}) =>
        render(view, options, (err, html) => (err ? next(err) : res.type('html').send(stripWebFonts(html ?? ''))));
      next();
    },
    requireSameOrigin(auth.allowedOrigins),
    bullBoardRouter(queues),
  );

  // Our forms: body parsed, then token + origin checked on every POST.
  guarded.use(
    (req: Request, res: Response, next: NextFunction) =>
      (isWidgetFormPost(req.method, req.path) ? widgetForm : form)(req, res, next),
    requireCsrfToken(auth.sessionKey, auth.allowedOrigins, (res) => sessionOf(res).sid),
  );

  const flashTo = (res: Response, flash: Flash, to = DASHBOARD_PATH) => {
    setCookie(res, auth, FLASH_COOKIE, signValue(auth.sessionKey, 'flash', flash), 60_000);
    res.redirect(303, to);
  };
  /** The flash set by the last action, shown once. */
  const takeFlash = (req: Request, res: Response): Flash | undefined => {
    const raw = parseCookies(req.headers.cookie)[FLASH_COOKIE];
    if (!raw) return undefined;
    setCookie(res, auth, FLASH_COOKIE, '', 0);
    const parsed = flashSchema.safeParse(verifyValue(auth.sessionKey, 'flash', raw));
    return parsed.success ? parsed.data : undefined;
  };
  const layoutOf = (req: Request, res: Response): LayoutOptions => ({
    csrf: csrfOf(res),
    flash: takeFlash(req, res),
    mode: auth.mode,
    user: auth.user,
    connectUrl: deps.connect ? `${DASHBOARD_PATH}/connect` : undefined,
  });

  const storageWarnings = (): string[] => {
    if (!deps.storage) return [];
    let sample: string;
    try {
      sample = deps.storage.publicUrl('widget/feedmirror-widget.js');
    } catch {
      return [];
    }
    return /^https?:\/\//.test(sample)
      ? []
      : [
          'Mirrored images are published with file:// addresses, which no browser loads from a web page. Set MEDIA_PUBLIC_URL (for local storage served by this server: MEDIA_PUBLIC_URL = PUBLIC_URL) and sync again.',
        ];
  };

  /** The account named in the path, or a 404 page; ids are checked before any lookup. */
  const accountParam = async (req: Request, res: Response) => {
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
  };
  /** Where an account action's outcome shows: the page its form was on (the account's, or the list). */
  const backTo = (req: Request, account: { id: string }) =>
    (req.body as Record<string, unknown>)[RETURN_FIELD] === 'account'
      ? `${DASHBOARD_PATH}/accounts/${encodeURIComponent(account.id)}`
      : DASHBOARD_PATH;
  /** R-HLT-1: every page computes health with the same policy. */
  const healthPolicy = () => ({ now: clock.now(), syncIntervalMs: deps.syncIntervalMs ?? 60 * 60_000 });

  guarded.get(
    '/',
    wrap(async (req, res) => {
      const policy = healthPolicy();
      const [accounts, invitations] = await Promise.all([
        loadAccountOverviews(db, policy),
        listInvitations(db, policy.now),
      ]);
      pageHeaders(res);
      res
        .type('html')
        .send(accountsPage(accounts, { ...layoutOf(req, res), warnings: storageWarnings(), invitations }));
    }),
  );

  guarded.get(
    '/widget.js',
    wrap(async (_req, res) => {
      res
        .set({ 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' })
        .type(WIDGET_CONTENT_TYPE)
        .send(await widgetSource());
    }),
  );

  guarded.get(
    '/accounts/:id',
    wrap(async (req, res) => {
      const account = await accountParam(req, res);
      if (!account) return;
      const policy = healthPolicy();
      const [[one], copies, failures, syncs, events, deliveries, removalHold, links] = await Promise.all([
        loadAccountHealth(db, policy, { accountId: account.id }),
        accountCopyTotals(db, account.id),
        listCopyFailures(db, account.id),
        listSyncRuns(db, account.id),
        listAccountEvents(db, account.id),
        listAccountDeliveries(db, account.id),
        getRemovalHold(db, account.id),
        latestReconnectLinks(db, policy.now, { accountId: account.id }),
      ]);
      if (!one) {
        // Removed between the two reads.
        pageHeaders(res);
        res
          .status(404)
          .type('html')
          .send(accountNotFoundPage(account.id, layoutOf(req, res)));
        return;
      }
      pageHeaders(res);
      res.type('html').send(
        accountPage(
          {
            account,
            facts: one.facts,
            health: one.health,
            copies,
            failures,
            syncs,
            events,
            deliveries,
            removalHold,
            now: policy.now,
            ownerAlertsOn: deps.ownerAlertsOn ?? false,
            reconnectLink: links.get(account.id) ?? null,
            linksOffered: deps.ownerLinks !== undefined,
          },
          layoutOf(req, res),
        ),
      );
    }),
  );

  guarded.get(
    '/accounts/:id/preview',
    wrap(async (req, res) => {
      const account = await accountParam(req, res);
      if (!account) return;
      pageHeaders(res);
      res.type('html').send(
        previewPage(account, {
          ...layoutOf(req, res),
          layout: previewLayout(req.query.layout),
          warnings: storageWarnings(),
          widgetsUrl: deps.widgets ? `${DASHBOARD_PATH}/widgets` : undefined,
          documentPath: signedPreviewPath(
            auth.sessionKey,
            `${DASHBOARD_PATH}/accounts/${encodeURIComponent(account.id)}/preview/document.json`,
            { layout: previewLayout(req.query.layout) },
          ),
        }),
      );
    }),
  );

  guarded.get('/accounts/:id/preview/document.json', wrap(accountPreviewDocument));

  guarded.post(
    '/accounts/:id/sync',
    wrap(async (req, res) => {
      const account = await accountParam(req, res);
      if (!account) return;
      // Recorded in PostgreSQL, then queued under a unique id: a Redis restart cannot lose it.
      const job = await requestSync({ db, queues, clock }, account.id, 'dashboard');
      logger.info({ accountId: account.id, jobId: job.id }, 'dashboard: sync queued');
      flashTo(
        res,
        {
          kind: 'ok',
          text: `Sync of @${account.username} queued (job ${job.id}). It runs as soon as a worker is free.`,
        },
        backTo(req, account),
      );
    }),
  );

  guarded.post(
    '/accounts/:id/refresh',
    wrap(async (req, res) => {
      const account = await accountParam(req, res);
      if (!account) return;
      // force: renew now rather than waiting for the 30-day cadence; R-TOK-5 (24 h, unexpired) still applies in the job.
      const job = await enqueue(
        queues,
        JOBS.tokenRefresh,
        { accountId: account.id, force: true },
        { jobId: manualJobId('refresh', account.id, clock) },
      );
      logger.info({ accountId: account.id, jobId: job.id }, 'dashboard: token refresh queued');
      // The outcome, not just "queued": a refresh takes a second or two when a worker is free, and
      // "not due until …" or an error is what the operator needs to see.
      const done = await waitForJob(queues.tokenRefresh, String(job.id), 8_000);
      if (done.state === 'completed') {
        const outcome = done.returnvalue as Parameters<typeof describeRefreshOutcome>[0];
        flashTo(
          res,
          {
            kind: refreshFlashKind(outcome),
            text: `@${account.username}: ${describeRefreshOutcome(outcome)}.`,
          },
          backTo(req, account),
        );
      } else if (done.state === 'failed') {
        flashTo(
          res,
          {
            kind: 'error',
            text: `Token refresh of @${account.username} failed: ${done.failedReason ?? 'unknown error'}`,
          },
          backTo(req, account),
        );
      } else {
        flashTo(
          res,
          {
            kind: 'ok',
            text: `Token refresh of @${account.username} queued (job ${job.id}); no worker has finished it yet (is "feedmirror worker" running?). Its outcome will show in Queues.`,
          },
          backTo(req, account),
        );
      }
    }),
  );

  guarded.post(
    '/accounts/:id/confirm-removal',
    wrap(async (req, res) => {
      const account = await accountParam(req, res);
      if (!account) return;
      if (!deps.removals) {
        flashTo(
          res,
          { kind: 'error', text: 'This server cannot publish feeds (no storage): confirm with the CLI.' },
          backTo(req, account),
        );
        return;
      }
      // R-OWN-7: the same function as `feedmirror feeds confirm-removal`.
      const done = await deps.removals.confirm(account.id);
      logger.info({ accountId: account.id, removed: done?.removed.length ?? 0 }, 'dashboard: held removal confirmed');
      flashTo(
        res,
        done
          ? {
              kind: 'ok',
              text: `Removed ${done.removed.length} posts of @${account.username}; feed ${done.publish.outcome}.`,
            }
          : { kind: 'error', text: `No removal is held for @${account.username} any more.` },
        backTo(req, account),
      );
    }),
  );

  // R-OWN-10: the owner of an account, set or cleared from its page (CSRF-checked like every POST).
  guarded.post(
    '/accounts/:id/owner',
    wrap(async (req, res) => {
      const account = await accountParam(req, res);
      if (!account) return;
      const body = req.body as Record<string, unknown>;
      const to = `${DASHBOARD_PATH}/accounts/${encodeURIComponent(account.id)}#owner`;
      const name = typeof body.owner_name === 'string' ? body.owner_name.trim() : '';
      const parsed = ownerInputSchema.safeParse({
        email: typeof body.owner_email === 'string' ? body.owner_email : '',
        ...(name ? { name } : {}),
      });
      if (!parsed.success) {
        flashTo(res, { kind: 'error', text: `Owner not saved: ${firstIssue(parsed.error)}.` }, to);
        return;
      }
      await setOwner(
        db,
        account.id,
        { email: parsed.data.email, name: parsed.data.name ?? null, alerts: body.owner_alerts === 'on' },
        clock.now(),
      );
      logger.info({ accountId: account.id }, 'dashboard: account owner saved');
      flashTo(res, { kind: 'ok', text: `The owner of @${account.username} is saved.` }, to);
    }),
  );

  guarded.post(
    '/accounts/:id/owner/clear',
    wrap(async (req, res) => {
      const account = await accountParam(req, res);
      if (!account) return;
      await clearOwner(db, account.id, clock.now());
      logger.info({ accountId: account.id }, 'dashboard: account owner cleared');
      flashTo(
        res,
        { kind: 'ok', text: `@${account.username} has no owner recorded now: alerts go to you only.` },
        `${DASHBOARD_PATH}/accounts/${encodeURIComponent(account.id)}#owner`,
      );
    }),
  );

  // A new reconnect link for an account waiting for its owner (R-OWN-12: the earlier ones stop
  // working): emailed to the owner like the alert's, or shown once to copy.
  guarded.post(
    '/accounts/:id/reconnect-link',
    wrap(async (req, res) => {
      const account = await accountParam(req, res);
      if (!account) return;
      const to = `${DASHBOARD_PATH}/accounts/${encodeURIComponent(account.id)}#reconnect`;
      if (!deps.ownerLinks) {
        flashTo(res, { kind: 'error', text: 'This server makes no reconnect links.' }, to);
        return;
      }
      const send = (req.body as Record<string, unknown>).send;
      if (send !== 'email' && send !== 'copy') {
        flashTo(res, { kind: 'error', text: 'No link sent: the form names neither email nor copy.' }, to);
        return;
      }
      try {
        if (send === 'email') {
          const sent = await emailOwnerLink(deps.ownerLinks, account.id);
          flashTo(
            res,
            {
              kind: 'ok',
              text: `A new reconnect link was ${sent.delivered === 'outbox' ? 'written to the outbox (OUTBOX_DIR; no SMTP_URL) for' : 'emailed to'} ${sent.to}; it works until ${sent.expiresAt.toISOString().slice(0, 16).replace('T', ' ')} UTC. Earlier links no longer work.`,
            },
            to,
          );
          return;
        }
        const link = await makeOwnerLink(deps.ownerLinks, account.id);
        pageHeaders(res);
        res.type('html').send(reconnectLinkPage(account, link, layoutOf(req, res)));
      } catch (err) {
        if (!(err instanceof OwnerLinkRefused)) throw err;
        flashTo(res, { kind: 'error', text: `No link sent: ${err.message}.` }, to);
      }
    }),
  );

  guarded.get(
    '/accounts/:id/remove',
    wrap(async (req, res) => {
      const account = await accountParam(req, res);
      if (!account) return;
      pageHeaders(res);
      res.type('html').send(removeConfirmPage(account, layoutOf(req, res)));
    }),
  );

  guarded.post(
    '/accounts/:id/remove',
    wrap(async (req, res) => {
      const account = await accountParam(req, res);
      if (!account) return;
      if ((req.body as Record<string, unknown>).confirm !== 'yes') {
        res.redirect(303, `${DASHBOARD_PATH}/accounts/${encodeURIComponent(account.id)}/remove`);
        return;
      }
      // The lifecycle stops the schedules first, then deletes the account (its history stays).
      await deps.lifecycle.apply(account.id, 'removed');
      logger.info({ accountId: account.id }, 'dashboard: account removed');
      flashTo(res, {
        kind: 'ok',
        text: `@${account.username} was removed. Its published feed and copies stay in storage.`,
      });
    }),
  );

  // ---- widgets ----
  if (deps.widgets)
    registerWidgetRoutes(guarded, {
      deps: deps.widgets,
      ...(deps.feedHides ? { feedHides: deps.feedHides } : {}),
      viewsCounted: deps.widgets.viewsBaseUrl !== undefined,
      layoutOf,
      flashTo,
      pageHeaders,
      wrap,
      previewPath: (path) => signedPreviewPath(auth.sessionKey, path),
    });

  // ---- webhooks ----
  const ENDPOINT_ID_RE = /^wh_[a-z0-9]{8,32}$/;
  const endpointParam = async (req: Request, res: Response) => {
    const id = String(req.params.id ?? '');
    const endpoint = deps.webhooks && ENDPOINT_ID_RE.test(id) ? await getEndpoint(db, id) : null;
    if (!endpoint) {
      res.status(404).type('text/plain').send('No such webhook endpoint.\n');
      return null;
    }
    return endpoint;
  };
  const WEBHOOKS = `${DASHBOARD_PATH}/webhooks`;

  guarded.get(
    '/webhooks',
    wrap(async (req, res) => {
      if (!deps.webhooks) {
        res
          .status(404)
          .type('text/plain')
          .send('Webhooks need TOKEN_ENCRYPTION_KEY (their secrets are stored encrypted).\n');
        return;
      }
      const endpoints = await listEndpoints(db);
      const now = clock.now();
      const withLast = await Promise.all(
        endpoints.map(async (e) => ({
          ...e,
          // Shown only while the previous secret still signs.
          previousValidUntil: e.previousValidUntil && e.previousValidUntil > now ? e.previousValidUntil : null,
          last: (await listDeliveries(db, e.id, 1))[0],
        })),
      );
      pageHeaders(res);
      res
        .type('html')
        .send(webhooksPage(withLast, { ...layoutOf(req, res), allowPrivate: deps.webhooks.allowPrivate }));
    }),
  );

  guarded.post(
    '/webhooks',
    wrap(async (req, res) => {
      if (!deps.webhooks) {
        res.status(404).type('text/plain').send('Webhooks are not available.\n');
        return;
      }
      const body = req.body as Record<string, unknown>;
      const events = ([] as unknown[])
        .concat(body.events ?? [])
        .map(String)
        .join(',');
      try {
        const { endpoint, secret } = await registerEndpoint(
          { db, cipher: deps.webhooks.cipher, now: clock.now(), allowPrivate: deps.webhooks.allowPrivate },
          { url: String(body.url ?? ''), events, description: String(body.description ?? '') },
        );
        logger.info({ endpointId: endpoint.id }, 'dashboard: webhook endpoint added');
        pageHeaders(res);
        res.type('html').send(secretPage(endpoint, secret, `Endpoint ${endpoint.id} added.`, layoutOf(req, res)));
      } catch (err) {
        if (!(err instanceof EndpointInputError)) throw err;
        flashTo(res, { kind: 'error', text: err.message.slice(0, 400) }, WEBHOOKS);
      }
    }),
  );

  guarded.get(
    '/webhooks/:id',
    wrap(async (req, res) => {
      const endpoint = await endpointParam(req, res);
      if (!endpoint) return;
      pageHeaders(res);
      res.type('html').send(deliveriesPage(endpoint, await listDeliveries(db, endpoint.id, 100), layoutOf(req, res)));
    }),
  );

  guarded.post(
    '/webhooks/:id/rotate',
    wrap(async (req, res) => {
      const endpoint = await endpointParam(req, res);
      if (!endpoint || !deps.webhooks) return;
      const r = await rotateSecret({ db, cipher: deps.webhooks.cipher, now: clock.now() }, endpoint.id);
      if (!r) {
        flashTo(res, { kind: 'error', text: `${endpoint.id} no longer exists.` }, WEBHOOKS);
        return;
      }
      logger.info({ endpointId: endpoint.id }, 'dashboard: webhook secret rotated');
      pageHeaders(res);
      res
        .type('html')
        .send(
          secretPage(
            endpoint,
            r.secret,
            `New secret. The previous one also signs until ${r.previousValidUntil.toISOString().slice(0, 16).replace('T', ' ')} UTC, so the receiver can switch meanwhile.`,
            layoutOf(req, res),
          ),
        );
    }),
  );

  guarded.post(
    '/webhooks/:id/remove',
    wrap(async (req, res) => {
      const endpoint = await endpointParam(req, res);
      if (!endpoint) return;
      await removeEndpoint(db, endpoint.id);
      logger.info({ endpointId: endpoint.id }, 'dashboard: webhook endpoint removed');
      flashTo(res, { kind: 'ok', text: `${endpoint.id} and its delivery log were removed.` }, WEBHOOKS);
    }),
  );

  // Connecting from the dashboard session works without an invitation (the operator is logged in).
  guarded.get(
    '/connect',
    wrap(async (_req, res) => {
      if (!deps.connect) {
        res.status(404).type('text/plain').send('Connecting needs APP_ID and APP_SECRET.\n');
        return;
      }
      res.set('Cache-Control', 'no-store').redirect(302, await deps.connect.start());
    }),
  );

  guarded.post(
    '/invitations',
    wrap(async (req, res) => {
      if (!deps.connect) {
        res.status(404).type('text/plain').send('Connecting needs APP_ID and APP_SECRET.\n');
        return;
      }
      const body = req.body as Record<string, unknown>;
      const ttl = INVITATION_TTLS[String(body.expires ?? '7d')] ?? INVITATION_TTLS['7d']!;
      // R-OWN-10: an invitation may carry the owner of the account it connects.
      const email = typeof body.owner_email === 'string' ? body.owner_email.trim() : '';
      const name = typeof body.owner_name === 'string' ? body.owner_name.trim() : '';
      const send = body.send === 'email';
      let owner: InvitationOwner | null = null;
      if (email !== '' || name !== '') {
        const parsed = ownerInputSchema.safeParse({ email, ...(name ? { name } : {}) });
        if (!parsed.success) {
          flashTo(res, { kind: 'error', text: `Invitation not created: ${firstIssue(parsed.error)}.` });
          return;
        }
        owner = { email: parsed.data.email, name: parsed.data.name ?? null, language: null };
      }
      if (send && !owner) {
        flashTo(res, { kind: 'error', text: "Invitation not created: emailing it needs the owner's email." });
        return;
      }
      const inv = await deps.connect.invite(ttl, owner, { send });
      logger.info(
        { expiresAt: inv.expiresAt.toISOString(), emailed: inv.email?.emailed ?? false },
        'dashboard: invitation created',
      );
      pageHeaders(res);
      res
        .type('html')
        .send(invitationPage(inv, { ...layoutOf(req, res), flash: invitationFlash(inv.email, inv.expiresAt) }));
    }),
  );

  guarded.post('/logout', logoutHandler(auth));
  guarded.post('/logout-everywhere', logoutHandler(auth, { everywhere: true }));

  guarded.use((_req: Request, res: Response) => {
    res.status(404).type('text/plain').send('No such dashboard page.\n');
  });

  // An action that fails says so in words and goes back; details (redacted) go to the log.
  // A request the server could not read (too many fields, too large, a bad charset) is the
  // client's: errors.ts answers it with its 4xx, not a flash as if the action had failed.
  guarded.use((err: Error, req: Request, res: Response, next: NextFunction) => {
    if (req.method !== 'POST' || res.headersSent || isClientError(err)) return next(err);
    logger.error({ err, path: req.path }, 'dashboard action failed');
    flashTo(res, {
      kind: 'error',
      text: `The action failed: ${redactText(err.message).slice(0, 200)}. Check that Redis and Postgres are up; details are in the server log.`,
    });
  });

  return router;
}

/** What the invitation page says first about its email: sent, or why not (the link is below to copy). */
function invitationFlash(email: InvitationEmailOutcome | null, expiresAt: Date): Flash | undefined {
  if (!email) return undefined;
  if (email.emailed)
    return {
      kind: 'ok',
      text: `Invitation emailed to ${email.to}; it works once, until ${expiresAt.toISOString().slice(0, 16).replace('T', ' ')} UTC.`,
    };
  return {
    kind: 'error',
    text:
      email.via === 'outbox'
        ? `Not emailed: SMTP_URL is not set, so the email was only written to the outbox (OUTBOX_DIR). Copy the link below and send it to ${email.to}.`
        : `Not emailed: ${email.error}. Copy the link below and send it to ${email.to}.`,
  };
}

/** Wait (polling, at most `ms`) for a job to finish; its state, and its return value or failure. */
async function waitForJob(
  queue: Queue,
  id: string,
  ms: number,
): Promise<{ state: string; returnvalue?: unknown; failedReason?: string }> {
  const deadline = Date.now() + ms;
  for (;;) {
    const job = await queue.getJob(id);
    const state = job ? await job.getState() : 'unknown';
    if (state === 'completed') return { state, returnvalue: job!.returnvalue };
    if (state === 'failed') return { state, failedReason: redactText(job!.failedReason ?? '') };
    if (Date.now() >= deadline) return { state };
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** bull-board's HTML without its links to a web-font CDN (nothing of the page may need the internet). */
export function stripWebFonts(html: string): string {
  return html
    .replace(/<link[^>]+href="https:\/\/fonts\.(?:googleapis|gstatic)\.com[^"]*"[^>]*>\s*/g, '')
    .replace(/<link[^>]+rel="preconnect"[^>]+fonts\.(?:googleapis|gstatic)\.com[^>]*>\s*/g, '');
}
