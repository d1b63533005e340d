import { Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import { telemetryOptions } from './telemetry.ts';
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from '../src/util/logger.ts';
import { ServiceUnavailableError, connectionErrorCode, UNREACHABLE_CODES } from '../src/util/unavailable.ts';

/**
 * Every queue of feedmirror, one name each, with the defaults its jobs run with. Job payloads
 * hold ids only: BullMQ stores job data in clear text in Redis, so never a token (R-TOK-11).
 */
export const QUEUE = {
  tokenRefresh: 'token-refresh',
  feedSync: 'feed-sync',
  mirrorMedia: 'mirror-media',
  publishFeed: 'publish-feed',
  maintenance: 'maintenance',
  /** Outgoing webhooks: their own queue, so a slow receiver never holds the feed pipeline up. */
  webhooks: 'webhook-delivery',
} as const;
export type QueueKey = keyof typeof QUEUE;
export type QueueName = (typeof QUEUE)[QueueKey];
/** One BullMQ Queue per queue of QUEUE, under the same keys. */
export type Queues = Record<QueueKey, Queue>;

export interface RedisSettings {
  url: string;
  /** BullMQ key prefix; `{name}` keeps every key in one hash slot on Redis Cluster. */
  prefix: string;
}

/**
 * Connection options for BullMQ, parsed from REDIS_URL. Passing options (not a client) lets each
 * Queue and Worker own its connection and close it on close(). Workers need
 * `maxRetriesPerRequest: null` (blocking commands); the retry strategy reconnects forever with a
 * capped delay, so a Redis restart is survived.
 */
export function redisOptions(settings: RedisSettings, forWorker = true): RedisOptions {
  const u = new URL(settings.url);
  const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0;
  return {
    host: u.hostname.replace(/^\[|\]$/g, ''),
    port: u.port ? Number(u.port) : 6379,
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(Number.isInteger(db) ? { db } : {}),
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
    maxRetriesPerRequest: forWorker ? null : 3,
    enableReadyCheck: true,
    retryStrategy: (times: number) => Math.min(200 * times, 5_000),
  };
}

/** The same options typed for BullMQ's constructors, which create (and close) their own clients. */
export function bullConnection(settings: RedisSettings, forWorker = true): ConnectionOptions {
  return redisOptions(settings, forWorker) as unknown as ConnectionOptions;
}

/** A plain client (health checks, tests); the caller closes it. With `outage`, its errors are reported there. */
export function redisClient(settings: RedisSettings, outage?: RedisOutage): Redis {
  const client = new Redis(redisOptions(settings, false));
  if (outage) {
    client.on('error', (err: Error) => outage.error(err));
    client.on('ready', () => outage.ready());
  }
  return client;
}

/** `host:port/db` of REDIS_URL: where Redis was looked for, without the password. */
export function describeRedis(settings: Pick<RedisSettings, 'url'>): string {
  try {
    const u = new URL(settings.url);
    return `${u.hostname}:${u.port || '6379'}${u.pathname.length > 1 ? u.pathname : ''}`;
  } catch {
    return '(unparseable REDIS_URL)';
  }
}

/**
 * Is Redis there? One connection attempt, no retries, at most `timeoutMs`: commands check this
 * before they queue anything, so a Redis that is down is one clear line and exit 3, not a
 * command that hangs while ioredis reconnects for ever.
 */
export async function pingRedis(settings: RedisSettings, timeoutMs = 3_000): Promise<void> {
  const client = new Redis({
    ...redisOptions(settings, false),
    lazyConnect: true,
    connectTimeout: timeoutMs,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
  });
  let last: unknown;
  client.on('error', (err) => (last = err));
  try {
    await client.connect();
    await client.ping();
  } catch (err) {
    throw redisUnavailable(settings, last ?? err);
  } finally {
    client.disconnect();
  }
}

/** The one-line error for a Redis that cannot be used (down, wrong password, ...). */
export function redisUnavailable(settings: RedisSettings, err: unknown): ServiceUnavailableError {
  const where = describeRedis(settings);
  const code = connectionErrorCode(err);
  const message = err instanceof Error ? err.message : String(err);
  if (/NOAUTH|WRONGPASS|invalid password|invalid username-password/i.test(message)) {
    return new ServiceUnavailableError(
      'Redis',
      `Redis at ${where} refused the login; check the password in REDIS_URL`,
      { cause: err },
    );
  }
  const why = code ?? (/timeout|timed out/i.test(message) ? 'timed out' : 'connection failed');
  return new ServiceUnavailableError(
    'Redis',
    `cannot reach Redis at ${where} (${why}); is it running? check REDIS_URL`,
    { cause: err },
  );
}

/**
 * Redis outages as the logs tell them: one warning when the first error arrives, one line when a
 * connection is ready again, nothing per retry in between (ioredis reconnects every few seconds,
 * and every Queue and Worker would otherwise log each attempt). Errors that are not about the
 * connection are logged as they come.
 */
export interface RedisOutage {
  error(err: Error, source?: string): void;
  ready(): void;
}

const outages = new WeakMap<Logger, Map<string, RedisOutage>>();

/** The outage reporter of this logger and Redis (shared by every queue, worker and client of a process). */
export function redisOutage(settings: RedisSettings, logger: Logger): RedisOutage {
  let byTarget = outages.get(logger);
  if (!byTarget) outages.set(logger, (byTarget = new Map()));
  const where = describeRedis(settings);
  const existing = byTarget.get(where);
  if (existing) return existing;
  let down = false;
  const outage: RedisOutage = {
    error(err, source) {
      const code = connectionErrorCode(err);
      const connection =
        (code !== undefined && UNREACHABLE_CODES.has(code)) ||
        /Connection is closed|connect ETIMEDOUT|NOAUTH|WRONGPASS|LOADING/i.test(err.message);
      if (!connection) {
        logger.error({ err, ...(source ? { source } : {}) }, 'Redis error');
        return;
      }
      if (down) return;
      down = true;
      logger.warn(
        { redis: where, code: code ?? 'closed' },
        `Redis at ${where} is unreachable (${code ?? 'connection closed'}); jobs wait and reconnecting continues until it is back`,
      );
    },
    ready() {
      if (!down) return;
      down = false;
      logger.info({ redis: where }, `Redis at ${where} is reachable again`);
    },
  };
  byTarget.set(where, outage);
  return outage;
}

/** Report a BullMQ Queue's, Worker's or FlowProducer's connection through `outage`. */
export function watchRedis(
  emitter: {
    on(event: 'error', fn: (err: Error) => void): unknown;
    getBackend(): { on(event: 'ready', fn: () => void): unknown };
  },
  outage: RedisOutage,
  source?: string,
): void {
  emitter.on('error', (err) => outage.error(err, source));
  // BullMQ's backend says 'ready' for every (re)connection of its clients.
  emitter.getBackend().on('ready', () => outage.ready());
}

/** How often a kind of job is tried, and the first pause between tries (doubling after it). */
export interface RetrySettings {
  attempts: number;
  backoffMs: number;
}

export function retryOptions(settings: RetrySettings): Pick<JobsOptions, 'attempts' | 'backoff'> {
  return { attempts: settings.attempts, backoff: { type: 'exponential', delay: settings.backoffMs } };
}

export const DEFAULT_JOB_OPTIONS: JobsOptions = {
  attempts: 3,
  backoff: { type: 'exponential', delay: 30_000 },
  // Keep enough history for the dashboard and for jobId de-duplication, not forever.
  removeOnComplete: { age: 7 * 24 * 3600, count: 1000 },
  removeOnFail: { age: 30 * 24 * 3600, count: 5000 },
};

/** Every queue, for a process that enqueues (CLI, dashboard, worker); the caller closes them. */
export function createQueues(settings: RedisSettings, outage?: RedisOutage): Queues {
  const out = {} as Queues;
  for (const key of Object.keys(QUEUE) as QueueKey[]) out[key] = createQueue(QUEUE[key], settings, undefined, outage);
  return out;
}

export function createQueue(
  name: QueueName,
  settings: RedisSettings,
  connection?: ConnectionOptions,
  outage?: RedisOutage,
): Queue {
  const queue = new Queue(name, {
    ...telemetryOptions(),
    connection: connection ?? bullConnection(settings, false),
    prefix: settings.prefix,
    defaultJobOptions: DEFAULT_JOB_OPTIONS,
  });
  if (outage) watchRedis(queue, outage, `queue ${name}`);
  return queue;
}
