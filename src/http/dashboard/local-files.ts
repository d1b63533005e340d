import { pipeline } from 'node:stream/promises';
import { Router, type NextFunction, type Request, type Response } from 'express';
import { parseRange } from '../range.ts';
import { assertStorageKey } from '../../storage/keys.ts';
import type { ObjectStorage } from '../../storage/types.ts';

/**
 * Read-only HTTP access to the public objects of LOCAL storage: GET /media/<key>, /widget/<key>
 * and /widgets/<key> (widget documents and their static HTML), the same paths as the storage
 * keys. With MEDIA_PUBLIC_URL = PUBLIC_URL the feeds then carry http addresses that this server
 * answers (a local folder has no web server of its own; S3 does, so this is mounted for local
 * storage only). /feeds/<id>.json is the feed API. Range requests are answered as S3 answers them
 * (../range.ts): a video copy plays in Safari, and a seek reads only the bytes it needs.
 * Keys are validated (assertStorageKey: no "..", no leading dot, so .meta and temporary files
 * are unreachable) before the storage is asked, and the storage checks them again.
 */
const PUBLIC_PREFIXES = ['media/', 'widget/', 'widgets/'];

export function localFilesRouter(storage: ObjectStorage): Router {
  const router = Router();
  router.use(async (req: Request, res: Response, next: NextFunction) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    // The raw path: keys use no characters that need encoding, so anything encoded is refused.
    const key = req.path.slice(1);
    if (!PUBLIC_PREFIXES.some((p) => key.startsWith(p))) return next();
    try {
      assertStorageKey(key);
    } catch {
      res.status(404).type('text/plain').send('Not found.\n');
      return;
    }
    try {
      // Opened, not read: a video copy is streamed, and only the range asked for.
      const obj = await storage.openRead(key);
      if (!obj) {
        res.status(404).type('text/plain').send('Not found.\n');
        return;
      }
      res.set({
        'Content-Type': obj.contentType ?? 'application/octet-stream',
        'Cache-Control': obj.cacheControl ?? 'public, max-age=300',
        'X-Content-Type-Options': 'nosniff',
        // Sites embedding the widget load copies and the script from here.
        'Cross-Origin-Resource-Policy': 'cross-origin',
        'Access-Control-Allow-Origin': '*',
        'Accept-Ranges': 'bytes',
        ...(obj.lastModified ? { 'Last-Modified': obj.lastModified.toUTCString() } : {}),
      });
      const range = parseRange(req.get('range'), obj.size);
      if (range.kind === 'unsatisfiable') {
        res
          .status(416)
          .set({ 'Content-Range': `bytes */${obj.size}` })
          .type('text/plain')
          .send('Range Not Satisfiable\n');
        return;
      }
      const [start, end] = range.kind === 'partial' ? [range.start, range.end] : [0, obj.size - 1];
      if (range.kind === 'partial') res.status(206).set('Content-Range', `bytes ${start}-${end}/${obj.size}`);
      res.set('Content-Length', String(end - start + 1));
      if (req.method === 'HEAD' || obj.size === 0) {
        res.end();
        return;
      }
      const body = await obj.read(start, end);
      // A visitor who seeks away closes the response: the file's stream closes with it.
      await pipeline(body, res).catch((err: unknown) => {
        if (!res.headersSent) throw err;
        res.destroy();
      });
    } catch (err) {
      next(err);
    }
  });
  return router;
}
