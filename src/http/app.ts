import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import type { Logger } from '../util/logger.ts';
import { connectRoutes, type ConnectRoutesDeps } from './connect.ts';
import { healthRoutes, type HealthDeps } from './health.ts';
import { feedsRouter } from './feeds.ts';
import type { ObjectStorage } from '../storage/types.ts';
import { dashboardRouter, type DashboardDeps } from './dashboard/index.ts';
import { localFilesRouter } from './dashboard/local-files.ts';

/**
 * `feedmirror serve`: health, readiness and metrics; the feed API; the OAuth connect/callback
 * pages (public: the platform redirects owners there); the local storage's public files; the
 * operator dashboard (login, CSRF) with bull-board under /dashboard.
 */
export interface AppDeps {
  logger: Logger;
  connect?: ConnectRoutesDeps;
  health?: HealthDeps;
  /** Serves GET /feeds/<id>.json for server code. */
  storage?: ObjectStorage;
  /** Serve local storage's media/ and widget/ objects at the same paths (see local-files.ts). */
  serveLocalFiles?: boolean;
  /** The operator dashboard under /dashboard; absent: no dashboard. */
  dashboard?: DashboardDeps;
}

export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', 'loopback');
  // Probes and Prometheus carry no credentials: mounted before anything that authenticates.
  app.use(healthRoutes({ logger: deps.logger, ...deps.health }));
  if (deps.storage) app.use(feedsRouter({ storage: deps.storage }));
  if (deps.connect) app.use(connectRoutes(deps.connect));
  if (deps.storage && deps.serveLocalFiles !== false && deps.storage.kind === 'local') app.use(localFilesRouter(deps.storage));
  // Everything under /dashboard (bull-board included) is behind the login: see dashboard/index.ts.
  if (deps.dashboard) app.use(dashboardRouter(deps.dashboard));
  // Errors: a short message in words; details (redacted) go to the log, never to the response.
  app.use((err: Error, req: Request, res: Response, _next: NextFunction) => {
    deps.logger.error({ err, path: req.path }, 'request failed');
    if (!res.headersSent) res.status(500).type('text/plain').send('Something went wrong on the server; the operator can find the details in its log.\n');
  });
  return app;
}
