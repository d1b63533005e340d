import type { Job, JobsOptions } from 'bullmq';
import type { z } from 'zod';
import type { Clock } from '../src/util/clock.ts';
import type { AnyJobDefinition, JobDefinition } from './definition.ts';
import { withinLimits } from './job-options.ts';
import { QUEUE, type Queues } from './queues.ts';

/**
 * The one way to add a job: CLI, dashboard, flows' callers and the reconciler all come through
 * here, so a job's options come from its definition (jobs/catalogue.ts) and cannot drift between
 * callers. Per-account schedules are jobs/schedules.ts.
 */

/** Per-call additions to a definition's options (a job id, a delay, a priority). */
export type EnqueueOptions = Pick<JobsOptions, 'jobId' | 'delay' | 'priority'>;

/**
 * Add one job: its payload validated by the definition's schema, its options from the definition,
 * brought within BullMQ's limits (R-OWN-9: a priority out of range would fail the add itself).
 */
export async function enqueue<P extends z.ZodType>(
  queues: Partial<Queues>,
  def: JobDefinition<P> | AnyJobDefinition,
  payload: z.input<P>,
  opts: EnqueueOptions = {},
): Promise<Job> {
  const queue = queues[def.queue];
  if (!queue) throw new Error(`${def.name}: queue ${QUEUE[def.queue]} is not open in this process`);
  const data = def.payload.parse(payload);
  return queue.add(def.name, data, withinLimits(def.name, { ...def.options, ...opts }));
}

/** One job id per job and UTC day (from the injectable clock): BullMQ keeps one job per id. */
export function dailyJobId(def: Pick<AnyJobDefinition, 'name'>, day: Date): string {
  return `${def.name}-${day.toISOString().slice(0, 10)}`;
}

/**
 * Queue today's run of a daily, once-per-cluster job. Each worker's cron tick (and its start-up,
 * to catch up after downtime) calls this; completed jobs are kept for days, so a second add the
 * same day is a no-op.
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
