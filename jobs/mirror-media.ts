import { z } from 'zod';
import { UnrecoverableError, type Job, type JobsOptions } from 'bullmq';
import { copySlot, noteCopyFailure, type CopyOutcome } from '../src/feeds/copy-slot.ts';
import type { FeedDeps } from '../src/feeds/deps.ts';
import { MirrorError } from '../src/mirror/errors.ts';
import { StorageError } from '../src/storage/errors.ts';
import { PlatformError, RateLimitedError } from '../src/platform/errors.ts';
import { idSchema } from '../src/util/ids.ts';
import { defineJob } from './definition.ts';
import { retryOptions, type RetrySettings } from './queues.ts';

/**
 * mirror-media: copy one image (cover or photo slide) of one post into storage (R-LNK-5). A child
 * of the account's publish-feed flow. The signed link is read from Postgres at run time, not from
 * the job data, so a retry after the link died finds the renewed one (or renews it, R-LNK-3).
 */
export const mirrorMediaPayload = z.object({
  accountId: idSchema('account id'),
  mediaId: idSchema('media id'),
  slot: z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'must be a slot like cover or slide-1'),
});
export type MirrorMediaPayload = z.infer<typeof mirrorMediaPayload>;

export type MirrorJobSettings = RetrySettings;
export const DEFAULT_MIRROR_JOBS: MirrorJobSettings = { attempts: 5, backoffMs: 10_000 };

export function mirrorJobOptions(settings: MirrorJobSettings = DEFAULT_MIRROR_JOBS): JobsOptions {
  return {
    ...retryOptions(settings),
    // A copy that fails for good must not hold the feed back: the parent publishes without that
    // image (its post waits for the next sync) instead of waiting forever.
    ignoreDependencyOnFailure: true,
    removeOnComplete: { age: 24 * 3600, count: 1000 },
    removeOnFail: { age: 7 * 24 * 3600, count: 5000 },
  };
}

/** Whether a plain retry may help; never-healing failures stop at once (UnrecoverableError). */
function retryable(err: unknown): boolean {
  if (err instanceof MirrorError || err instanceof StorageError || err instanceof PlatformError) return err.retryable;
  return true; // database hiccups and the unexpected: retry with backoff
}

/**
 * The job's very first start: no earlier attempt can have uploaded anything. attemptsStarted
 * counts every start (a stalled job's re-delivery and a rate-limit delay included), attemptsMade
 * every failure; either above its first value means an earlier run may have left a copy behind.
 */
export function isFirstAttempt(job: Pick<Job, 'attemptsMade' | 'attemptsStarted'>): boolean {
  return job.attemptsMade === 0 && job.attemptsStarted <= 1;
}

/** The job's return value: small; the image details are in storage and Postgres. */
export type MirrorMediaReturn = { outcome: CopyOutcome['outcome']; renewed?: boolean; key?: string; reason?: string };

export const mirrorMediaJob = defineJob({
  name: 'mirror-media',
  queue: 'mirrorMedia',
  payload: mirrorMediaPayload,
  options: mirrorJobOptions(),
  async process(deps: FeedDeps, payload, job): Promise<MirrorMediaReturn> {
    try {
      const r = await copySlot(deps, payload, { firstAttempt: isFirstAttempt(job) });
      if (r.outcome === 'copied' || r.outcome === 'reused')
        return { outcome: r.outcome, renewed: r.renewed, key: r.image.key };
      return r;
    } catch (err) {
      // R-OWN-1: a rate-limited link renewal goes back up as it is: the worker delays the job by
      // the time the platform states (jobs/rate-limits.ts), without spending an attempt.
      if (err instanceof RateLimitedError) throw err;
      const canRetry = retryable(err);
      // The account's health counts failing copies: each failed attempt is recorded, with whether
      // the job gives up now (no attempt left, or an error no retry heals); a success clears it.
      await noteCopyFailure(deps, payload, err, {
        gaveUp: !canRetry || job.attemptsMade + 1 >= (job.opts.attempts ?? 1),
      });
      if (!canRetry) throw new UnrecoverableError((err as Error).message);
      throw err;
    }
  },
});
