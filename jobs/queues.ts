import { Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';

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

/** A plain client (health checks, tests); the caller closes it. */
export function redisClient(settings: RedisSettings): Redis {
  return new Redis(redisOptions(settings, false));
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
export function createQueues(settings: RedisSettings): Queues {
  const out = {} as Queues;
  for (const key of Object.keys(QUEUE) as QueueKey[]) out[key] = createQueue(QUEUE[key], settings);
  return out;
}

export function createQueue(name: QueueName, settings: RedisSettings, connection?: ConnectionOptions): Queue {
  return new Queue(name, {
    connection: connection ?? bullConnection(settings, false),
    prefix: settings.prefix,
    defaultJobOptions: DEFAULT_JOB_OPTIONS,
  });
}
