import type { Queue } from 'bullmq';
import type { Clock } from '../src/util/clock.ts';

/**
 * The daily expiry sweep runs once per day across however many workers run: each worker's
 * node-cron tick (and its start-up, to catch up after downtime) adds the day's job under one
 * jobId, and BullMQ keeps a single job per id. The day comes from the injectable clock.
 */
export const EXPIRY_SWEEP_JOB = 'expiry-sweep';

export function sweepJobId(day: Date): string {
  return `${EXPIRY_SWEEP_JOB}-${day.toISOString().slice(0, 10)}`;
}

export async function enqueueDailySweep(maintenance: Queue, clock: Clock): Promise<string> {
  const jobId = sweepJobId(clock.now());
  // Completed sweep jobs are kept for days (queues.ts), so a second add the same day is a no-op.
  await maintenance.add(EXPIRY_SWEEP_JOB, {}, { jobId, attempts: 3, backoff: { type: 'exponential', delay: 60_000 } });
  return jobId;
}
