import { createHash, timingSafeEqual } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import type { Logger } from '../util/logger.ts';
import { systemClock, type Clock } from '../util/clock.ts';
import type { Metrics } from '../metrics/index.ts';
import { pingDatabase } from '../store/db.ts';

/**
 * Health and metrics endpoints for `feedmirror serve`:
 *   /healthz  the process is up (liveness: never touches a dependency, so a Redis outage does
 *             not get the pod killed and restarted in a loop)
 *   /readyz   Redis, Postgres and storage each checked on its own with a timeout (readiness)
 *   /metrics  Prometheus text
 * Responses name a dependency and a short reason code only: never an address, a URL or an error
 * text, which could carry credentials (R-TOK-11). The details go to the (redacted) log.
 */

/** What /readyz needs of each dependency; ioredis' Redis, pg's Pool and ObjectStorage fit. */
export interface RedisPing {
  ping(): Promise<string>;
}
export interface SqlQuery {
  query(sql: string): Promise<unknown>;
}
export interface StoragePing {
  ping(): Promise<void>;
}

export interface HealthDeps {
  redis?: RedisPing;
  db?: SqlQuery;
  storage?: StoragePing;
  metrics?: Metrics;
  logger?: Logger;
  /** Bound on each dependency check (default 2000 ms). */
  timeoutMs?: number;
  /**
   * Who may read /metrics (account ids, days of validity left): 'open' (serve listens on loopback
   * only, nothing in front), a bearer token (METRICS_TOKEN), or 'off' (neither: not served).
   */
  metricsAccess?: 'open' | 'off' | { bearer: string };
  /** Scrapes within this many ms get the same text (default 5000): scraping stays cheap. */
  metricsCacheMs?: number;
  clock?: Clock;
}

export type DependencyName = 'redis' | 'postgres' | 'storage';

export interface CheckResult {
  ok: boolean;
  ms: number;
  /** `timeout`, or an error code such as ECONNREFUSED / a SQLSTATE; never a message. */
  reason?: string;
}

export interface Readiness {
  status: 'ready' | 'unready';
  down: DependencyName[];
  checks: Partial<Record<DependencyName, CheckResult>>;
}

class CheckTimeout extends Error {}

/** A code safe to show: upper-case identifiers (ECONNREFUSED, ETIMEDOUT, 57P01), nothing else. */
function reasonOf(err: unknown): string {
  if (err instanceof CheckTimeout) return 'timeout';
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[A-Z0-9_]{2,40}$/.test(code)) return code;
  const name = (err as { name?: unknown } | null)?.name;
  if (typeof name === 'string' && /^[A-Za-z]{2,60}$/.test(name) && name !== 'Error') return name;
  return 'unreachable';
}

async function check(run: () => Promise<unknown>, timeoutMs: number): Promise<CheckResult & { error?: unknown }> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const work = run();
  // The check may settle after the timeout; its late rejection must not become unhandled.
  work.catch(() => {});
  try {
    await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new CheckTimeout()), timeoutMs);
      }),
    ]);
    return { ok: true, ms: Math.round(performance.now() - started) };
  } catch (error) {
    return { ok: false, ms: Math.round(performance.now() - started), reason: reasonOf(error), error };
  } finally {
    clearTimeout(timer);
  }
}

/** Check every configured dependency at once, each with its own timeout. */
export async function readiness(deps: HealthDeps): Promise<Readiness> {
  const timeoutMs = deps.timeoutMs ?? 2_000;
  const { redis, db, storage } = deps;
  const probes: Array<[DependencyName, () => Promise<unknown>]> = [];
  if (redis) probes.push(['redis', () => redis.ping()]);
  if (db) probes.push(['postgres', () => pingDatabase(db)]);
  if (storage) probes.push(['storage', () => storage.ping()]);
  const results = await Promise.all(probes.map(async ([name, run]) => [name, await check(run, timeoutMs)] as const));
  const checks: Readiness['checks'] = {};
  const down: DependencyName[] = [];
  for (const [name, { error, ...result }] of results) {
    checks[name] = result;
    if (!result.ok) {
      down.push(name);
      deps.logger?.warn({ dependency: name, reason: result.reason, err: error }, `readiness: ${name} is down`);
    }
  }
  return { status: down.length === 0 ? 'ready' : 'unready', down, checks };
}

export function healthRoutes(deps: HealthDeps): Router {
  const router = Router();
  const noStore = (res: Response) => res.set('Cache-Control', 'no-store');

  router.get('/healthz', (_req: Request, res: Response) => {
    noStore(res).json({ status: 'ok' });
  });

  router.get('/readyz', async (_req: Request, res: Response) => {
    const result = await readiness(deps);
    noStore(res)
      .status(result.status === 'ready' ? 200 : 503)
      .json(result);
  });

  const metrics = deps.metrics;
  const access = deps.metricsAccess ?? 'open';
  if (metrics && access !== 'off') {
    const cacheMs = deps.metricsCacheMs ?? 5_000;
    let cached: { text: string; at: number } | undefined;
    let inFlight: Promise<string> | undefined;
    const expected = typeof access === 'object' ? createHash('sha256').update(access.bearer).digest() : undefined;
    router.get('/metrics', async (req: Request, res: Response, next) => {
      try {
        if (expected) {
          // The scheme is case-insensitive (RFC 9110 section 11.1): `bearer` and `BEARER` work too.
          const m = /^Bearer +(.+?) *$/i.exec(req.headers.authorization ?? '');
          const given = createHash('sha256')
            .update(m?.[1] ?? '')
            .digest();
          if (!m || !timingSafeEqual(given, expected)) {
            noStore(res)
              .status(401)
              .set('WWW-Authenticate', 'Bearer realm="feedmirror metrics"')
              .type('text/plain')
              .send('A bearer token (METRICS_TOKEN) is needed to read the metrics.\n');
            return;
          }
        }
        const now = (deps.clock ?? systemClock).now().getTime();
        if (!cached || now - cached.at >= cacheMs) {
          // One read at a time however many scrapers ask at once.
          inFlight ??= metrics.metricsText().finally(() => (inFlight = undefined));
          cached = { text: await inFlight, at: now };
        }
        noStore(res).set('Content-Type', metrics.contentType).send(cached.text);
      } catch (err) {
        next(err);
      }
    });
  }
  return router;
}
