import { Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import { telemetryOptions } from './telemetry.ts';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { Logger } from '../src/util/logger.ts';
import { ServiceUnavailableError, connectionErrorCode, UNREACHABLE_CODES } from '../src/util/unavailable.ts';
import {
  describeRedisTarget,
  effectiveRedisPrefix,
  parseRedisTarget,
  type RedisTarget,
} from '../src/util/redis-target.ts';

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

/** A client of one Redis server or of a Redis Cluster: every caller takes either. */
export type RedisClient = Redis | Cluster;

export interface RedisSettings {
  /** REDIS_URL: `redis://`, `rediss://`, or `redis+cluster://host:port,host:port`. */
  url: string;
  /**
   * The key prefix of every key (BullMQ's and feedmirror's own). On a cluster it must hold a hash
   * tag: redisSettings() wraps REDIS_PREFIX in braces there (R-SCL-1).
   */
  prefix: string;
  /** REDIS_CLUSTER_NODES: seed nodes; set, the target is a cluster. */
  clusterNodes?: string | undefined;
}

/**
 * The settings from the configuration, the prefix as this target needs it: on Redis Cluster a
 * REDIS_PREFIX without a hash tag is wrapped in braces (R-SCL-1), so every queue's keys and
 * feedmirror's own keys share one slot (BullMQ's flows link jobs of several queues in one
 * transaction, so one tag for all of them, not one per queue).
 */
export function redisSettings(config: {
  REDIS_URL: string;
  REDIS_PREFIX: string;
  REDIS_CLUSTER_NODES?: string | undefined;
}): RedisSettings {
  const target = parseRedisTarget(config.REDIS_URL, config.REDIS_CLUSTER_NODES);
  return {
    url: config.REDIS_URL,
    prefix: effectiveRedisPrefix(config.REDIS_PREFIX, target.cluster),
    ...(config.REDIS_CLUSTER_NODES ? { clusterNodes: config.REDIS_CLUSTER_NODES } : {}),
  };
}

/** One server or a cluster, and where. */
export function redisTarget(settings: Pick<RedisSettings, 'url' | 'clusterNodes'>): RedisTarget {
  return parseRedisTarget(settings.url, settings.clusterNodes);
}

/** Is this a cluster? */
export function isCluster(settings: Pick<RedisSettings, 'url' | 'clusterNodes'>): boolean {
  try {
    return redisTarget(settings).cluster;
  } catch {
    return false;
  }
}

/**
 * Connection options of one node. Workers need `maxRetriesPerRequest: null` (blocking commands);
 * the retry strategy reconnects forever with a capped delay, so a Redis restart is survived.
 */
// ioredis declares `replyMapping?: ReplyMappingMode | undefined` in its options but its
// constructors take `replyMapping?: ReplyMapping` (no undefined), so under exactOptionalPropertyTypes
// an object typed RedisOptions is refused by `new Redis`/`new Cluster`. feedmirror never sets it
// (the default reply mapping), so its options are typed without it.
type NodeOptions = Omit<RedisOptions, 'replyMapping'>;
type ClusterNodeOptions = Omit<ClusterOptions, 'redisOptions'> & { redisOptions?: NodeOptions };

function nodeOptions(target: RedisTarget, forWorker: boolean): NodeOptions {
  return {
    ...(target.username ? { username: target.username } : {}),
    ...(target.password ? { password: target.password } : {}),
    ...(target.tls ? { tls: {} } : {}),
    maxRetriesPerRequest: forWorker ? null : 3,
    enableReadyCheck: true,
    retryStrategy: (times: number) => Math.min(200 * times, 5_000),
  };
}

/**
 * Connection options of one Redis server for BullMQ and plain clients, parsed from REDIS_URL.
 * Passing options (not a client) lets each Queue and Worker own its connection and close it on
 * close().
 */
export function redisOptions(settings: RedisSettings, forWorker = true): NodeOptions {
  const target = redisTarget(settings);
  const node = target.nodes[0]!;
  return {
    host: node.host,
    port: node.port,
    ...(target.db ? { db: target.db } : {}),
    ...nodeOptions(target, forWorker),
  };
}

/**
 * Options of an ioredis Cluster: BullMQ's needs are the same as on one server (a worker's
 * connections never give up on a command: `maxRetriesPerRequest: null`), the cluster is ready only
 * once it says `cluster_state:ok`, and its topology is looked up again for ever after a failover
 * or a restart. Host names are used as given (no DNS rewrite), which TLS endpoints need.
 */
function clusterOptions(
  target: RedisTarget,
  forWorker: boolean,
  extra: ClusterNodeOptions = {},
): ClusterNodeOptions & { redisOptions: NodeOptions } {
  return {
    enableReadyCheck: true,
    clusterRetryStrategy: (times: number) => Math.min(200 * times, 5_000),
    slotsRefreshTimeout: 2_000,
    dnsLookup: (address, callback) => callback(null, address),
    ...extra,
    redisOptions: { ...nodeOptions(target, forWorker), ...extra.redisOptions },
  };
}

/**
 * The one place a Redis client is made: a `Redis` for one server, a `Cluster` for a cluster. The
 * caller closes it. `probe` makes it try once (no retries, no offline queue) within its timeout.
 */
export function createRedis(
  settings: Pick<RedisSettings, 'url' | 'clusterNodes'>,
  opts: { forWorker?: boolean; lazyConnect?: boolean; probe?: { timeoutMs: number } } = {},
): RedisClient {
  const target = redisTarget(settings);
  const forWorker = opts.forWorker ?? false;
  const probe = opts.probe
    ? {
        connectTimeout: opts.probe.timeoutMs,
        retryStrategy: () => null,
        maxRetriesPerRequest: 0,
      }
    : {};
  if (target.cluster) {
    return new Cluster(
      target.nodes,
      clusterOptions(target, forWorker, {
        ...(opts.lazyConnect || opts.probe ? { lazyConnect: true } : {}),
        ...(opts.probe ? { clusterRetryStrategy: () => null, enableOfflineQueue: false } : {}),
        redisOptions: probe,
      }),
    );
  }
  return new Redis({
    ...redisOptions(settings as RedisSettings, forWorker),
    ...(opts.lazyConnect || opts.probe ? { lazyConnect: true } : {}),
    ...(opts.probe ? { enableOfflineQueue: false } : {}),
    ...probe,
  });
}

/**
 * The connection for BullMQ's constructors. One server: options, so each Queue and Worker creates
 * and closes its own clients. A cluster: BullMQ cannot make a Cluster from options, so it gets a
 * Cluster (not yet connected): a Worker duplicates it for its own connections (and closes them);
 * a Queue or FlowProducer uses it as it is and leaves it open, so ownedBy() closes it with them.
 */
export function bullConnection(settings: RedisSettings, forWorker = true): ConnectionOptions {
  if (isCluster(settings)) return createRedis(settings, { forWorker, lazyConnect: true });
  return redisOptions(settings, forWorker) as unknown as ConnectionOptions;
}

/**
 * `owner` (a Queue, FlowProducer) closes `connection` too when it is a client we made
 * (cluster mode): BullMQ leaves a client it was handed open.
 */
export function ownedBy<T extends { close(): Promise<void>; disconnect?(): Promise<void> }>(
  owner: T,
  connection: ConnectionOptions,
): T {
  if (!(connection instanceof Cluster) && !(connection instanceof Redis)) return owner;
  const client = connection as RedisClient;
  const close = owner.close.bind(owner);
  owner.close = async () => {
    try {
      await close();
    } finally {
      client.disconnect();
    }
  };
  const disconnect = owner.disconnect?.bind(owner);
  if (disconnect)
    owner.disconnect = async () => {
      try {
        await disconnect();
      } finally {
        client.disconnect();
      }
    };
  return owner;
}

/** A plain client (health checks, sessions, throttles, the pacer); the caller closes it. With `outage`, its errors are reported there. */
export function redisClient(settings: RedisSettings, outage?: RedisOutage): RedisClient {
  const client = createRedis(settings);
  if (outage) {
    client.on('error', (err: Error) => outage.error(err));
    client.on('ready', () => outage.ready());
  }
  return client;
}

/** Where Redis was looked for, without the password: `host:port/db`, or `cluster host:port,host:port`. */
export function describeRedis(settings: Pick<RedisSettings, 'url' | 'clusterNodes'>): string {
  try {
    return describeRedisTarget(redisTarget(settings));
  } catch {
    return '(unparseable REDIS_URL)';
  }
}

/**
 * Is Redis there? One connection attempt, no retries, at most `timeoutMs`: commands check this
 * before they queue anything, so a Redis that is down is one clear line and exit 3, not a
 * command that hangs while ioredis reconnects for ever. A cluster must also be whole
 * (cluster_state:ok).
 */
export async function pingRedis(settings: RedisSettings, timeoutMs = 3_000): Promise<void> {
  const client = createRedis(settings, { probe: { timeoutMs } });
  let last: unknown;
  client.on('error', (err: unknown) => (last = err));
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      (async () => {
        await client.connect();
        await client.ping();
      })(),
      new Promise<never>(
        (_, reject) =>
          (timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs + 500)),
      ),
    ]);
  } catch (err) {
    throw redisUnavailable(settings, last ?? err);
  } finally {
    clearTimeout(timer);
    client.disconnect();
  }
}

/** The one-line error for a Redis that cannot be used (down, wrong password, ...). */
export function redisUnavailable(settings: RedisSettings, err: unknown): ServiceUnavailableError {
  const where = describeRedis(settings);
  // A cluster's "Failed to refresh slots cache" carries the last node's own error.
  const code =
    connectionErrorCode(err) ??
    connectionErrorCode((err as { lastNodeError?: unknown } | null | undefined)?.lastNodeError);
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
    `cannot reach Redis at ${where} (${why}); is it running? check ${isCluster(settings) ? 'REDIS_URL and REDIS_CLUSTER_NODES' : 'REDIS_URL'}`,
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
  if (!byTarget) outages.set(logger, (byTarget = new Map<string, RedisOutage>()));
  const where = describeRedis(settings);
  const existing = byTarget.get(where);
  if (existing) return existing;
  let down = false;
  const outage: RedisOutage = {
    error(err, source) {
      const code = connectionErrorCode(err);
      const connection =
        (code !== undefined && UNREACHABLE_CODES.has(code)) ||
        /Connection is closed|connect ETIMEDOUT|NOAUTH|WRONGPASS|LOADING|CLUSTERDOWN|None of startup nodes|Failed to refresh slots cache/i.test(
          err.message,
        );
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
  const own = connection ? undefined : bullConnection(settings, false);
  const queue = new Queue(name, {
    ...telemetryOptions(),
    connection: connection ?? own!,
    prefix: settings.prefix,
    defaultJobOptions: DEFAULT_JOB_OPTIONS,
  });
  if (own) ownedBy(queue, own);
  if (outage) watchRedis(queue, outage, `queue ${name}`);
  return queue;
}
