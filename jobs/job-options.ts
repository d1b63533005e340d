import { PRIORITY_LIMIT, type JobsOptions } from 'bullmq';

/**
 * Job options within BullMQ's own limits (R-OWN-9), checked where every job is added (catalogue
 * `enqueue`, the account schedulers, the sync flow). BullMQ refuses a job whose options break them
 * ("Priority should be between 0 and 2097151"), and a sync adding such a child fails on every
 * attempt, every hour: a copy with an unknown link expiry once asked for priority 2^21 and stopped
 * its account's feed for good. The limits are BullMQ's own exports, never copies of their values.
 */
export { PRIORITY_LIMIT };

/** Options BullMQ allows one of at most (Job.validateOptions). */
const EXCLUSIVE = [
  'removeDependencyOnFailure',
  'failParentOnFailure',
  'continueParentOnFailure',
  'ignoreDependencyOnFailure',
] as const;

export class JobOptionsError extends Error {
  override readonly name = 'JobOptionsError';
}

/**
 * A priority BullMQ accepts: an integer from 1 (first) to PRIORITY_LIMIT (last). A priority is an
 * ordering hint, so one out of range (or not a number) is brought to the nearest end rather than
 * failing the job; 0 and undefined keep BullMQ's "no priority".
 */
export function clampPriority(priority: number): number {
  if (!Number.isFinite(priority)) return priority > 0 ? PRIORITY_LIMIT : 1;
  return Math.min(Math.max(Math.round(priority), 1), PRIORITY_LIMIT);
}

/**
 * The options as BullMQ will accept them: the priority clamped (clampPriority), anything else
 * BullMQ would refuse thrown as JobOptionsError naming the job and the option, before any write.
 */
export function withinLimits(name: string, opts: JobsOptions): JobsOptions {
  const out: JobsOptions = { ...opts };
  if (out.priority !== undefined && out.priority !== 0) out.priority = clampPriority(out.priority);
  const fail = (what: string) => {
    throw new JobOptionsError(`job ${name}: ${what}`);
  };
  const exclusive = EXCLUSIVE.filter((k) => out[k]);
  if (exclusive.length > 1) fail(`options ${exclusive.join(', ')} cannot be used together`);
  if (out.attempts !== undefined && !(Number.isInteger(out.attempts) && out.attempts >= 1))
    fail(`attempts must be a whole number of at least 1 (got ${out.attempts})`);
  if (out.delay !== undefined && !(Number.isFinite(out.delay) && out.delay >= 0))
    fail(`delay must be a number of milliseconds of at least 0 (got ${out.delay})`);
  if (typeof out.backoff === 'object') {
    const { delay, jitter } = out.backoff;
    if (delay !== undefined && !(Number.isFinite(delay) && delay >= 0)) fail(`backoff delay must be at least 0`);
    if (jitter !== undefined && !(jitter >= 0 && jitter <= 1)) fail(`backoff jitter must be between 0 and 1`);
  }
  if (out.jobId !== undefined) {
    if (`${parseInt(out.jobId, 10)}` === out.jobId) fail(`a job id cannot be an integer (${out.jobId})`);
    if (out.jobId.includes(':') && out.jobId.split(':').length !== 3)
      fail(`a job id cannot contain ':' (${out.jobId})`);
  }
  return out;
}
