import express, { Router, type NextFunction, type Request, type Response } from 'express';
import { redactText } from '../../util/redact.ts';
import { requireCsrfToken } from '../csrf.ts';
import { isClientError } from '../errors.ts';
import { requireSession } from '../auth/middleware.ts';
import { DASHBOARD_PATH } from '../auth/paths.ts';
import { loginRoutes } from '../auth/routes.ts';
import { sessionOf } from '../auth/sessions.ts';
import { registerAccountActionRoutes } from './account-actions-routes.ts';
import { registerAccountRoutes } from './accounts-routes.ts';
import { registerAppRoutes } from './apps-routes.ts';
import { dashboardContext, FORM_MAX_FIELDS, type DashboardContext, type DashboardDeps } from './context.ts';
import { registerInvitationRoutes } from './invitations-routes.ts';
import { registerOwnerRoutes } from './owner-routes.ts';
import { previewDocuments, registerPreviewRoutes } from './previews-routes.ts';
import { registerQueueRoutes } from './queues-routes.ts';
import { registerSessionRoutes } from './session-routes.ts';
import { registerWebhookRoutes } from './webhooks-routes.ts';
import { isWidgetFormPost, registerWidgetRoutes, WIDGET_FORM_MAX_FIELDS } from './widgets-routes.ts';

/**
 * The operator dashboard under /dashboard: the accounts and their actions, invitations, widgets,
 * webhooks, the platform apps, previews and bull-board at /dashboard/queues, all behind the same
 * login (auth/) and CSRF checks (csrf.ts). Each resource registers its routes from a module of its own
 * (<resource>-routes.ts, with its pages in <resource>-views.ts); context.ts has what they share.
 */
export type { DashboardConnect, DashboardDeps, DashboardQueues } from './context.ts';
export { FORM_MAX_FIELDS } from './context.ts';

export function dashboardRouter(deps: DashboardDeps): Router {
  const { auth } = deps;
  const c = dashboardContext(deps);
  const router = Router();
  router.use(loginRoutes(auth));
  // The previews' documents at their signed addresses, for the widget script that sends no
  // cookie (preview-links.ts); unsigned, the same paths need the session (below).
  router.use(DASHBOARD_PATH, previewDocuments(c));

  // Everything below needs a session (GET /dashboard/login above does not).
  const guarded = Router();
  router.use(DASHBOARD_PATH, requireSession(auth), guarded);
  // bull-board checks the origin of its own API calls (they carry no form token): before ours.
  registerQueueRoutes(guarded, c);
  guarded.use(...formChecks(c));

  registerAccountRoutes(guarded, c);
  registerAccountActionRoutes(guarded, c);
  registerOwnerRoutes(guarded, c);
  registerPreviewRoutes(guarded, c);
  registerInvitationRoutes(guarded, c);
  if (deps.widgets) registerWidgetRoutes(guarded, c, deps.widgets);
  registerWebhookRoutes(guarded, c);
  registerAppRoutes(guarded, c);
  registerSessionRoutes(guarded, c);

  guarded.use((_req: Request, res: Response) => {
    res.status(404).type('text/plain').send('No such dashboard page.\n');
  });
  guarded.use(actionFailed(c));
  return router;
}

/**
 * Our forms: the body parsed, then token + origin checked on every POST. Every form sends at
 * most 20 fields but a widget's (its settings, a checkbox per post type and per account:
 * WIDGET_FORM_MAX_FIELDS); more is a 413 (docs/security.md).
 */
function formChecks(c: DashboardContext) {
  const { auth } = c.deps;
  const form = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: FORM_MAX_FIELDS });
  const widgetForm = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: WIDGET_FORM_MAX_FIELDS });
  return [
    (req: Request, res: Response, next: NextFunction) =>
      // Express's Request is the IncomingMessage Node made (an interface over it, so not seen as one).
      // eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment
      (isWidgetFormPost(req.method, req.path) ? widgetForm : form)(req, res, next),
    requireCsrfToken(auth.sessionKey, auth.allowedOrigins, (res) => sessionOf(res).sid),
  ];
}

/**
 * An action that fails says so in words and goes back; details (redacted) go to the log. A
 * request the server could not read (too many fields, too large, a bad charset) is the client's:
 * errors.ts answers it with its 4xx, not a flash as if the action had failed.
 */
function actionFailed(c: DashboardContext) {
  return (err: Error, req: Request, res: Response, next: NextFunction) => {
    if (req.method !== 'POST' || res.headersSent || isClientError(err)) return next(err);
    c.deps.logger.error({ err, path: req.path }, 'dashboard action failed');
    c.flashTo(res, {
      kind: 'error',
      text: `The action failed: ${redactText(err.message).slice(0, 200)}. Check that Redis and Postgres are up; details are in the server log.`,
    });
  };
}
