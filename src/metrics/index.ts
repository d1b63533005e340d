import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { DAY, systemClock, type Clock } from '../util/clock.ts';

/**
 * Prometheus metrics of feedmirror. Everything lives in one Registry of our own (never
 * prom-client's global one), so tests and several apps in one process never collide, and every
 * name starts with `feedmirror_`.
 *
 * Two kinds of figures:
 *  - counted where they happen (failures, copies, platform calls, rate-limit waits, sync
 *    durations): the code that does the work calls the handles below;
 *  - read when scraped (jobs by queue and state, token days left): collect() callbacks ask
 *    BullMQ and the accounts store, bounded by a timeout so a down Redis or Postgres never
 *    hangs /metrics. Counts reflect the whole cluster, whichever process serves them.
 */
export const METRIC_PREFIX = 'feedmirror_';

/** BullMQ job states reported by feedmirror_jobs. */
// BullMQ 5+ has no separate paused list (a paused queue keeps its jobs in waiting).
export const JOB_STATES = [
  'waiting',
  'active',
  'delayed',
  'prioritized',
  'waiting-children',
  'completed',
  'failed',
] as const;
export type JobStateName = (typeof JOB_STATES)[number];

/** What feedmirror_jobs needs of a queue: a BullMQ Queue fits. */
export interface JobCountsSource {
  readonly name: string;
  // Method syntax on purpose: BullMQ's parameter type is a wider union of names.
  getJobCounts(...types: JobStateName[]): Promise<Record<string, number>>;
}

/** One account's stored token expiry (R-TOK-4); null when it has no usable token. */
export interface TokenExpiry {
  accountId: string;
  expiresAt: Date | null;
}

/** The health verdicts, as src/accounts/health.ts names them (ok, warn, fail). */
export const HEALTH_VERDICTS = ['ok', 'warn', 'fail'] as const;
/** One account's health verdict. */
export interface AccountVerdict {
  accountId: string;
  verdict: (typeof HEALTH_VERDICTS)[number];
}

export interface MetricsOptions {
  /** Queues whose job counts are read on every scrape. */
  queues?: readonly JobCountsSource[];
  /** Reads every account's token expiry on every scrape (e.g. from the tokens table). */
  tokenExpiries?: () => Promise<readonly TokenExpiry[]>;
  /** Reads every account's health verdict on every scrape (src/accounts/health.ts, R-HLT-1). */
  accountHealth?: () => Promise<readonly AccountVerdict[]>;
  /**
   * Bound on that read (default 8000 ms, under Prometheus's 10 s scrape timeout): at 10,000
   * accounts it takes about a second on an idle machine, several on a loaded one.
   */
  accountHealthTimeoutMs?: number;
  clock?: Clock;
  /** Process metrics (CPU, memory, event loop, GC) under the same prefix; default true. */
  processMetrics?: boolean;
  /** Bound on each scrape-time read (default 2000 ms). */
  collectTimeoutMs?: number;
}

/**
 * How a feed-sync ended: ok (listing complete), incomplete (stopped early, nothing pruned),
 * rate_limited (the job backs off, R-OWN-1), reauth_required (R-TOK-10), failed (anything thrown).
 */
export type SyncOutcome = 'ok' | 'incomplete' | 'rate_limited' | 'reauth_required' | 'failed';
/** Per request sent to the platform (src/platform/http.ts PlatformCallOutcome). */
export type CallOutcome = 'ok' | 'error' | 'rate_limited' | 'transient';

export interface Metrics {
  readonly registry: Registry;
  readonly contentType: string;
  /** Jobs that failed (each failed attempt), by queue. */
  readonly jobFailures: Counter<'queue'>;
  /** Days of token validity left per account, computed from the stored expiry (R-TOK-9). */
  readonly tokenDaysLeft: Gauge<'account_id'>;
  /** Duration of one feed-sync, seconds. */
  readonly syncDuration: Histogram<'outcome'>;
  readonly imagesCopied: Counter;
  readonly imageBytesCopied: Counter;
  /** Calls to the platform API by operation (refresh, exchange, media_list, media_single, ...) and outcome. */
  readonly platformCalls: Counter<'operation' | 'outcome'>;
  /** Times a call waited because of rate limiting (R-OWN-1), by operation. */
  readonly rateLimitWaits: Counter<'operation'>;
  /** Times the queues paused because the app's usage of its platform budget passed 80% (R-OWN-1). */
  readonly platformSlowdowns: Counter;
  /** Scrape-time reads that failed or timed out (Redis or Postgres unreachable), by source. */
  readonly collectFailures: Counter<'source'>;
  /** Account lifecycle transitions made by this process (src/accounts/lifecycle.ts), by event. */
  readonly accountTransitions: Counter<'transition'>;
  /** Schedules and daily jobs the reconciler found missing or wrong in Redis and repaired, by kind. */
  readonly scheduleRepairs: Counter<'kind'>;
  /** The exposition text for /metrics. */
  metricsText(): Promise<string>;
}

/**
 * What the worker side counts: the handles the job and feed code increments. Deps objects carry
 * this narrow view (optional), so tests and callers without metrics need nothing.
 */
export type PipelineMetrics = Pick<
  Metrics,
  'jobFailures' | 'syncDuration' | 'imagesCopied' | 'imageBytesCopied' | 'platformCalls' | 'rateLimitWaits'
> &
  Partial<Pick<Metrics, 'accountTransitions' | 'scheduleRepairs' | 'platformSlowdowns'>>;

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

export function createMetrics(opts: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  const clock = opts.clock ?? systemClock;
  const timeoutMs = opts.collectTimeoutMs ?? 2_000;
  const queues = opts.queues ?? [];
  const p = METRIC_PREFIX;

  if (opts.processMetrics !== false) collectDefaultMetrics({ register: registry, prefix: p });

  const collectFailures = new Counter({
    name: `${p}metrics_collect_failures_total`,
    help: 'Scrape-time reads that failed or timed out, by source (queues, accounts).',
    labelNames: ['source'] as const,
    // Registered last (below), and it waits for the reads of this scrape, so their failures show at once.
    registers: [],
    async collect() {
      await Promise.allSettled([...pending]);
    },
  });
  // Scrape-time reads in flight; prom-client starts every collect() of a scrape together.
  const pending = new Set<Promise<unknown>>();
  const track = (work: Promise<void>): Promise<void> => {
    pending.add(work);
    return work.finally(() => pending.delete(work));
  };

  async function readJobCounts(gauge: Gauge<'queue' | 'state'>): Promise<void> {
    // reset first: a queue that cannot be read reports nothing rather than stale counts.
    gauge.reset();
    const results = await Promise.allSettled(
      queues.map(async (q) => ({
        queue: q.name,
        counts: await withTimeout(q.getJobCounts(...JOB_STATES), timeoutMs, `queue ${q.name}`),
      })),
    );
    for (const r of results) {
      if (r.status === 'rejected') {
        collectFailures.inc({ source: 'queues' });
        continue;
      }
      for (const state of JOB_STATES) gauge.set({ queue: r.value.queue, state }, r.value.counts[state] ?? 0);
    }
  }

  async function readTokenExpiries(gauge: Gauge<'account_id'>): Promise<void> {
    if (!opts.tokenExpiries) return;
    gauge.reset();
    let rows: readonly TokenExpiry[];
    try {
      rows = await withTimeout(opts.tokenExpiries(), timeoutMs, 'accounts store');
    } catch {
      collectFailures.inc({ source: 'accounts' });
      return;
    }
    const now = clock.now().getTime();
    for (const row of rows) {
      if (!row.expiresAt) continue;
      // Two decimals: enough for "alert under 14 days" without a new value every millisecond.
      gauge.set({ account_id: row.accountId }, Math.round(((row.expiresAt.getTime() - now) / DAY) * 100) / 100);
    }
  }

  /**
   * Both health gauges come from one read per scrape: the first collect() starts it, the second
   * takes the same promise and clears it, so the next scrape reads again.
   */
  let healthRead: Promise<readonly AccountVerdict[] | null> | undefined;
  const readHealth = (): Promise<readonly AccountVerdict[] | null> => {
    if (healthRead) {
      const shared = healthRead;
      healthRead = undefined;
      return shared;
    }
    healthRead = withTimeout(opts.accountHealth!(), opts.accountHealthTimeoutMs ?? 8_000, 'account health').catch(
      () => {
        collectFailures.inc({ source: 'accounts' });
        return null;
      },
    );
    return healthRead;
  };
  if (opts.accountHealth) {
    new Gauge({
      name: `${p}account_health`,
      help: 'Health of each account (R-HLT-1): 1 for its verdict (ok, warn, fail), 0 for the others; the reasons are on its dashboard page and in `accounts list --json`.',
      labelNames: ['account_id', 'verdict'] as const,
      registers: [registry],
      collect() {
        return track(
          readHealth().then((rows) => {
            this.reset(); // a removed account disappears, an unreadable store reports nothing
            for (const row of rows ?? [])
              for (const v of HEALTH_VERDICTS)
                this.set({ account_id: row.accountId, verdict: v }, row.verdict === v ? 1 : 0);
          }),
        );
      },
    });
    new Gauge({
      name: `${p}accounts`,
      help: 'Accounts by health verdict (ok, warn, fail): alert on feedmirror_accounts{verdict="fail"} > 0.',
      labelNames: ['verdict'] as const,
      registers: [registry],
      collect() {
        return track(
          readHealth().then((rows) => {
            this.reset();
            if (!rows) return;
            for (const v of HEALTH_VERDICTS) this.set({ verdict: v }, rows.filter((r) => r.verdict === v).length);
          }),
        );
      },
    });
  }

  new Gauge({
    name: `${p}jobs`,
    help: 'Jobs by queue and state, read from BullMQ at scrape time.',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
    collect() {
      return track(readJobCounts(this));
    },
  });

  const tokenDaysLeft = new Gauge({
    name: `${p}token_days_left`,
    help: 'Days of token validity left per account, from the stored expiry; negative once expired.',
    labelNames: ['account_id'] as const,
    registers: [registry],
    collect() {
      return track(readTokenExpiries(this));
    },
  });

  const metrics: Metrics = {
    registry,
    contentType: registry.contentType,
    jobFailures: new Counter({
      name: `${p}job_failures_total`,
      help: 'Failed job attempts, by queue.',
      labelNames: ['queue'] as const,
      registers: [registry],
    }),
    tokenDaysLeft,
    syncDuration: new Histogram({
      name: `${p}sync_duration_seconds`,
      help: 'Duration of one feed-sync, seconds.',
      labelNames: ['outcome'] as const,
      buckets: [0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600],
      registers: [registry],
    }),
    imagesCopied: new Counter({
      name: `${p}images_copied_total`,
      help: 'Images uploaded to storage (a reused earlier copy is not counted).',
      registers: [registry],
    }),
    imageBytesCopied: new Counter({
      name: `${p}images_copied_bytes_total`,
      help: 'Bytes of the original images uploaded to storage (resized variants not included).',
      registers: [registry],
    }),
    platformCalls: new Counter({
      name: `${p}platform_calls_total`,
      help: 'Requests sent to the platform API (each retry counts), by operation and outcome (ok, error, rate_limited, transient).',
      labelNames: ['operation', 'outcome'] as const,
      registers: [registry],
    }),
    rateLimitWaits: new Counter({
      name: `${p}rate_limit_waits_total`,
      help: 'Times a job waited (backed off) because the platform rate-limited it, by operation.',
      labelNames: ['operation'] as const,
      registers: [registry],
    }),
    platformSlowdowns: new Counter({
      name: `${p}platform_slowdowns_total`,
      help: 'Times the job queues paused because the app used more than 80% of its platform budget (X-App-Usage).',
      registers: [registry],
    }),
    collectFailures,
    accountTransitions: new Counter({
      name: `${p}account_transitions_total`,
      help: 'Account lifecycle transitions made by this process (connected, refresh_succeeded, refresh_failed, token_expired, owner_must_act, removed).',
      labelNames: ['transition'] as const,
      registers: [registry],
    }),
    scheduleRepairs: new Counter({
      name: `${p}schedule_repairs_total`,
      help: 'Schedulers and daily jobs the reconciler found missing or wrong in Redis and repaired, by kind (scheduler_added, scheduler_updated, scheduler_removed, daily_job_added).',
      labelNames: ['kind'] as const,
      registers: [registry],
    }),
    metricsText: () => registry.metrics(),
  };
  registry.registerMetric(collectFailures);
  return metrics;
}

/** The exposition text of a Metrics instance (what /metrics serves). */
export function metricsText(metrics: Metrics): Promise<string> {
  return metrics.metricsText();
}
