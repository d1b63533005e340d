import type { Job } from 'bullmq';
import type { Db } from '../src/store/db.ts';
import { recordSyncRequest, type SyncRequester } from '../src/store/sync-requests.ts';
import type { Clock } from '../src/util/clock.ts';
import { JOBS } from './catalogue.ts';
import { enqueue } from './enqueue.ts';
import { manualJobId } from './manual-ids.ts';
import type { Queues } from './queues.ts';

/**
 * R-NET-7: an operator's "sync now" (`feedmirror sync <id>`, the dashboard's button), one code path for
 * both: the request is recorded in PostgreSQL first, then the job queued under the recorded id.
 * The feed-sync job clears the request once it has run; until then the reconciler queues it
 * again whenever Redis no longer has the job (jobs/reconcile.ts).
 */
export async function requestSync(
  deps: { db: Db; queues: Partial<Queues>; clock: Clock },
  accountId: string,
  by: SyncRequester,
): Promise<Job> {
  const jobId = manualJobId('sync', accountId, deps.clock);
  try {
    await recordSyncRequest(deps.db, { accountId, jobId, requestedAt: deps.clock.now(), requestedBy: by });
  } catch (err) {
    // 23503: no such account (the request references it).
    if ((err as { code?: unknown }).code === '23503')
      throw new Error(`no account ${accountId}; \`feedmirror accounts list\` shows the connected ones`, { cause: err });
    throw err;
  }
  return enqueue(deps.queues, JOBS.feedSync, { accountId }, { jobId });
}
