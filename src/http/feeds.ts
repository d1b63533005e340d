import { Router, type NextFunction, type Request, type Response } from 'express';
import { readPublishedFeed } from '../feeds/publish.ts';
import { notModified } from './conditional.ts';
import type { ObjectStorage } from '../storage/types.ts';
import { ID_PATTERN } from '../util/ids.ts';
import { statusKey } from '../storage/keys.ts';
import { STATUS_CACHE_CONTROL, STATUS_CONTENT_TYPE } from '../accounts/status-document.ts';

/**
 * `GET /feeds/<accountId>.json`: the published feed as stored (same bytes, Content-Type and
 * Cache-Control, R-LNK-4), for server code that cannot read the bucket. 404 when none exists.
 * Conditional reads: the stored object's own ETag and Last-Modified are sent, and a request whose
 * If-None-Match (or, without it, If-Modified-Since) matches gets 304 with no body (RFC 9110;
 * see conditional.ts). An unchanged feed is never rewritten, so its validators hold
 * until its content changes.
 */
const FILE_RE = new RegExp(`^(${ID_PATTERN.source.slice(1, -1)})\\.json$`);

export function feedsRouter(deps: {
  storage: ObjectStorage;
  /** PUBLISH_STATUS: off, /status/<id>.json answers 404 even when a document is left in storage. */
  publishStatus: boolean;
}): Router {
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
      res.set('Access-Control-Expose-Headers', 'ETag, Last-Modified');
      if (obj.etag) res.set('ETag', obj.etag);
      if (obj.lastModified) res.set('Last-Modified', obj.lastModified.toUTCString());
      if (notModified(req.headers, obj)) {
        res.status(304).end();
        return;
      }
      res.send(obj.body);
    } catch (err) {
      next(err);
    }
  });
  // The public status document (PUBLISH_STATUS=on, R-OWN-16): no secret in it, any origin may read it.
  router.get('/status/:file', async (req: Request, res: Response, next: NextFunction) => {
    try {
      if (!deps.publishStatus) {
        // R-OWN-16 is opt-in: with the switch off nothing is served, not even a document written
        // while it was on (`feedmirror verify --repair` deletes those).
        res.status(404).type('text/plain').send('No status documents: PUBLISH_STATUS is off.\n');
        return;
      }
      const m = FILE_RE.exec(String(req.params.file));
      const obj = m ? await deps.storage.get(statusKey(m[1]!)) : null;
      if (!obj) {
        res
          .status(404)
          .type('text/plain')
          .send('No status document for this account (no such account, or none written yet).\n');
        return;
      }
      res.set({
        'Content-Type': obj.contentType ?? STATUS_CONTENT_TYPE,
        'Cache-Control': obj.cacheControl ?? STATUS_CACHE_CONTROL,
        'Access-Control-Allow-Origin': '*',
        'Cross-Origin-Resource-Policy': 'cross-origin',
      });
      res.send(obj.body);
    } catch (err) {
      next(err);
    }
  });
  return router;
}
