import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { Logger } from '../util/logger.ts';
import { connectRoutes, type ConnectRoutesDeps } from './connect.ts';
import { healthRoutes, type HealthDeps } from './health.ts';
import { feedsRouter } from './feeds.ts';
import type { ObjectStorage } from '../storage/types.ts';
import { dashboardRouter, type DashboardDeps } from './dashboard/index.ts';
import { localFilesRouter } from './dashboard/local-files.ts';
import { securityHeaders } from './security-headers.ts';
import { errorHandler } from './errors.ts';
import { utf8BodiesOnly } from './charset.ts';
import type { TrustProxy } from '../util/trust-proxy.ts';
import { widgetViewsRouter, type WidgetViewsDeps } from './widget-views.ts';

/**
 * `feedmirror serve`: health, readiness and metrics; the feed API; the OAuth connect/callback
 * pages (public: the platform redirects owners there); the local storage's public files; the
 * operator dashboard (login, CSRF) with bull-board under /dashboard.
 */
export interface AppDeps {
  logger: Logger;
  connect?: ConnectRoutesDeps;
  health?: HealthDeps;
  /** Serves GET /feeds/<id>.json for server code (and /status/<id>.json with publishStatus). */
  storage?: ObjectStorage;
  /** PUBLISH_STATUS: whether /status/<id>.json is served (default off, as the setting's). */
  publishStatus?: boolean;
  /** Serve local storage's media/ and widget/ objects at the same paths (see local-files.ts). */
  serveLocalFiles?: boolean;
  /** The operator dashboard under /dashboard; absent: no dashboard. */
  dashboard?: DashboardDeps;
  /** TRUST_PROXY: which peers may name the client's address (default: none). */
  trustProxy?: TrustProxy;
  /** PUBLIC_URL: https turns on HSTS. */
  publicUrl?: string;
  /** Widget views (R-WID-7), counted when WIDGET_VIEWS_URL is set; absent: /w/<id>/view is a 404. */
  widgetViews?: WidgetViewsDeps;
}

export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  const trust = deps.trustProxy ?? false;
  app.set('trust proxy', trust);
  if (trust === false) app.use(warnOnForwardedFor(deps.logger));
  // Headers first, so every response carries them: errors, 404s, feeds, media, bull-board.
  app.use(securityHeaders({ publicUrl: deps.publicUrl }));
  // R-NET-2: a body in any charset but UTF-8 is refused before anything reads it.
  app.use(utf8BodiesOnly());
  // Probes carry no credentials; /metrics checks its own bearer token (health.ts).
  app.use(healthRoutes({ logger: deps.logger, ...deps.health }));
  if (deps.storage) app.use(feedsRouter({ storage: deps.storage, publishStatus: deps.publishStatus === true }));
  if (deps.widgetViews) app.use(widgetViewsRouter(deps.widgetViews));
  if (deps.connect) app.use(connectRoutes(deps.connect));
  if (deps.storage && deps.serveLocalFiles !== false && deps.storage.kind === 'local')
    app.use(localFilesRouter(deps.storage));
  // Everything under /dashboard (bull-board included) is behind the login: see dashboard/index.ts.
  if (deps.dashboard) {
    app.use(dashboardRouter(deps.dashboard));
    // The server's front door is the dashboard (its login when there is no session).
    app.get('/', (_req: Request, res: Response) => res.redirect(302, '/dashboard'));
  }
  // Our own 404 (Express's default one replaces the CSP with its own).
  app.use((_req: Request, res: Response) => {
    res.status(404).type('text/plain').send('Not found.\n');
  });
  // Client mistakes are short 4xx answers logged at info; the rest a 500 in words (errors.ts).
  app.use(errorHandler(deps.logger));
  return app;
}

/**
 * Without TRUST_PROXY every client behind a proxy has the proxy's address, and they share one
 * login throttle. Say so once, the first time a forwarded request arrives.
 */
function warnOnForwardedFor(logger: Logger): RequestHandler {
  let warned = false;
  return (req: Request, _res: Response, next: NextFunction) => {
    if (!warned && req.headers['x-forwarded-for'] !== undefined) {
      warned = true;
      logger.warn(
        { peer: req.socket.remoteAddress },
        "requests arrive through a proxy (X-Forwarded-For) but TRUST_PROXY is unset: every client counts as the proxy's address (one shared login throttle). Set TRUST_PROXY to the number of proxies in front (e.g. 1) or their addresses.",
      );
    }
    next();
  };
}
