import { DelayedError, Worker, type Job } from 'bullmq';
import { RateLimitedError } from '../src/platform/errors.ts';
import { slowdownMs } from '../src/platform/pacing.ts';
import type { PlatformUsage } from '../src/platform/rate-limit.ts';
import { countRateLimitWait } from '../src/metrics/observe.ts';
import type { PipelineMetrics } from '../src/metrics/index.ts';
import { MINUTE, type Clock } from '../src/util/clock.ts';
import { randomBytes } from 'node:crypto';
import { enqueue } from './enqueue.ts';
import { feedSyncJob } from './feed-sync.ts';
import type { Queues } from './queues.ts';
import type { Logger } from '../src/util/logger.ts';

/**
 * Waits for the platform's budget happen OUTSIDE jobs (R-OWN-1). A job never sleeps while it
 * holds its lock: a wait longer than the lock (30 s) made BullMQ count the job as stalled, run it
 * a second time and report "Missing lock" when the first run ended.
 *  - One account over its limit (codes 17, 32, 613, or feedmirror's own pacing): the job moves to
 *    the delayed set for the time stated (job.moveToDelayed; not counted as a failed attempt).
 *  - The whole app over its limit (code 4, a bare 429): the queue stops handing out jobs for the
 *    time stated (worker.rateLimit), and the job goes back to waiting (RateLimitError), across
 *    every worker of the queue.
 *  - The app's usage past 80% (X-App-Usage): after the job, the queue pauses for a moment that
 *    grows with usage (slowdownMs), so job starts, and with them calls, slow down app-wide.
 */
export interface PlatformWaitSettings {
  /** Pause between job starts at 100% app usage; scaled down linearly to the 80% threshold. */
  slowdownMaxMs: number;
  /** Usage share (percent) from which jobs slow down. */
  slowdownPercent: number;
}

export const DEFAULT_PLATFORM_WAITS: PlatformWaitSettings = { slowdownMaxMs: 30_000, slowdownPercent: 80 };
/** When the platform throttles without saying for how long (R-OWN-1's fallback). */
export const DEFAULT_RATE_LIMIT_WAIT_MS = 5 * MINUTE;

/** How long to wait after the platform said no (R-OWN-1): its own estimate, else the fallback. */
export function rateLimitWaitMs(err: RateLimitedError): number {
  return err.retryAfterMs ?? DEFAULT_RATE_LIMIT_WAIT_MS;
}

/** A sync the worker will run once the platform's stated wait is over. */
export interface HandedOverSync {
  jobId: string;
  waitMs: number;
}

/**
 * A sync that ran outside the worker (`feedmirror sync --wait`) and met a rate limit: the retry
 * goes to the workers as a feed-sync job delayed by the stated wait, the same wait a worker's own
 * sync takes (waitingOutsideJobs below), so it is never left to the account's next slot.
 */
export async function handOverRateLimitedSync(
  queues: Pick<Queues, 'feedSync'>,
  accountId: string,
  err: RateLimitedError,
  clock: Clock,
): Promise<HandedOverSync> {
  const waitMs = rateLimitWaitMs(err);
  const jobId = `ratelimited-sync-${accountId}-${clock.now().getTime() + waitMs}-${randomBytes(3).toString('hex')}`;
  await enqueue(queues, feedSyncJob, { accountId }, { jobId, delay: waitMs });
  return { jobId, waitMs };
}

export interface WaitDeps {
  logger: Logger;
  metrics?: PipelineMetrics;
  /** The latest usage the platform reported to this process. */
  usage: () => PlatformUsage | undefined;
  settings?: PlatformWaitSettings;
  /**
   * Hold one app's calls (every worker, through the pacer in Redis): with it, an app-wide limit
   * holds only the accounts of the app that met it, never the whole queue, so one app's trouble
   * never slows another app's accounts.
   */
  holdApp?: (app: string, ms: number) => Promise<void>;
}

/**
 * A Worker processor that runs `run` and turns the platform's limits into waits outside the job.
 * `worker` is the Worker this processor belongs to (known only once it is constructed).
 */
export function waitingOutsideJobs(
  deps: WaitDeps,
  worker: () => Worker,
  run: (job: Job) => Promise<unknown>,
): (job: Job, token?: string) => Promise<unknown> {
  const settings = deps.settings ?? DEFAULT_PLATFORM_WAITS;
  const log = deps.logger.child({ component: 'platform-waits' });
  return async (job: Job, token?: string) => {
    const usageBefore = deps.usage();
    let result: unknown;
    try {
      result = await run(job);
    } catch (err) {
      if (!(err instanceof RateLimitedError)) throw err;
      const waitMs = rateLimitWaitMs(err);
      countRateLimitWait(deps.metrics, err.operation);
      if (err.appWide && err.app !== undefined && deps.holdApp) {
        // Per app: this app's accounts wait (their calls are held), the job is delayed like an
        // account's, and the queue goes on for every other app.
        await deps.holdApp(err.app, waitMs);
        log.warn(
          { queue: job.queueName, jobId: job.id, app: err.app, waitMs, code: err.code },
          `app ${err.app} is rate limited by the platform: its calls are held, the job is delayed; other apps go on`,
        );
        await job.moveToDelayed(Date.now() + waitMs, token);
        throw new DelayedError();
      }
      if (err.appWide) {
        log.warn(
          { queue: job.queueName, jobId: job.id, waitMs, code: err.code },
          'the app is rate limited by the platform: the queue pauses, the job waits in the queue',
        );
        // Worker.rateLimit sets the queue's limit as Queue.rateLimit does (the same backend call);
        // the worker is what a processor holds. To move with BullMQ 6, which drops it.
        // eslint-disable-next-line @typescript-eslint/no-deprecated
        await worker().rateLimit(waitMs);
        throw Worker.RateLimitError();
      }
      log.info(
        {
          queue: job.queueName,
          jobId: job.id,
          accountId: (job.data as { accountId?: unknown } | undefined)?.accountId,
          waitMs,
          code: err.code,
          paced: err.paced,
        },
        'account over its platform budget: the job is delayed',
      );
      await job.moveToDelayed(Date.now() + waitMs, token);
      throw new DelayedError();
    }
    const usage = deps.usage();
    if (usage && usage !== usageBefore) {
      const pauseMs = slowdownMs(usage.appPercent, settings.slowdownMaxMs, settings.slowdownPercent);
      if (pauseMs > 0) {
        log.info(
          { queue: job.queueName, appUsagePercent: usage.appPercent, pauseMs },
          'app usage is high: slowing down',
        );
        deps.metrics?.platformSlowdowns?.inc();
        // eslint-disable-next-line @typescript-eslint/no-deprecated -- as above: the same call as Queue.rateLimit
        await worker().rateLimit(pauseMs);
      }
    }
    return result;
  };
}
