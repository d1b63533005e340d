import type { Counter } from 'prom-client';
import type pg from 'pg';
import type { Cluster, Redis } from 'ioredis';
import type { Queue } from 'bullmq';
import { getAccount, listScheduledAccountIds } from '../src/store/accounts.ts';
import { holdLease, newHolderId, type HeldLease } from '../src/store/locks.ts';
import type { Clock } from '../src/util/clock.ts';
import type { Logger } from '../src/util/logger.ts';
import { redactText } from '../src/util/redact.ts';
import { dailyJobId, enqueue, enqueueDaily } from './enqueue.ts';
import {
  accountSchedulers,
  runScheduledOnceNow,
  ACCOUNT_SCHEDULER_KEY,
  writeScheduler,
  type ScheduleSettings,
} from './schedules.ts';
import { schedulerIntervals, schedulerPages } from './bullmq-keys.ts';
import { feedSyncJob } from './feed-sync.ts';
import { clearSyncRequest, listSyncRequests } from '../src/store/sync-requests.ts';
import type { AnyJobDefinition } from './definition.ts';
import type { Queues } from './queues.ts';

/**
 * Redis is a cache of PostgreSQL: the schedules and the day's jobs are rebuilt from the accounts
 * table whenever they are lost (a FLUSHDB, a failover or a restart without persistence).
 *
 * One worker per cluster reconciles: the one holding the `feedmirror:reconcile` lease (a row in
 * PostgreSQL with an expiry and a fencing token, src/store/locks.ts; it holds behind a
 * transaction pooler, R-SCL-2). The leader renews it while it runs; it releases it when it stops,
 * so another worker takes over at its next interval, and a killed leader's lease lapses after its
 * time to live. Every RECONCILE_INTERVAL_SECONDS, and right after Redis comes back, it compares
 * every active account with its schedulers and today's daily jobs with the queue, repairs what
 * differs, logs each repair and counts it in feedmirror_schedule_repairs_total{kind}.
 */
export type RepairKind =
  'scheduler_added' | 'scheduler_updated' | 'scheduler_removed' | 'daily_job_added' | 'sync_request_requeued';

export interface Repair {
  kind: RepairKind;
  /** The scheduler id or the daily job id. */
  id: string;
}

export interface ReconcileDeps {
  db: pg.Pool;
  queues: Pick<Queues, 'tokenRefresh' | 'maintenance'> & Partial<Queues>;
  schedules: ScheduleSettings;
  /** The daily once-per-cluster jobs this worker queues (worker.ts dailyJobs). */
  dailyJobs: readonly AnyJobDefinition[];
  clock: Clock;
  logger: Logger;
  repairs?: Pick<Counter<'kind'>, 'inc'>;
  /**
   * Asked before each repair: false stops the pass (the leader's lease lapsed or changed hands,
   * so another worker may be repairing now).
   */
  leading?: () => boolean;
}

/** One difference between the accounts in PostgreSQL and the schedulers in Redis. */
export type SchedulerDifference =
  | {
      /** An account's scheduler is absent, or runs at another interval than the settings say. */
      kind: 'missing' | 'interval';
      accountId: string;
      id: string;
      queue: Queue;
      def: AnyJobDefinition;
      everyMs: number;
    }
  | {
      /** A scheduler of an account that is gone or waits for its owner (R-TOK-10). */
      kind: 'stray';
      accountId: string;
      id: string;
      queue: Queue;
    };

/**
 * The comparison, on its own: what differs between every scheduled account (active, with a
 * token) and the schedulers Redis holds. The reconciler repairs what it finds; `feedmirror
 * verify` reports it (and repairs it with --repair) through the same function.
 */
export async function compareSchedules(
  deps: Pick<ReconcileDeps, 'db' | 'queues' | 'schedules'>,
): Promise<SchedulerDifference[]> {
  const differences: SchedulerDifference[] = [];
  const active = await listScheduledAccountIds(deps.db);
  const activeIds = new Set(active);

  // What Redis holds now, per queue: scheduler id -> every.
  const queues = [deps.queues.tokenRefresh, ...(deps.queues.feedSync ? [deps.queues.feedSync] : [])];
  const present = new Map<string, number | undefined>();
  for (const q of queues) {
    // A page at a time: 10,000 accounts have 20,000 schedulers, and reading them all in one call
    // held every one of them in memory (and Redis busy) at once.
    for await (const page of schedulerPages(q)) {
      for (const s of await schedulerIntervals(
        q,
        page.map((p) => p.key),
      )) {
        // The scan may return a scheduler twice: one difference for each.
        if (present.has(s.key)) continue;
        present.set(s.key, s.every);
        const accountId = ACCOUNT_SCHEDULER_KEY.exec(s.key)?.[1];
        if (accountId !== undefined && !activeIds.has(accountId))
          differences.push({ kind: 'stray', accountId, id: s.key, queue: q });
      }
    }
  }
  for (const accountId of active) {
    for (const s of accountSchedulers(deps.queues, accountId, deps.schedules)) {
      if (present.has(s.id) && Number(present.get(s.id)) === s.everyMs) continue;
      differences.push({
        kind: present.has(s.id) ? 'interval' : 'missing',
        accountId,
        id: s.id,
        queue: s.queue,
        def: s.def,
        everyMs: s.everyMs,
      });
    }
  }
  return differences;
}

/** Compare and repair once (whoever calls it; the Reconciler below makes sure only the leader does). */
export async function reconcileOnce(deps: ReconcileDeps): Promise<Repair[]> {
  const repairs: Repair[] = [];
  for (const d of await compareSchedules(deps)) {
    if (deps.leading && !deps.leading()) throw new Error('reconciler lost its lease; stopping this pass');
    if (d.kind === 'stray') {
      await d.queue.removeJobScheduler(d.id);
      repairs.push({ kind: 'scheduler_removed', id: d.id });
      continue;
    }
    // Spread as scheduleAccount spreads them: a rebuild of 10,000 lost schedules must not make
    // them all fall due at the same second.
    await writeScheduler(d, d.accountId);
    repairs.push({ kind: d.kind === 'interval' ? 'scheduler_updated' : 'scheduler_added', id: d.id });
    // An account connected while Redis was away (its row and token committed, its schedules
    // never made) has never been synced: its first sync runs now, not at its slot in the hour.
    if (d.kind === 'missing' && d.def === feedSyncJob && (await getAccount(deps.db, d.accountId))?.lastSyncAt === null)
      await runScheduledOnceNow(d, d.accountId);
  }
  for (const def of deps.dailyJobs) {
    const jobId = dailyJobId(def, deps.clock.now());
    if (await deps.queues.maintenance.getJob(jobId)) continue;
    await enqueueDaily(deps.queues, def, deps.clock);
    repairs.push({ kind: 'daily_job_added', id: jobId });
  }
  // R-NET-7: an operator's sync request whose job Redis no longer has: queued again under its id. One whose
  // job finished but was not cleared (the worker died in between) is cleared.
  if (deps.queues.feedSync) {
    for (const req of await listSyncRequests(deps.db)) {
      const job = await deps.queues.feedSync.getJob(req.jobId);
      if (!job) {
        await enqueue(deps.queues, feedSyncJob, { accountId: req.accountId }, { jobId: req.jobId });
        repairs.push({ kind: 'sync_request_requeued', id: req.jobId });
      } else if ((await job.isCompleted()) || (await job.isFailed())) {
        await clearSyncRequest(deps.db, req.accountId, req.jobId);
      }
    }
  }
  for (const r of repairs) deps.repairs?.inc({ kind: r.kind });
  if (repairs.length > 0)
    deps.logger.warn({ repairs }, `reconciler repaired ${repairs.length} schedule(s) from PostgreSQL`);
  else deps.logger.debug('reconciler: schedules match the accounts');
  return repairs;
}

/** The lease's name: one leader per database, whatever REDIS_PREFIX the workers use. */
export const RECONCILE_LEASE = 'feedmirror:reconcile';

export interface ReconcilerOptions {
  intervalMs: number;
  /**
   * The lease's time to live: how long a killed leader holds the others back. Default: twice the
   * interval, within 15 s to 60 s (it is renewed every third of it, independently of the interval).
   */
  leaseMs?: number;
  /** A client whose 'ready' after a reconnect means "Redis came back": reconcile at once. */
  redis?: Redis | Cluster;
}

export class Reconciler {
  private lock: HeldLease | null = null;
  private readonly holder = newHolderId();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private stopped = false;
  /** The connection was lost since its last 'ready' (ioredis said it is reconnecting). */
  private lost = false;
  /** A pass asked for once another worker's lease has lapsed (see onReady). */
  private retry: NodeJS.Timeout | undefined;
  private readonly onReconnecting = () => {
    this.lost = true;
  };
  private readonly onReady = () => {
    // A 'ready' after a loss means Redis came back; one without (the connection's start) does not.
    // Counting losses rather than skipping the first 'ready': a Redis that went away before the
    // first one (a worker just started) came back all the same.
    if (!this.lost) return;
    this.lost = false;
    this.deps.logger.info('Redis is back: reconciling the schedules now');
    // tick() catches its own errors. When another worker holds the lease, a live leader sees the
    // same return and repairs; a killed one holds the lease until it lapses, so try again then
    // rather than at the next interval (five minutes by default, with schedules missing).
    void this.trigger().then((repairs) => {
      if (repairs === undefined && !this.leading) this.retryWhenLeaseLapses();
    });
  };

  private retryWhenLeaseLapses(): void {
    if (this.stopped || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.trigger();
    }, this.leaseTtlMs + 1_000);
    this.retry.unref();
  }

  private get leaseTtlMs(): number {
    return this.opts.leaseMs ?? Math.min(60_000, Math.max(15_000, 2 * this.opts.intervalMs));
  }

  constructor(
    private readonly deps: ReconcileDeps,
    private readonly opts: ReconcilerOptions,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.trigger(), this.opts.intervalMs);
    this.timer.unref();
    if (this.opts.redis) {
      this.opts.redis.on('reconnecting', this.onReconnecting);
      this.opts.redis.on('ready', this.onReady);
    }
  }

  /** Run one reconciliation if this process leads (never two at once in one process). */
  trigger(): Promise<Repair[] | undefined> {
    const next = this.running.then(() => this.tick());
    this.running = next.catch(() => undefined);
    return next;
  }

  private async tick(): Promise<Repair[] | undefined> {
    if (this.stopped) return undefined;
    try {
      if (this.lock && !this.lock.held) {
        await this.lock.release();
        this.lock = null;
      }
      this.lock ??= await holdLease(this.deps.db, RECONCILE_LEASE, { ttlMs: this.leaseTtlMs, holder: this.holder });
      if (!this.lock) return undefined; // another worker leads
      // Renewed right before the pass: a leader whose lease lapsed (a long pause) finds out here.
      if (!(await this.lock.renew())) {
        await this.lock.release();
        this.lock = null;
        return undefined;
      }
      const lock = this.lock;
      this.deps.logger.debug({ fence: lock.fence }, 'reconciler: comparing the schedules');
      return await reconcileOnce({ ...this.deps, leading: () => lock.held });
    } catch (err) {
      // Redis or Postgres down: the next tick (or Redis's return) tries again.
      this.deps.logger.warn(
        { err: redactText((err as Error).message) },
        'reconciler could not compare the schedules; retrying at the next interval',
      );
      return undefined;
    }
  }

  get leading(): boolean {
    return this.lock?.held ?? false;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.retry);
    this.opts.redis?.off('ready', this.onReady);
    this.opts.redis?.off('reconnecting', this.onReconnecting);
    await this.running;
    await this.lock?.release();
    this.lock = null;
  }
}
