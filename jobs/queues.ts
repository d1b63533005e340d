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
export type QueueName = (typeof QUEUE)[keyof typeof QUEUE];

export interface RedisSettings {
  url: string;
  /** BullMQ key prefix; `{name}` keeps every key in one hash slot on Redis Cluster. */
  prefix: string;
}

/**
 * Connections for BullMQ. Workers need `maxRetriesPerRequest: null` (blocking commands); the
 * retry strategy reconnects forever with a capped delay, so a Redis restart is survived.
 */
export function redisConnection(settings: RedisSettings, forWorker = true): Redis {
  const opts: RedisOptions = {
    maxRetriesPerRequest: forWorker ? null : 3,
    enableReadyCheck: true,
    retryStrategy: (times) => Math.min(200 * times, 5_000),
    lazyConnect: false,
  };
  return new Redis(settings.url, opts);
}

export const DEFAULT_JOB_OPTIONS: JobsOptions = {
  attempts: 3,
  backoff: { type: 'exponential', delay: 30_000 },
  // Keep enough history for the dashboard and for jobId de-duplication, not forever.
  removeOnComplete: { age: 7 * 24 * 3600, count: 1000 },
  removeOnFail: { age: 30 * 24 * 3600, count: 5000 },
};

export function createQueue(name: QueueName, settings: RedisSettings, connection?: ConnectionOptions): Queue {
  return new Queue(name, {
    connection: connection ?? redisConnection(settings, false),
    prefix: settings.prefix,
    defaultJobOptions: DEFAULT_JOB_OPTIONS,
  });
}
