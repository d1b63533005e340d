import { Job, QueueEvents } from 'bullmq';
import { JOBS } from '../../jobs/catalogue.ts';
import { enqueue } from '../../jobs/enqueue.ts';
import type { FeedSyncReturn } from '../../jobs/feed-sync.ts';
import { startFeedWorkers } from '../../jobs/feed-workers.ts';
import { QUEUE, type Queues, type RedisSettings } from '../../jobs/queues.ts';
import type { FeedDeps } from '../../src/feeds/deps.ts';

/**
 * One sync as the worker runs it: the feed workers started on `deps`, a feed-sync job enqueued
 * for the account, its mirror-media children and its publish-feed job waited for, the workers
 * stopped again. Shared by the tests that hold the worker's real BullMQ flow to an invariant.
 */
export async function syncThroughWorkers(
  deps: FeedDeps,
  redis: RedisSettings,
  queues: Queues,
  accountId: string,
): Promise<FeedSyncReturn> {
  const workers = await startFeedWorkers({ ...deps, redis });
  const syncEvents = new QueueEvents(QUEUE.feedSync, { connection: { url: redis.url }, prefix: redis.prefix });
  const publishEvents = new QueueEvents(QUEUE.publishFeed, { connection: { url: redis.url }, prefix: redis.prefix });
  try {
    await Promise.all([syncEvents.waitUntilReady(), publishEvents.waitUntilReady()]);
    const job = await enqueue(queues, JOBS.feedSync, { accountId });
    const result = (await job.waitUntilFinished(syncEvents, 30_000)) as FeedSyncReturn;
    if (result.publishJobId)
      await (await Job.fromId(queues.publishFeed, result.publishJobId))!.waitUntilFinished(publishEvents, 30_000);
    return result;
  } finally {
    await workers.close();
    await Promise.all([syncEvents.close(), publishEvents.close()]);
  }
}
