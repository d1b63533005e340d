import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import type { Logger } from '../util/logger.ts';
import { connectRoutes, type ConnectRoutesDeps } from './connect.ts';

/**
 * `feedmirror serve`: the OAuth connect/callback pages and health. Later parts mount the
 * dashboard, feed API and metrics here.
 */
export interface AppDeps {
  logger: Logger;
  connect?: ConnectRoutesDeps;
}

export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', 'loopback');
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  if (deps.connect) app.use(connectRoutes(deps.connect));
  // Errors: a short message in words; details (redacted) go to the log, never to the response.
  app.use((err: Error, req: Request, res: Response, _next: NextFunction) => {
    deps.logger.error({ err, path: req.path }, 'request failed');
    if (!res.headersSent) res.status(500).type('text/plain').send('Something went wrong on the server; the operator can find the details in its log.\n');
  });
  return app;
}
