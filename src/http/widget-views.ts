import { Router, type Request, type Response } from 'express';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { countWidgetView } from '../store/widgets.ts';
import type { Db } from '../store/db.ts';
import type { Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import { WIDGET_ID_PATTERN } from '../widgets/document.ts';

/**
 * R-WID-7: `POST /w/<id>/view` (what the script's navigator.sendBeacon sends) and `GET` (an image
 * beacon or a plain fetch) count one view of a widget for today (UTC) in PostgreSQL. No cookie is
 * read or set and nothing about the viewer is kept: the count is all there is. Each widget counts
 * at most `perMinute` views a minute (an in-memory window of this process), so a loop of requests
 * cannot inflate it cheaply; past it the answer is the same 204 and nothing is counted. Any site
 * may send it (CORS *), since widgets are embedded everywhere.
 */
export interface WidgetViewsDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  /** WIDGET_VIEWS_PER_MINUTE. */
  perMinute: number;
}

export function widgetViewsRouter(deps: WidgetViewsDeps): Router {
  const router = Router();
  const limiter = new RateLimiterMemory({ keyPrefix: 'widget-views', points: deps.perMinute, duration: 60 });
  const cors = (res: Response) =>
    res.set({
      'Access-Control-Allow-Origin': '*',
      'Access-Control-Allow-Methods': 'GET, POST',
      'Cross-Origin-Resource-Policy': 'cross-origin',
      'Cache-Control': 'no-store',
    });
  router.options('/w/:id/view', (_req: Request, res: Response) => {
    cors(res).status(204).end();
  });
  const count = async (req: Request, res: Response) => {
    const id = String(req.params.id ?? '');
    cors(res);
    if (!WIDGET_ID_PATTERN.test(id)) {
      res.status(404).type('text/plain').send('Not found.\n');
      return;
    }
    try {
      await limiter.consume(id);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      res.status(204).end(); // over the widget's limit: answered, not counted
      return;
    }
    const day = deps.clock.now().toISOString().slice(0, 10);
    const counted = await countWidgetView(deps.db, id, day);
    res.status(counted ? 204 : 404).end();
  };
  const handler = (req: Request, res: Response, next: (err?: unknown) => void) => {
    count(req, res).catch(next);
  };
  router.post('/w/:id/view', handler);
  router.get('/w/:id/view', handler);
  return router;
}
