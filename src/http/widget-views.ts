import { createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import type { Cluster, Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { countWidgetView } from '../store/widgets.ts';
import type { Db } from '../store/db.ts';
import type { Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import { WIDGET_ID_PATTERN } from '../schema/widget-document.ts';
import { deriveSessionSecret } from './auth/signing.ts';
import { clientKey } from './throttle.ts';

/**
 * R-WID-7: `POST /w/<id>/view` (what the script sends) and `GET` (an image beacon or a plain
 * fetch) count one view of a widget for today (UTC) in PostgreSQL. No cookie is read or set and
 * nothing about the viewer is kept: the count is all there is.
 *
 * Two bounds, on rate-limiter-flexible in Redis, so every `serve` process counts against the same
 * windows and a restart resets none of them:
 *  - per client and widget (an IPv4 address or an IPv6 /64, R-NET-3), `perClientPerHour` views an
 *    hour: one client can neither inflate a widget's count nor use up its budget;
 *  - per widget, `perMinute` views a minute, whoever sends them.
 * A view past either bound is answered like any other (204) and not counted; a client past its own
 * bound takes nothing from the widget's. The client's window is keyed by a keyed digest of its
 * address, the widget and the day, never the address, and lapses within the hour.
 *
 * Counting is best effort and never the visitor's problem: when Redis (or PostgreSQL) does not
 * answer at once, the view goes uncounted, the answer is still 204, and the log says so once per
 * outage. Any site may send it (CORS *), since widgets are embedded everywhere.
 */
export interface WidgetViewsDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  /** WIDGET_VIEWS_PER_MINUTE: views one widget counts a minute. */
  perMinute: number;
  /** WIDGET_VIEWS_PER_CLIENT: views one client counts per widget and hour. */
  perClientPerHour: number;
  /** Redis, shared by every serve process; absent (tests of pure code only): this process's memory. */
  redis?: Redis | Cluster | undefined;
  /** Key prefix in Redis (REDIS_PREFIX, with its hash tag on a cluster: R-SCL-1). */
  prefix: string;
  /** Keys the digest of a client's address (derived from the server's secret). */
  digestKey: string | Buffer;
  /** How long a limiter may take before the view goes uncounted (default 500 ms). */
  timeoutMs?: number;
}

/**
 * The key of the client digests: from the server's secret under a label of its own (every serve
 * process derives the same one), else random for this process (its client windows are its own).
 */
export function widgetViewsDigestKey(sessionSecret?: string, tokenEncryptionKey?: string): Buffer {
  const secret = deriveSessionSecret(sessionSecret, tokenEncryptionKey);
  if (!secret) return randomBytes(32);
  return Buffer.from(
    hkdfSync('sha256', Buffer.from(secret, 'utf8'), Buffer.alloc(0), 'feedmirror widget views v1', 32),
  );
}

/** Answered, not counted: over a bound, or the stores did not answer. */
class Uncounted extends Error {}

function limiter(deps: WidgetViewsDeps, name: string, points: number, duration: number): RateLimiterAbstract {
  const opts = { keyPrefix: `${deps.prefix}:widget-views:${name}`, points, duration };
  // rejectIfRedisNotReady: while Redis is away a view is refused at once, not queued until it is back.
  return deps.redis
    ? new RateLimiterRedis({ ...opts, storeClient: deps.redis, rejectIfRedisNotReady: true })
    : new RateLimiterMemory(opts);
}

async function within<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export function widgetViewsRouter(deps: WidgetViewsDeps): Router {
  const router = Router();
  const perClient = limiter(deps, 'client', deps.perClientPerHour, 3600);
  const perWidget = limiter(deps, 'widget', deps.perMinute, 60);
  const timeoutMs = deps.timeoutMs ?? 500;
  let failing = false;
  /** The client's window key: nothing that names the address (R-EMB-4). */
  const clientOf = (req: Request, widgetId: string, day: string) =>
    createHmac('sha256', deps.digestKey)
      .update(`${day}\n${widgetId}\n${clientKey(req.ip ?? 'unknown')}`)
      .digest('base64url')
      .slice(0, 22);
  /** Take one point, or say why the view is not counted. */
  const take = async (l: RateLimiterAbstract, key: string) => {
    try {
      await within(l.consume(key), timeoutMs);
    } catch (err) {
      if (err instanceof RateLimiterRes) throw new Uncounted('over its bound');
      throw err;
    }
  };
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
    const day = deps.clock.now().toISOString().slice(0, 10);
    let counted: boolean;
    try {
      // The client first: past its own bound it takes nothing from the widget's.
      await take(perClient, clientOf(req, id, day));
      await take(perWidget, id);
      counted = await within(countWidgetView(deps.db, id, day), timeoutMs * 4);
    } catch (err) {
      if (!(err instanceof Uncounted) && !failing) {
        failing = true;
        deps.logger.warn(
          { err: err instanceof Error ? err.message : String(err) },
          'widget views are not counted for now: Redis or PostgreSQL does not answer (the views are still answered)',
        );
      }
      res.status(204).end();
      return;
    }
    if (failing) {
      failing = false;
      deps.logger.info('widget views are counted again');
    }
    res.status(counted ? 204 : 404).end();
  };
  const handler = (req: Request, res: Response, next: (err?: unknown) => void) => {
    count(req, res).catch(next);
  };
  router.post('/w/:id/view', handler);
  router.get('/w/:id/view', handler);
  return router;
}
