import { z } from 'zod';
import type { FlowJob, FlowProducer, Job } from 'bullmq';
import type { FeedDeps } from '../src/feeds/deps.ts';
import { syncAccount, type CopyTask, type SyncOptions, type SyncResult } from '../src/feeds/sync.ts';
import { HOUR } from '../src/util/clock.ts';
import { QUEUE, type RedisSettings } from './queues.ts';
import { DEFAULT_MIRROR_JOBS, mirrorJobOptions, type MirrorJobSettings, type MirrorMediaPayload } from './mirror-media.ts';
import { DEFAULT_PUBLISH_JOBS, publishJobOptions, type PublishFeedPayload, type PublishJobSettings } from './publish-feed.ts';
import { idSchema } from '../src/util/ids.ts';

export { syncAccount, runSyncNow, type SyncResult, type SyncProgress, type CopyTask } from '../src/feeds/sync.ts';

/**
 * feed-sync: one job scheduler per account (jobs/schedules.ts) and `feedmirror sync <id>`. Reads the
 * media edge into Postgres (syncAccount), then hands the rest to a BullMQ flow: publish-feed as the
 * parent, one mirror-media child per image to copy. The parent runs once every child is done (or
 * failed for good: a failed copy keeps only its own post waiting), so the feed is published after
 * its images exist. Job data holds ids only (never a token or a signed link, R-TOK-11).
 */
export const feedSyncPayload = z.object({ accountId: idSchema('account id') });
export type FeedSyncPayload = z.infer<typeof feedSyncPayload>;

export type FeedSyncReturn = SyncResult & { publishJobId?: string; copyJobs?: number };

/**
 * BullMQ priority (1 = first) from a copy's deadline: hours left until its link's oe, so across
 * all accounts the links that die first are copied first (R-LNK-5). Unknown expiry comes last.
 */
export function copyPriority(deadline: Date | null, now: Date): number {
  if (!deadline) return 10_000;
  const hours = Math.ceil((deadline.getTime() - now.getTime()) / HOUR);
  return Math.min(Math.max(hours, 1), 9_999);
}

/** The flow of one sync: publish-feed parent, mirror-media children. */
export interface FlowSettings {
  mirror: MirrorJobSettings;
  publish: PublishJobSettings;
}
export const DEFAULT_FLOW_SETTINGS: FlowSettings = { mirror: DEFAULT_MIRROR_JOBS, publish: DEFAULT_PUBLISH_JOBS };

export function syncFlow(redis: RedisSettings, result: Extract<SyncResult, { outcome: 'synced' }>, now: Date, settings: FlowSettings = DEFAULT_FLOW_SETTINGS): FlowJob {
  const data: PublishFeedPayload = { accountId: result.accountId, complete: result.complete };
  return {
    name: QUEUE.publishFeed,
    queueName: QUEUE.publishFeed,
    prefix: redis.prefix,
    data,
    opts: publishJobOptions(settings.publish),
    children: result.copies.map((c: CopyTask) => {
      const child: MirrorMediaPayload = { accountId: c.accountId, mediaId: c.mediaId, slot: c.slot };
      return {
        name: QUEUE.mirrorMedia,
        queueName: QUEUE.mirrorMedia,
        prefix: redis.prefix,
        data: child,
        opts: { ...mirrorJobOptions(settings.mirror), priority: copyPriority(c.deadline, now) },
      };
    }),
  };
}

export interface FeedSyncJobDeps extends FeedDeps {
  flows: FlowProducer;
  redis: RedisSettings;
  onReauthRequired?: SyncOptions['onReauthRequired'];
  flowSettings?: FlowSettings;
}

/** The processor: sync, then queue the flow. Rate limits propagate (the worker backs off, R-OWN-1). */
export async function processFeedSync(deps: FeedSyncJobDeps, job: Job): Promise<FeedSyncReturn> {
  const { accountId } = feedSyncPayload.parse(job.data);
  const result = await syncAccount(deps, accountId, {
    onProgress: (p) => {
      void job.updateProgress({ ...p });
    },
    ...(deps.onReauthRequired ? { onReauthRequired: deps.onReauthRequired } : {}),
  });
  if (result.outcome !== 'synced') return result;
  if (!result.complete && result.copies.length === 0 && result.newPosts === 0 && result.changedPosts === 0) {
    // Nothing new was read and nothing may be pruned: the previous feed stays as it is.
    return result;
  }
  const node = await deps.flows.add(syncFlow(deps.redis, result, deps.clock.now(), deps.flowSettings));
  return { ...result, publishJobId: node.job.id, copyJobs: result.copies.length };
}
