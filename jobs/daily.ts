import type { Queue } from 'bullmq';
import type { Clock } from '../src/util/clock.ts';

/**
 * Daily maintenance jobs run once per day across however many workers run: each worker's
 * node-cron tick (and its start-up, to catch up after downtime) adds the day's job under one
 * jobId, and BullMQ keeps a single job per id. The day comes from the injectable clock.
 */
export const EXPIRY_SWEEP_JOB = 'expiry-sweep';
export const MEDIA_SWEEP_JOB = 'media-sweep';
export type DailyJob = typeof EXPIRY_SWEEP_JOB | typeof MEDIA_SWEEP_JOB;

export function dailyJobId(name: DailyJob, day: Date): string {
  return `${name}-${day.toISOString().slice(0, 10)}`;
}

export async function enqueueDaily(maintenance: Queue, name: DailyJob, clock: Clock): Promise<string> {
  const jobId = dailyJobId(name, clock.now());
  // Completed jobs are kept for days (queues.ts), so a second add the same day is a no-op.
  await maintenance.add(name, {}, { jobId, attempts: 3, backoff: { type: 'exponential', delay: 60_000 } });
  return jobId;
}
