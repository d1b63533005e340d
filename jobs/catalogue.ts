import { UnrecoverableError, type Job, type JobsOptions, type Queue } from 'bullmq';
import type { z } from 'zod';
import { HOUR, MINUTE, type Clock } from '../src/util/clock.ts';
import { stableIdHash } from '../src/util/ids.ts';
import type { AccountSchedules } from '../src/accounts/lifecycle.ts';
import { runJob, type AnyJobDefinition, type JobDefinition } from './definition.ts';
import { feedSyncJob } from './feed-sync.ts';
import { expirySweepJob, housekeepingJob, mediaSweepJob, verifyJob } from './maintenance.ts';
import { mirrorMediaJob } from './mirror-media.ts';
import { publishFeedJob } from './publish-feed.ts';
import { QUEUE, type QueueKey, type Queues } from './queues.ts';
import { tokenRefreshJob } from './token-refresh.ts';
import { webhookDeliveryJob } from './webhook-delivery.ts';
import { mediaRebuildJob } from './media-rebuild.ts';
import { withinLimits } from './job-options.ts';
import { stableStringify } from '../src/feeds/slots.ts';

/**
 * The job catalogue: every kind of job feedmirror runs, and the only way to enqueue or schedule
 * one. CLI, dashboard, schedulers and flows all come through here, so a job's options cannot
 * drift between callers.
 *
 * How to add a job:
 *  1. Write the work as a service in src/ (it never imports bullmq; it takes plain deps).
 *  2. In jobs/<job-name>.ts, `defineJob({ name, queue, payload, options, process })`: payload is
 *     a zod schema of ids only (never a token or signed link, R-TOK-11); options carry attempts,
 *     backoff and retention; `process(deps, data, job)` is a thin adapter that calls the service.
 *  3. Add it to JOBS below. A new queue also needs its name in QUEUE (queues.ts) and a Worker
 *     in jobs/worker.ts (runQueue dispatches by job name; the start-up check refuses a queue
 *     whose jobs have no handler, or two definitions of one name).
 *  4. Enqueue with `enqueue(queues, yourJob, payload)`. Daily once-per-cluster work: add the
 *     definition to dailyJobs (worker.ts); the cron tick and the reconciler queue it with
 *     `enqueueDaily`. Per-account schedules: accountSchedulers below (the reconciler repairs
 *     them from PostgreSQL when Redis loses them).
 */
export const JOBS = {
  tokenRefresh: tokenRefreshJob,
  feedSync: feedSyncJob,
  mirrorMedia: mirrorMediaJob,
  publishFeed: publishFeedJob,
  expirySweep: expirySweepJob,
  mediaSweep: mediaSweepJob,
  housekeeping: housekeepingJob,
  webhookDelivery: webhookDeliveryJob,
  mediaRebuild: mediaRebuildJob,
  verify: verifyJob,
} as const satisfies Record<string, AnyJobDefinition>;

/** The definitions of one queue, by job name; throws when two definitions share a name. */
export function jobsOfQueue(
  queue: QueueKey,
  jobs: readonly AnyJobDefinition[] = Object.values(JOBS),
): Map<string, AnyJobDefinition> {
  const byName = new Map<string, AnyJobDefinition>();
  for (const def of jobs) {
    if (def.queue !== queue) continue;
    if (byName.has(def.name)) throw new Error(`two job definitions named ${def.name} on queue ${QUEUE[queue]}`);
    byName.set(def.name, def);
  }
  return byName;
}

/**
 * The processor of one queue's Worker: finds the job's definition by name and runs it (payload
 * validated). A job no definition knows fails for good: retrying cannot teach it a handler.
 */
export function queueProcessor<D>(
  queue: QueueKey,
  deps: D,
  jobs?: readonly AnyJobDefinition[],
): (job: Job) => Promise<unknown> {
  const byName = jobsOfQueue(queue, jobs);
  if (byName.size === 0) throw new Error(`no job is defined for queue ${QUEUE[queue]}`);
  return async (job: Job) => {
    const def = byName.get(job.name);
    if (!def) throw new UnrecoverableError(`no handler for job ${job.name} on queue ${QUEUE[queue]}`);
    return runJob(def, deps, job);
  };
}

/** Per-call additions to a definition's options (a job id, a delay, a priority). */
export type EnqueueOptions = Pick<JobsOptions, 'jobId' | 'delay' | 'priority'>;

/**
 * Add one job: its payload validated by the definition's schema, its options from the definition,
 * brought within BullMQ's limits (R-OWN-9: a priority out of range would fail the add itself).
 */
export async function enqueue<P extends z.ZodType>(
  queues: Partial<Queues>,
  def: JobDefinition<P, never, unknown> | AnyJobDefinition,
  payload: z.input<P>,
  opts: EnqueueOptions = {},
): Promise<Job> {
  const queue = queues[def.queue];
  if (!queue) throw new Error(`${def.name}: queue ${QUEUE[def.queue]} is not open in this process`);
  const data = def.payload.parse(payload);
  return queue.add(def.name, data, withinLimits(def.name, { ...def.options, ...opts }));
}

export { isManualJobId, manualJobId } from './manual-ids.ts';

// ---- per-account schedules --------------------------------------------------------------------

/**
 * Per-account job schedulers (BullMQ v6: upsertJobScheduler; repeatable jobs are gone). Each
 * account gets its own token-refresh and feed-sync schedulers, so every account runs on its own
 * clock (R-TOK-8) and one account's failure never delays another's.
 */
export interface ScheduleSettings {
  /** How often the refresh check runs; the refresh itself happens when the token is due. */
  refreshCheckEveryMs: number;
  syncEveryMs: number;
}

export const DEFAULT_SCHEDULES: ScheduleSettings = { refreshCheckEveryMs: 6 * HOUR, syncEveryMs: 60 * MINUTE };

export const refreshSchedulerId = (accountId: string) => `token-refresh:${accountId}`;
export const syncSchedulerId = (accountId: string) => `feed-sync:${accountId}`;

/** The queues an account's schedules live on; a token-only process may have no feed-sync queue. */
export type AccountQueues = Pick<Queues, 'tokenRefresh'> & Partial<Pick<Queues, 'feedSync'>>;

/** An account's schedulers: which queue, which definition, how often. */
export function accountSchedulers(queues: AccountQueues, accountId: string, settings: ScheduleSettings) {
  const list: Array<{ id: string; queue: Queue; def: AnyJobDefinition; everyMs: number }> = [
    {
      id: refreshSchedulerId(accountId),
      queue: queues.tokenRefresh,
      def: tokenRefreshJob,
      everyMs: settings.refreshCheckEveryMs,
    },
  ];
  if (queues.feedSync)
    list.push({
      id: syncSchedulerId(accountId),
      queue: queues.feedSync,
      def: feedSyncJob,
      everyMs: settings.syncEveryMs,
    });
  return list;
}

/**
 * Where in its interval an account's schedule falls: a stable hash of the account id, so 10,000
 * accounts spread evenly over the hour (and over the refresh check's hours) instead of falling
 * due together. BullMQ's own phase is the moment a scheduler is created, so accounts scheduled
 * together (a worker rebuilding schedules after Redis was lost, an import) would all run at the
 * same second of every hour. Stable, so every worker and every rebuild agree.
 */
export function scheduleOffsetMs(accountId: string, everyMs: number): number {
  // BullMQ treats offset 0 as "no offset": keep it in [1, everyMs - 1].
  return 1 + (stableIdHash(accountId) % Math.max(1, everyMs - 1));
}

/**
 * Idempotent: upserting an existing scheduler keeps one scheduler, never two. A new schedule also
 * runs once now (a connected account is synced at once, as before schedules were spread).
 */
export async function scheduleAccount(
  queues: AccountQueues,
  accountId: string,
  settings: ScheduleSettings = DEFAULT_SCHEDULES,
): Promise<void> {
  // Both schedulers at once: a worker's start schedules every account, and round trips add up.
  await Promise.all(
    accountSchedulers(queues, accountId, settings).map(async (s) => {
      const isNew = !(await s.queue.getJobScheduler(s.id));
      await writeScheduler(s, accountId);
      if (isNew) await runScheduledOnceNow(s, accountId);
    }),
  );
}

/** Schedulers read per round trip when the schedulers are compared (scheduleAccounts, the reconciler). */
export const SCHEDULER_PAGE = 1000;

/**
 * A queue's job schedulers, a page at a time: their ids and the next slot of each, as ZSCAN walks
 * BullMQ's `repeat` set. Paging by rank (ZRANGE start..end, as getJobSchedulers pages) loses
 * schedulers while jobs run: a run moves its scheduler's score (its next slot) behind the pages
 * not yet read, every scheduler after it shifts down a rank, and one at each page boundary is
 * never seen. The reconciler then "repaired" schedulers that were there, and BullMQ's upsert took
 * a job that was due out of the waiting list and added it again: behind every other waiting job,
 * or back at its slot when that was still ahead. ZSCAN returns every member present for the
 * whole scan (some twice: callers count each id once).
 */
export async function* schedulerPages(
  queue: Queue,
  count = SCHEDULER_PAGE,
): AsyncGenerator<Array<{ key: string; next: number }>> {
  const client = await queue.getBackend().client;
  let cursor = '0';
  do {
    const [nextCursor, flat] = (await client.runCommand('zscan', [queue.toKey('repeat'), cursor, 'COUNT', count])) as [
      string,
      string[],
    ];
    cursor = nextCursor;
    const page: Array<{ key: string; next: number }> = [];
    for (let i = 0; i + 1 < flat.length; i += 2) page.push({ key: flat[i]!, next: Number(flat[i + 1]) });
    if (page.length > 0) yield page;
  } while (cursor !== '0');
}

/**
 * The intervals of the given schedulers in one pipeline. BullMQ's getJobSchedulers sends one
 * HGETALL per scheduler, each a write to the socket of its own: at 100,000 accounts (200,000
 * schedulers) the reconciler's pass every RECONCILE_INTERVAL_SECONDS cost the worker more CPU than
 * a minute of its syncs. The field read is BullMQ's own (`repeat:<id>` hash, `every`):
 * test/integration/reconcile.test.ts compares this with getJobSchedulers.
 */
export async function schedulerIntervals(
  queue: Queue,
  keys: readonly string[],
): Promise<Array<{ key: string; every: number | undefined }>> {
  if (keys.length === 0) return [];
  const client = await queue.getBackend().client;
  const pipeline = client.pipeline();
  for (const id of keys) pipeline.runCommand('hget', [queue.toKey(`repeat:${id}`), 'every']);
  const replies = (await pipeline.exec()) ?? [];
  return keys.map((key, i) => {
    const every = replies[i]?.[1];
    return { key, every: typeof every === 'string' && every !== '' ? Number(every) : undefined };
  });
}
/** An account's scheduler id; its account id is the first group. */
export const ACCOUNT_SCHEDULER_KEY = /^(?:token-refresh|feed-sync):(.+)$/;

/** Write one of an account's schedulers as its definition and the settings say (BullMQ upsert). */
export async function writeScheduler(
  s: Pick<ReturnType<typeof accountSchedulers>[number], 'id' | 'queue' | 'def' | 'everyMs'>,
  accountId: string,
): Promise<void> {
  await s.queue.upsertJobScheduler(
    s.id,
    { every: s.everyMs, offset: scheduleOffsetMs(accountId, s.everyMs) },
    { name: s.def.name, data: s.def.payload.parse({ accountId }), opts: withinLimits(s.def.name, s.def.options) },
  );
}

export interface ScheduleAccountsResult {
  /** Schedulers already as scheduleAccount would write them, left alone. */
  unchanged: number;
  /** Schedulers written: absent (and then run once now), or different. */
  written: number;
}

/**
 * Every given account's schedulers as scheduleAccount leaves them, writing only those that are
 * not. A worker's start calls this on every scheduled account. Upserting a scheduler that is
 * already right is not free in BullMQ: it removes the scheduler's next job and adds it again, so
 * 100,000 accounts meant 200,000 rewrites at every start of every worker. Here the schedulers are
 * read a page at a time and one is left alone when its interval, offset, job name, payload and
 * options are what scheduleAccount would write and its next job is in Redis; anything else
 * (absent, another interval or option, its next job lost) is upserted as before, and an absent one
 * also runs once now, as scheduleAccount does.
 */
export async function scheduleAccounts(
  queues: AccountQueues,
  accountIds: readonly string[],
  settings: ScheduleSettings = DEFAULT_SCHEDULES,
  concurrency = 16,
): Promise<ScheduleAccountsResult> {
  const wanted = new Set(accountIds);
  // Scheduler id -> already right (true) or present but different (false).
  const present = new Map<string, boolean>();
  const probe = accountIds.length > 0 ? accountSchedulers(queues, accountIds[0]!, settings) : [];
  for (const { queue, def, everyMs } of probe) {
    // BullMQ keeps the queue's default job options merged into the template.
    const opts = stableStringify({ ...queue.defaultJobOptions, ...withinLimits(def.name, def.options) });
    for await (const ids of schedulerPages(queue)) {
      const page = await Promise.all(ids.map((s) => queue.getJobScheduler(s.key)));
      const candidates: Array<{ key: string; nextJobId: string }> = [];
      for (const s of page) {
        if (!s) continue; // removed since the scan saw it
        const accountId = ACCOUNT_SCHEDULER_KEY.exec(s.key)?.[1];
        if (accountId === undefined || !wanted.has(accountId) || present.get(s.key) === true) continue;
        const right =
          s.name === def.name &&
          s.every === everyMs &&
          s.offset === scheduleOffsetMs(accountId, everyMs) &&
          s.next !== undefined &&
          stableStringify(s.template?.data ?? null) === stableStringify(def.payload.parse({ accountId })) &&
          stableStringify(s.template?.opts ?? null) === opts;
        present.set(s.key, false);
        if (right) candidates.push({ key: s.key, nextJobId: `repeat:${s.key}:${s.next}` });
      }
      if (candidates.length > 0) {
        // Its next job must be there too: a scheduler whose job was lost would never run again.
        const client = await queue.getBackend().client;
        const pipeline = client.pipeline();
        for (const c of candidates) pipeline.runCommand('exists', [queue.toKey(c.nextJobId)]);
        const found = (await pipeline.exec()) ?? [];
        candidates.forEach((c, i) => {
          if (found[i]?.[1] === 1) present.set(c.key, true);
        });
      }
    }
  }
  const result: ScheduleAccountsResult = { unchanged: 0, written: 0 };
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, accountIds.length) }, async () => {
      while (next < accountIds.length) {
        const accountId = accountIds[next++]!;
        for (const s of accountSchedulers(queues, accountId, settings)) {
          const state = present.get(s.id);
          if (state === true) {
            result.unchanged++;
            continue;
          }
          await writeScheduler(s, accountId);
          if (state === undefined) await runScheduledOnceNow(s, accountId);
          result.written++;
        }
      }
    }),
  );
  return result;
}

/**
 * One run of an account's scheduled job now, outside its slot: a new schedule's first run (a
 * connected account is synced at once), and a schedule the reconciler rebuilt for an account
 * that has never been synced (connected while Redis was away).
 */
export async function runScheduledOnceNow(
  s: Pick<ReturnType<typeof accountSchedulers>[number], 'id' | 'queue' | 'def'>,
  accountId: string,
): Promise<void> {
  await s.queue.add(
    s.def.name,
    s.def.payload.parse({ accountId }),
    withinLimits(s.def.name, { ...s.def.options, jobId: `first-${s.id.replace(/:/g, '-')}-${Date.now()}` }),
  );
}

/** The lifecycle's view of the schedules (src/accounts/lifecycle.ts AccountSchedules). */
export function accountSchedules(queues: AccountQueues, settings: ScheduleSettings): AccountSchedules {
  return {
    schedule: (accountId) => scheduleAccount(queues, accountId, settings),
    unschedule: (accountId) => unscheduleAccount(queues, accountId),
  };
}

/** Stop an account's schedules (removed, or needs its owner to log in again: R-TOK-10). */
export async function unscheduleAccount(queues: AccountQueues, accountId: string): Promise<void> {
  await queues.tokenRefresh.removeJobScheduler(refreshSchedulerId(accountId));
  if (queues.feedSync) await queues.feedSync.removeJobScheduler(syncSchedulerId(accountId));
}

// ---- daily, once per cluster ------------------------------------------------------------------

export type DailyJob = typeof expirySweepJob | typeof mediaSweepJob | typeof housekeepingJob | typeof verifyJob;

/** One job id per job and UTC day (from the injectable clock): BullMQ keeps one job per id. */
export function dailyJobId(def: Pick<AnyJobDefinition, 'name'>, day: Date): string {
  return `${def.name}-${day.toISOString().slice(0, 10)}`;
}

/**
 * Queue today's run of a daily job. Each worker's cron tick (and its start-up, to catch up after
 * downtime) calls this; completed jobs are kept for days, so a second add the same day is a no-op.
 */
export async function enqueueDaily(
  queues: Pick<Queues, 'maintenance'>,
  def: AnyJobDefinition,
  clock: Clock,
): Promise<string> {
  const jobId = dailyJobId(def, clock.now());
  await enqueue(queues, def, {}, { jobId });
  return jobId;
}
