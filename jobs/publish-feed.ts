import { z } from 'zod';
import type { JobsOptions } from 'bullmq';
import type { FeedDeps } from '../src/feeds/deps.ts';
import { publishAccountFeed, sweepAccountMedia, type PublishOutcome } from '../src/feeds/publish.ts';
import { idSchema } from '../src/util/ids.ts';
import { defineJob } from './definition.ts';
import { retryOptions, type RetrySettings } from './queues.ts';

/**
 * publish-feed: the parent of a sync's flow, run once its copies are done. Writes
 * feeds/<accountId>.json (one PUT, only when changed), deletes the copies of pruned posts, and
 * sweeps the account's media folder after a complete listing changed the feed. A storage failure
 * throws: BullMQ retries with backoff and the previous feed stays in place meanwhile.
 */
export const publishFeedPayload = z.object({
  accountId: idSchema('account id'),
  complete: z.boolean(),
  /** Sweep the account's media after a written feed (sweepDue); jobs queued before it existed do. */
  sweep: z.boolean().default(true),
});
export type PublishFeedPayload = z.infer<typeof publishFeedPayload>;

export type PublishJobSettings = RetrySettings;
export const DEFAULT_PUBLISH_JOBS: PublishJobSettings = { attempts: 8, backoffMs: 15_000 };

export function publishJobOptions(settings: PublishJobSettings = DEFAULT_PUBLISH_JOBS): JobsOptions {
  return {
    ...retryOptions(settings),
    removeOnComplete: { age: 7 * 24 * 3600, count: 1000 },
    removeOnFail: { age: 30 * 24 * 3600, count: 5000 },
  };
}

export const publishFeedJob = defineJob({
  name: 'publish-feed',
  queue: 'publishFeed',
  payload: publishFeedPayload,
  options: publishJobOptions(),
  async process(deps: FeedDeps, { accountId, complete, sweep }): Promise<PublishOutcome & { swept?: number }> {
    const out = await publishAccountFeed(deps, accountId, { complete });
    if (out.outcome === 'written' && complete && sweep) {
      // No copy of this account is in flight now (this job waited for its children).
      const swept = await sweepAccountMedia(deps, accountId);
      return { ...out, swept: swept.length };
    }
    return out;
  },
});
