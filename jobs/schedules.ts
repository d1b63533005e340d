import type { Queue } from 'bullmq';
import { HOUR, MINUTE } from '../src/util/clock.ts';
import { QUEUE } from './queues.ts';

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

export interface AccountQueues {
  tokenRefresh: Queue;
  feedSync?: Queue;
}

/** Idempotent: upserting an existing scheduler keeps one scheduler, never two. */
export async function scheduleAccount(queues: AccountQueues, accountId: string, settings: ScheduleSettings = DEFAULT_SCHEDULES): Promise<void> {
  await queues.tokenRefresh.upsertJobScheduler(
    refreshSchedulerId(accountId),
    { every: settings.refreshCheckEveryMs },
    { name: QUEUE.tokenRefresh, data: { accountId }, opts: { attempts: 1 } },
  );
  if (queues.feedSync) {
    await queues.feedSync.upsertJobScheduler(
      syncSchedulerId(accountId),
      { every: settings.syncEveryMs },
      { name: QUEUE.feedSync, data: { accountId }, opts: { attempts: 3, backoff: { type: 'exponential', delay: 60_000 } } },
    );
  }
}

/** Stop an account's schedules (removed, or needs its owner to log in again: R-TOK-10). */
export async function unscheduleAccount(queues: AccountQueues, accountId: string): Promise<void> {
  await queues.tokenRefresh.removeJobScheduler(refreshSchedulerId(accountId));
  if (queues.feedSync) await queues.feedSync.removeJobScheduler(syncSchedulerId(accountId));
}
