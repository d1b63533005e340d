import { z } from 'zod';
import type { FlowJob, FlowProducer } from 'bullmq';
import type { FeedDeps } from '../src/feeds/deps.ts';
import { needsPublish, sweepDue, syncAccount, type CopyTask, type SyncResult } from '../src/feeds/sync.ts';
import { clearSyncRequest, isSyncRequest } from '../src/store/sync-requests.ts';
import { MINUTE } from '../src/util/clock.ts';
import { idSchema } from '../src/util/ids.ts';
import { defineJob } from './definition.ts';
import { clampPriority, PRIORITY_LIMIT, withinLimits } from './job-options.ts';
import { isManualJobId } from './manual-ids.ts';
import { QUEUE, retryOptions, type RedisSettings } from './queues.ts';
import {
  DEFAULT_MIRROR_JOBS,
  mirrorJobOptions,
  mirrorMediaJob,
  type MirrorJobSettings,
  type MirrorMediaPayload,
} from './mirror-media.ts';
import {
  DEFAULT_PUBLISH_JOBS,
  publishFeedJob,
  publishJobOptions,
  type PublishFeedPayload,
  type PublishJobSettings,
} from './publish-feed.ts';

/**
 * feed-sync: one job scheduler per account (catalogue.ts scheduleAccount), `feedmirror sync <id>`
 * and "sync now" in the dashboard. Reads the media edge into Postgres (syncAccount), then hands
 * the rest to a BullMQ flow: publish-feed as the parent, one mirror-media child per image to copy.
 * The parent runs once every child is done (or failed for good: a failed copy keeps only its own
 * post waiting), so the feed is published after its images exist.
 */
export const feedSyncPayload = z.object({ accountId: idSchema('account id') });
export type FeedSyncPayload = z.infer<typeof feedSyncPayload>;

export type FeedSyncReturn = SyncResult & { publishJobId?: string | undefined; copyJobs?: number };

/**
 * BullMQ priority (1 = first) from a copy's deadline: the minute its link dies, counted from the
 * start of the current priority era, so across all accounts the links that die first are copied
 * first (R-LNK-5), whenever their copies were queued. Minutes left at the moment of queuing, as
 * before, sorted a copy queued with 100 minutes left behind one queued an hour later with 60
 * left, whose link dies 20 minutes after the first's: after a long downtime a worker lists its
 * accounts for an hour or more and the copies queue behind one another, so the order has to hold
 * across syncs. Minutes, not hours: hundreds of links die within the same hour.
 *
 * A link already dead can no longer be saved: it is renewed when its copy runs (R-LNK-3, R-MED-8)
 * and then lives for days, so it is placed as if it died DEAD_LINK_AFTER_MS after it was queued,
 * behind the live links that die before then (`npm run bench -- --downtime 1000`, README
 * Benchmarks). Unknown expiry comes last: BullMQ's own PRIORITY_LIMIT (2^21 - 1), never above it
 * (R-OWN-9: BullMQ refuses the add of a job whose priority is out of range, which would fail every
 * sync of an account with one link without oe).
 *
 * The era: BullMQ's priorities end at 2^21 - 1 minutes (about 4 years); eras of 2^20 minutes
 * (about 2 years) leave deadlines up to 2 years ahead inside it. When an era turns, copies queued
 * just before wait behind those queued after: once in two years, and only while copies are queued.
 */
export const LAST_PRIORITY = PRIORITY_LIMIT;
export const DEAD_LINK_AFTER_MS = 6 * 60 * MINUTE;
export const PRIORITY_ERA_MINUTES = 2 ** 20;
export function copyPriority(deadline: Date | null, now: Date): number {
  if (!deadline || Number.isNaN(deadline.getTime())) return LAST_PRIORITY;
  const dies = deadline.getTime() > now.getTime() ? deadline.getTime() : now.getTime() + DEAD_LINK_AFTER_MS;
  const eraStart = Math.floor(now.getTime() / MINUTE / PRIORITY_ERA_MINUTES) * PRIORITY_ERA_MINUTES;
  return clampPriority(Math.min(Math.ceil(dies / MINUTE) - eraStart, LAST_PRIORITY - 1));
}

/** The flow of one sync: publish-feed parent, mirror-media children. */
export interface FlowSettings {
  mirror: MirrorJobSettings;
  publish: PublishJobSettings;
}
export const DEFAULT_FLOW_SETTINGS: FlowSettings = { mirror: DEFAULT_MIRROR_JOBS, publish: DEFAULT_PUBLISH_JOBS };

export function syncFlow(
  redis: RedisSettings,
  result: Extract<SyncResult, { outcome: 'synced' }>,
  now: Date,
  settings: FlowSettings = DEFAULT_FLOW_SETTINGS,
): FlowJob {
  const data: PublishFeedPayload = publishFeedJob.payload.parse({
    accountId: result.accountId,
    complete: result.complete,
    sweep: sweepDue(result),
  });
  return {
    name: publishFeedJob.name,
    queueName: QUEUE[publishFeedJob.queue],
    prefix: redis.prefix,
    data,
    opts: withinLimits(publishFeedJob.name, publishJobOptions(settings.publish)),
    children: result.copies.map((c: CopyTask) => {
      const child: MirrorMediaPayload = mirrorMediaJob.payload.parse({
        accountId: c.accountId,
        mediaId: c.mediaId,
        slot: c.slot,
      });
      return {
        name: mirrorMediaJob.name,
        queueName: QUEUE[mirrorMediaJob.queue],
        prefix: redis.prefix,
        data: child,
        opts: withinLimits(mirrorMediaJob.name, {
          ...mirrorJobOptions(settings.mirror),
          priority: copyPriority(c.deadline, now),
        }),
      };
    }),
  };
}

export interface FeedSyncJobDeps extends FeedDeps {
  flows: FlowProducer;
  redis: RedisSettings;
  flowSettings?: FlowSettings;
}

/**
 * A sync's progress (pages read, images to copy) goes to the queue view at most once a second,
 * and not before its first second: a sync that ends sooner has nothing to show while it runs,
 * and each report is a write to Redis: reporting every page of every hourly sync would add a
 * round trip to Redis per page to the unchanged syncs that make most of a worker's work
 * (docs/benchmarks.md, "The cost of an unchanged sync").
 */
export const PROGRESS_EVERY_MS = 1_000;
export function progressReporter(startedMs: number, everyMs: number): (nowMs: number) => boolean {
  let last = startedMs;
  return (nowMs) => {
    if (nowMs - last < everyMs) return false;
    last = nowMs;
    return true;
  };
}

export const feedSyncJob = defineJob({
  name: 'feed-sync',
  queue: 'feedSync',
  payload: feedSyncPayload,
  // Scheduled, CLI and dashboard runs alike: every caller enqueues through the definition, so
  // the retry options cannot differ between them.
  options: {
    ...retryOptions({ attempts: 3, backoffMs: 60_000 }),
    removeOnComplete: { age: 7 * 24 * 3600, count: 1000 },
    removeOnFail: { age: 30 * 24 * 3600, count: 5000 },
  },
  /** Sync, then queue the flow. Rate limits propagate (the worker backs off, R-OWN-1). */
  async process(deps: FeedSyncJobDeps, { accountId }, job): Promise<FeedSyncReturn> {
    // An operator's request (jobs/sync-requests.ts) lists even while scheduled listings pause
    // (R-NET-6), and is cleared once it ran: done, or failed for the last time.
    // Only a job queued under a manual id can be one (requestSync; a scheduler's jobs never are),
    // so a scheduled sync does not ask PostgreSQL.
    const requested =
      job.id !== undefined && isManualJobId('sync', job.id) && (await isSyncRequest(deps.db, accountId, job.id));
    let result: SyncResult;
    const progress = progressReporter(deps.clock.now().getTime(), PROGRESS_EVERY_MS);
    try {
      result = await syncAccount(deps, accountId, {
        manual: requested,
        onProgress: (p) => {
          if (!progress(deps.clock.now().getTime())) return;
          // Progress is for the queue view only: a job whose key vanished (Redis flushed under it)
          // must not bring the process down with an unhandled rejection.
          job.updateProgress({ ...p }).catch(() => undefined);
        },
      });
    } catch (err) {
      if (requested && job.attemptsMade + 1 >= (job.opts.attempts ?? 1))
        await clearSyncRequest(deps.db, accountId, job.id!);
      throw err;
    }
    if (requested) await clearSyncRequest(deps.db, accountId, job.id!);
    // A sync that did nothing says why, in the worker's log (the queue view keeps it too).
    if (result.outcome === 'skipped') deps.logger.info({ accountId, reason: result.reason }, 'sync skipped');
    if (result.outcome !== 'synced' || !needsPublish(result)) return result;
    const node = await deps.flows.add(syncFlow(deps.redis, result, deps.clock.now(), deps.flowSettings));
    return { ...result, publishJobId: node.job.id, copyJobs: result.copies.length };
  },
});
