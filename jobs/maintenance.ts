import { z } from 'zod';
import { HOUR } from '../src/util/clock.ts';
import { runExpirySweep, type SweepDeps, type SweepResult } from '../src/alerts/sweep.ts';
import { runMediaSweep, type MediaSweepResult } from '../src/feeds/media-sweep.ts';
import type { ObjectStorage } from '../src/storage/types.ts';
import { openDeletions, type DeleteCap } from '../src/deletion/guard.ts';
import { runHousekeeping, type HousekeepingResult } from '../src/store/housekeeping.ts';
import { runVerify, type VerifyCounts, type VerifyDeps } from '../src/verify/verify.ts';
import { defineJob } from './definition.ts';
import { retryOptions } from './queues.ts';

/**
 * The daily maintenance jobs, run once per day across however many workers run (catalogue.ts
 * enqueueDaily: one jobId per job and day).
 */
export interface MaintenanceDeps extends SweepDeps {
  /** The feed pipeline's storage; without it (token-only worker) the media sweep has nothing to do. */
  storage?: ObjectStorage;
  /** R-DEL-4: the deletion guard's cap (DELETE_CAP_OBJECTS, DELETE_CAP_SHARE). */
  deleteCap?: DeleteCap;
  /** Account events older than this are deleted by the housekeeping job (EVENT_RETENTION_DAYS). */
  eventRetentionDays: number;
  /** The daily verify (VERIFY_DAILY): the feed pipeline's deps and the schedules; none = not run here. */
  verify?: { deps: VerifyDeps; repair: boolean; orphanGraceMs: number };
}

const DAILY_OPTIONS = {
  ...retryOptions({ attempts: 3, backoffMs: 60_000 }),
  // Kept for days: a second add of the same day's jobId is then a no-op.
  removeOnComplete: { age: 7 * 24 * 3600, count: 1000 },
  removeOnFail: { age: 30 * 24 * 3600, count: 5000 },
};

/** Expiry alerts (R-TOK-9, R-TOK-10). */
export const expirySweepJob = defineJob({
  name: 'expiry-sweep',
  queue: 'maintenance',
  payload: z.object({}),
  options: DAILY_OPTIONS,
  process: (deps: MaintenanceDeps): Promise<SweepResult> => runExpirySweep(deps),
});

/**
 * Objects of posts that no longer exist (R-LNK-6). Where the daily verify runs (VERIFY_DAILY not
 * off) it sweeps on its own listing of each account (one listing a day for both), and this job
 * lists nothing; with verify off it lists and sweeps on its own.
 */
export const mediaSweepJob = defineJob({
  name: 'media-sweep',
  queue: 'maintenance',
  payload: z.object({}),
  options: DAILY_OPTIONS,
  async process(deps: MaintenanceDeps): Promise<MediaSweepResult & { byVerify?: true }> {
    // Failing (not skipping) lets a worker that runs the feed pipeline take the retry.
    if (!deps.storage) throw new Error('media-sweep: this worker runs no feed pipeline (no storage)');
    if (deps.verify) return { accounts: 0, removedMedia: 0, held: 0, refused: 0, byVerify: true };
    return runMediaSweep({
      db: deps.db,
      storage: deps.storage,
      clock: deps.clock,
      logger: deps.logger,
      ...(deps.deleteCap ? { deleteCap: deps.deleteCap } : {}),
    });
  },
});

/** A temporary file older than this belongs to no write in progress (a write takes seconds). */
export const LEFTOVER_AGE_MS = HOUR;

/**
 * Expired login states, old account events and spent invitations deleted; with storage, the
 * temporary files that writes killed mid-way left more than an hour ago (R-NET-4).
 */
export const housekeepingJob = defineJob({
  name: 'housekeeping',
  queue: 'maintenance',
  payload: z.object({}),
  options: DAILY_OPTIONS,
  async process(deps: MaintenanceDeps): Promise<HousekeepingResult & { leftovers: number }> {
    const result = await runHousekeeping(deps);
    // Through the deletion guard: nothing is removed from a storage that is not this deployment's (R-DEL-1).
    const leftovers = deps.storage
      ? await (
          await openDeletions(
            { db: deps.db, storage: deps.storage, logger: deps.logger, clock: deps.clock },
            {
              by: 'housekeeping',
            },
          )
        ).sweepLeftovers(new Date(deps.clock.now().getTime() - LEFTOVER_AGE_MS))
      : 0;
    if (leftovers > 0) deps.logger.info({ leftovers }, 'housekeeping: temporary files of unfinished writes removed');
    return { ...result, leftovers };
  },
});

/** What the daily verify returns to the queue view; the whole report is in verify_runs. */
export interface DailyVerifyResult {
  ok: boolean;
  problems: number;
  repaired: number;
  counts: VerifyCounts;
  /** The media sweep on the same listing. */
  sweep?: MediaSweepResult;
}

/**
 * `feedmirror verify` once a day (VERIFY_DAILY): the same checker and, by default, the same repair
 * as `feedmirror verify --repair`, with the media sweep on the same listing, recorded in verify_runs for the health and `doctor`. Problems
 * are its result, not a failure: only an error (a store unreachable) fails the job and retries.
 */
export const verifyJob = defineJob({
  name: 'verify',
  queue: 'maintenance',
  payload: z.object({}),
  options: DAILY_OPTIONS,
  async process(deps: MaintenanceDeps): Promise<DailyVerifyResult> {
    if (!deps.verify) throw new Error('verify: this worker runs no feed pipeline');
    const r = await runVerify(deps.verify.deps, {
      trigger: 'worker',
      repair: deps.verify.repair,
      orphanGraceMs: deps.verify.orphanGraceMs,
      // The media sweep on the same listing: one daily pass over the bucket for both.
      sweep: true,
    });
    return {
      ok: r.ok,
      problems: r.problems.length,
      repaired: r.repaired.length,
      counts: r.counts,
      ...(r.sweep ? { sweep: r.sweep } : {}),
    };
  },
});
