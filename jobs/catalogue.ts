import { UnrecoverableError, type Job } from 'bullmq';
import { runJob, type AnyJobDefinition } from './definition.ts';
import { feedSyncJob } from './feed-sync.ts';
import { expirySweepJob, housekeepingJob, mediaSweepJob, verifyJob } from './maintenance.ts';
import { mirrorMediaJob } from './mirror-media.ts';
import { publishFeedJob } from './publish-feed.ts';
import { QUEUE, type QueueKey } from './queues.ts';
import { tokenRefreshJob } from './token-refresh.ts';
import { webhookDeliveryJob } from './webhook-delivery.ts';
import { mediaRebuildJob } from './media-rebuild.ts';

/**
 * The job catalogue: every kind of job feedmirror runs, by queue, and the processors that run
 * them. Adding a job goes through three modules, each with one concern: this registry, the one way
 * to add a job (jobs/enqueue.ts) and the per-account schedules (jobs/schedules.ts). Nothing here
 * reads BullMQ's Redis keys: that is jobs/bullmq-keys.ts alone.
 *
 * How to add a job:
 *  1. Write the work as a service in src/ (it never imports bullmq; it takes plain deps).
 *  2. In jobs/<job-name>.ts, `defineJob({ name, queue, payload, options, process })`: payload is
 *     a zod schema of ids only (never a token or signed link, R-TOK-11); options carry attempts,
 *     backoff and retention; `process(deps, data, job)` is a thin adapter that calls the service.
 *  3. Add it to JOBS below. A new queue also needs its name in QUEUE (queues.ts) and a Worker in
 *     jobs/worker.ts (queueProcessor dispatches by job name). The worker's start-up check
 *     (checkQueueCoverage) refuses a queue that has definitions and no Worker, a Worker whose
 *     queue has no definitions, and two definitions of one name.
 *  4. Enqueue with `enqueue(queues, yourJob, payload)` (jobs/enqueue.ts). Daily once-per-cluster
 *     work: add the definition to dailyJobs (worker.ts); the cron tick and the reconciler queue it
 *     with `enqueueDaily`. Per-account schedules: accountSchedulers (jobs/schedules.ts; the
 *     reconciler repairs them from PostgreSQL when Redis loses them).
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

export type DailyJob = typeof expirySweepJob | typeof mediaSweepJob | typeof housekeepingJob | typeof verifyJob;

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
export function queueProcessor(
  queue: QueueKey,
  deps: unknown,
  jobs?: readonly AnyJobDefinition[],
): (job: Job) => Promise<unknown> {
  const byName = jobsOfQueue(queue, jobs);
  if (byName.size === 0) throw new Error(`no job is defined for queue ${QUEUE[queue]}`);
  return async (job: Job) => {
    const def = byName.get(job.name);
    if (!def) throw new UnrecoverableError(`no handler for job ${job.name} on queue ${QUEUE[queue]}`);
    return runJob<AnyJobDefinition['payload'], unknown, unknown>(def, deps, job);
  };
}

/**
 * The worker's start-up check, both ways: every queue that has job definitions has a Worker in
 * this process (or is one the process leaves to others on purpose: no feed pipeline, no webhook
 * queue), and every Worker's queue has definitions. A queue without a Worker would take jobs that
 * nothing ever runs; a Worker without definitions would fail every job it takes. Throws one line
 * naming every mismatch; checks one name per definition on the way.
 */
export function checkQueueCoverage(
  running: readonly QueueKey[],
  leftToOthers: readonly QueueKey[] = [],
  jobs: readonly AnyJobDefinition[] = Object.values(JOBS),
): void {
  const problems: string[] = [];
  for (const queue of Object.keys(QUEUE) as QueueKey[]) {
    const defined = [...jobsOfQueue(queue, jobs).keys()];
    const worked = running.includes(queue);
    if (defined.length > 0 && !worked && !leftToOthers.includes(queue))
      problems.push(`queue ${QUEUE[queue]} has jobs (${defined.join(', ')}) but no worker runs it`);
    if (defined.length === 0 && worked)
      problems.push(`a worker runs queue ${QUEUE[queue]}, which has no job definitions`);
  }
  if (problems.length > 0) throw new Error(`job catalogue and workers disagree: ${problems.join('; ')}`);
}
