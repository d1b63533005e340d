import { createHash, timingSafeEqual } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import type { Logger } from '../util/logger.ts';
import { systemClock, type Clock } from '../util/clock.ts';
import type { Metrics } from '../metrics/index.ts';
import { pingDatabase } from '../store/db.ts';
import { probeWritable, WRITTEN_PREFIXES, type ProbeStorage, type WrittenPrefix } from '../storage/probe.ts';
import { removeProbe } from '../deletion/guard.ts';

/**
 * Health and metrics endpoints for `feedmirror serve`:
 *   /healthz  the process is up (liveness: never touches a dependency, so a Redis outage does
 *             not get the pod killed and restarted in a loop)
 *   /serving  this process answers requests: 200 until it starts shutting down, then 503 while
 *             it finishes the requests in flight (a load balancer's readiness: a dependency
 *             outage keeps every replica in, so visitors get the server's own 503 page that says
 *             what is down, not a load balancer's error; docs/production.md)
 *   /readyz   Redis, Postgres and storage each checked on its own with a timeout (readiness);
 *             storage by writing, reading back and deleting a probe object under each prefix
 *             feedmirror writes to (R-NET-5), at most once a minute
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
/** The storage probe's result stands this long (R-NET-5): a probe is three requests per prefix. */
export const STORAGE_PROBE_EVERY_MS = 60_000;

export interface HealthDeps {
  redis?: RedisPing;
  db?: SqlQuery;
  storage?: ProbeStorage;
  metrics?: Metrics;
  logger?: Logger;
  /** Bound on each dependency check (default 2000 ms). */
  timeoutMs?: number;
  /**
   * Bound on the storage probe of each prefix (a write, a read and a delete; default 5000 ms):
   * its own, since it does three requests where the others do one, and it runs once a minute.
   */
  storageTimeoutMs?: number;
  /**
   * Who may read /metrics (account ids, days of validity left): 'open' (serve listens on loopback
   * only, nothing in front), a bearer token (METRICS_TOKEN), or 'off' (neither: not served).
   */
  metricsAccess?: 'open' | 'off' | { bearer: string };
  /** Scrapes within this many ms get the same text (default 5000): scraping stays cheap. */
  metricsCacheMs?: number;
  /** True once the server shuts down (drain.ts): /serving answers 503 from then on. */
  draining?: () => boolean;
  clock?: Clock;
}

export type DependencyName = 'redis' | 'postgres' | 'storage';

export interface CheckResult {
  ok: boolean;
  ms: number;
  /** `timeout`, or an error code such as ECONNREFUSED / a SQLSTATE; never a message. */
  reason?: string;
  /** Storage only: each prefix written to, with the reason of the ones that failed. */
  prefixes?: Partial<Record<WrittenPrefix, { ok: boolean; reason?: string }>>;
}

export interface Readiness {
  status: 'ready' | 'unready';
  down: DependencyName[];
  checks: Partial<Record<DependencyName, CheckResult>>;
}

class CheckTimeout extends Error {}

/**
 * A code safe to show: upper-case identifiers (ECONNREFUSED, EPERM, 57P01) or an error's class
 * name, nothing else. The innermost code wins (a storage error's cause says EPERM), then the
 * outermost meaningful name.
 */
function reasonOf(err: unknown): string {
  if (err instanceof CheckTimeout) return 'timeout';
  let name: string | undefined;
  for (let e = err as { code?: unknown; name?: unknown; cause?: unknown } | null, i = 0; e && i < 5; i++) {
    if (typeof e.code === 'string' && /^[A-Z0-9_]{2,40}$/.test(e.code)) return e.code;
    if (!name && typeof e.name === 'string' && /^[A-Za-z]{2,60}$/.test(e.name) && e.name !== 'Error') name = e.name;
    e = e.cause as typeof e;
  }
  return name ?? 'unreachable';
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

/**
 * R-NET-5: a probe object written, read back and deleted under every prefix, each with its own
 * timeout; down when any prefix fails, naming it.
 */
async function probeStorage(
  storage: ProbeStorage,
  timeoutMs: number,
  logger: Logger | undefined,
): Promise<CheckResult & { error?: unknown }> {
  const started = performance.now();
  // One prefix after the other: some S3-compatible servers (s3rver) fail a DELETE that races
  // another one in the same folder, and three probes are quick.
  const results: Array<readonly [WrittenPrefix, CheckResult & { error?: unknown }]> = [];
  for (const prefix of WRITTEN_PREFIXES)
    results.push([
      prefix,
      await check(() => probeWritable(storage, prefix, (key, body) => removeProbe(storage, key, body)), timeoutMs),
    ] as const);
  const prefixes: NonNullable<CheckResult['prefixes']> = {};
  let firstFailure: (CheckResult & { error?: unknown }) | undefined;
  for (const [prefix, { error, ...result }] of results) {
    prefixes[prefix] = result.ok ? { ok: true } : { ok: false, reason: result.reason ?? 'unreachable' };
    if (!result.ok) {
      firstFailure ??= { ...result, error };
      logger?.warn(
        { prefix, reason: result.reason, err: error },
        `readiness: storage does not take writes under ${prefix}/`,
      );
    }
  }
  const ms = Math.round(performance.now() - started);
  return firstFailure
    ? { ok: false, ms, reason: firstFailure.reason ?? 'unreachable', prefixes, error: firstFailure.error }
    : { ok: true, ms, prefixes };
}

/** The storage probe's last result and when it was taken (per healthRoutes), with the probe in flight. */
interface StorageProbeCache {
  result?: CheckResult & { error?: unknown };
  at?: number;
  inFlight?: Promise<CheckResult & { error?: unknown }> | undefined;
}

/** Check every configured dependency at once, each with its own timeout. */
export async function readiness(deps: HealthDeps, cache: StorageProbeCache = {}): Promise<Readiness> {
  const timeoutMs = deps.timeoutMs ?? 2_000;
  const { redis, db, storage } = deps;
  const probes: Array<[DependencyName, () => Promise<CheckResult & { error?: unknown }>]> = [];
  if (redis) probes.push(['redis', () => check(() => redis.ping(), timeoutMs)]);
  if (db) probes.push(['postgres', () => check(() => pingDatabase(db), timeoutMs)]);
  if (storage)
    probes.push([
      'storage',
      async () => {
        // At most one probe a minute whoever asks how often (R-NET-5); one at a time.
        const now = (deps.clock ?? systemClock).now().getTime();
        if (cache.result && cache.at !== undefined && now - cache.at < STORAGE_PROBE_EVERY_MS) return cache.result;
        cache.inFlight ??= probeStorage(storage, deps.storageTimeoutMs ?? 5_000, deps.logger).finally(
          () => (cache.inFlight = undefined),
        );
        const result = await cache.inFlight;
        cache.result = result;
        cache.at = now;
        return result;
      },
    ]);
  const results = await Promise.all(probes.map(async ([name, run]) => [name, await run()] as const));
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

  router.get('/serving', (_req: Request, res: Response) => {
    const draining = deps.draining?.() === true;
    noStore(res)
      .status(draining ? 503 : 200)
      .json({ status: draining ? 'draining' : 'serving' });
  });

  const storageProbe: StorageProbeCache = {};
  router.get('/readyz', async (_req: Request, res: Response) => {
    const result = await readiness(deps, storageProbe);
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
