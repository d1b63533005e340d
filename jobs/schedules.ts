import type { Queue } from 'bullmq';
import { HOUR, MINUTE } from '../src/util/clock.ts';
import { stableIdHash } from '../src/util/ids.ts';
import { stableStringify } from '../src/util/stable-stringify.ts';
import type { AccountSchedules } from '../src/accounts/lifecycle.ts';
import type { AnyJobDefinition } from './definition.ts';
import { feedSyncJob } from './feed-sync.ts';
import { tokenRefreshJob } from './token-refresh.ts';
import { withinLimits } from './job-options.ts';
import type { Queues } from './queues.ts';
import { schedulerJobsPresent, schedulerPages } from './bullmq-keys.ts';

/**
 * Per-account job schedulers (BullMQ v6: upsertJobScheduler; repeatable jobs are gone). Each
 * account gets its own token-refresh and feed-sync schedulers, so every account runs on its own
 * clock (R-TOK-8) and one account's failure never delays another's. The reconciler
 * (reconcile.ts) repairs them from PostgreSQL when Redis loses them.
 */
export interface ScheduleSettings {
  /** How often the refresh check runs; the refresh itself happens when the token is due. */
  refreshCheckEveryMs: number;
  syncEveryMs: number;
}

export const DEFAULT_SCHEDULES: ScheduleSettings = { refreshCheckEveryMs: 6 * HOUR, syncEveryMs: 60 * MINUTE };

export const refreshSchedulerId = (accountId: string) => `token-refresh:${accountId}`;
export const syncSchedulerId = (accountId: string) => `feed-sync:${accountId}`;
/** An account's scheduler id; its account id is the first group. */
export const ACCOUNT_SCHEDULER_KEY = /^(?:token-refresh|feed-sync):(.+)$/;

/** The queues an account's schedules live on; a token-only process may have no feed-sync queue. */
export type AccountQueues = Pick<Queues, 'tokenRefresh'> & Partial<Pick<Queues, 'feedSync'>>;

/** One of an account's schedulers: which queue, which definition, how often. */
export interface AccountScheduler {
  id: string;
  queue: Queue;
  def: AnyJobDefinition;
  everyMs: number;
}

/** An account's schedulers. */
export function accountSchedulers(
  queues: AccountQueues,
  accountId: string,
  settings: ScheduleSettings,
): AccountScheduler[] {
  const list: AccountScheduler[] = [
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
 * Where in its interval an account's schedule falls: a stable hash of the account id, so the
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
 * runs once now (a connected account is synced at once, not at its slot in the hour).
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

/** Write one of an account's schedulers as its definition and the settings say (BullMQ upsert). */
export async function writeScheduler(
  s: Pick<AccountScheduler, 'id' | 'queue' | 'def' | 'everyMs'>,
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
 * already right is not free in BullMQ: it removes the scheduler's next job and adds it again, for
 * every account at every start of every worker. Here the schedulers are read a page at a time and
 * one is left alone when its interval, offset, job name, payload and options are what
 * scheduleAccount would write and its next job is in Redis; anything else (absent, another
 * interval or option, its next job lost) is upserted, and an absent one also runs once now, as
 * scheduleAccount does.
 */
export async function scheduleAccounts(
  queues: AccountQueues,
  accountIds: readonly string[],
  settings: ScheduleSettings = DEFAULT_SCHEDULES,
  concurrency = 16,
): Promise<ScheduleAccountsResult> {
  const present = await readPresentSchedulers(queues, accountIds, settings);
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
 * The given accounts' schedulers as Redis holds them: scheduler id -> already as scheduleAccount
 * would write it, next job included (true), or present but different (false). Absent: not there.
 */
async function readPresentSchedulers(
  queues: AccountQueues,
  accountIds: readonly string[],
  settings: ScheduleSettings,
): Promise<Map<string, boolean>> {
  const wanted = new Set(accountIds);
  const present = new Map<string, boolean>();
  const probe = accountIds.length > 0 ? accountSchedulers(queues, accountIds[0]!, settings) : [];
  for (const { queue, def, everyMs } of probe) {
    // BullMQ keeps the queue's default job options merged into the template.
    const opts = stableStringify({ ...queue.defaultJobOptions, ...withinLimits(def.name, def.options) });
    for await (const ids of schedulerPages(queue)) {
      const page = await Promise.all(ids.map((s) => queue.getJobScheduler(s.key)));
      const candidates: Array<{ key: string; next: number }> = [];
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
        if (right) candidates.push({ key: s.key, next: s.next! });
      }
      // Its next job must be there too: a scheduler whose job was lost would never run again.
      const found = await schedulerJobsPresent(queue, candidates);
      candidates.forEach((c, i) => {
        if (found[i]) present.set(c.key, true);
      });
    }
  }
  return present;
}

/**
 * One run of an account's scheduled job now, outside its slot: a new schedule's first run (a
 * connected account is synced at once), and a schedule the reconciler rebuilt for an account
 * that has never been synced (connected while Redis was away).
 */
export async function runScheduledOnceNow(
  s: Pick<AccountScheduler, 'id' | 'queue' | 'def'>,
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
