import { Router, type NextFunction, type Request, type Response } from 'express';
import { readPublishedFeed } from '../feeds/publish.ts';
import type { ObjectStorage } from '../storage/types.ts';
import { ID_PATTERN } from '../util/ids.ts';

/**
 * `GET /feeds/<accountId>.json`: the published feed as stored (same bytes, Content-Type and
 * Cache-Control, R-LNK-4), for server code that cannot read the bucket. 404 when none exists.
 */
const FILE_RE = new RegExp(`^(${ID_PATTERN.source.slice(1, -1)})\\.json$`);

export function feedsRouter(deps: { storage: ObjectStorage }): Router {
  const router = Router();
  router.get('/feeds/:file', async (req: Request, res: Response, next: NextFunction) => {
    try {
      const m = FILE_RE.exec(String(req.params.file));
      if (!m) {
        res.status(404).type('text/plain').send('No such feed: the address must be /feeds/<account id>.json\n');
        return;
      }
      const obj = await readPublishedFeed(deps.storage, m[1]!);
      if (!obj) {
        res.status(404).type('text/plain').send('No feed has been published for this account yet.\n');
        return;
      }
      res.set('Content-Type', obj.contentType ?? 'application/json; charset=utf-8');
      res.set('Cache-Control', obj.cacheControl ?? 'public, max-age=300');
      // Feeds are public data read by the widget from other sites' pages: any origin may read them.
      res.set('Access-Control-Allow-Origin', '*');
      // helmet's default is same-origin; other sites' pages read feeds.
      res.set('Cross-Origin-Resource-Policy', 'cross-origin');
      res.send(obj.body);
    } catch (err) {
      next(err);
    }
  });
  return router;
}
