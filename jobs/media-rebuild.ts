import { z } from 'zod';
import type { FeedDeps } from '../src/feeds/deps.ts';
import { rebuildAccountMedia, type RebuildResult } from '../src/feeds/rebuild.ts';
import { idSchema } from '../src/util/ids.ts';
import { defineJob } from './definition.ts';
import { retryOptions } from './queues.ts';

/**
 * media-rebuild: re-encode one account's copies with the current ladder and formats, then publish
 * (src/feeds/rebuild.ts). Only `feedmirror media rebuild` queues it: never done by surprise. On
 * the mirror-media queue, so it shares the mirror workers' concurrency with copies (a rebuild is
 * the same sharp work).
 */
export const mediaRebuildPayload = z.object({ accountId: idSchema('account id') });

export const mediaRebuildJob = defineJob({
  name: 'media-rebuild',
  queue: 'mirrorMedia',
  payload: mediaRebuildPayload,
  options: {
    ...retryOptions({ attempts: 3, backoffMs: 60_000 }),
    removeOnComplete: { age: 7 * 24 * 3600, count: 1000 },
    removeOnFail: { age: 30 * 24 * 3600, count: 1000 },
  },
  async process(deps: FeedDeps, { accountId }, job): Promise<Omit<RebuildResult, 'publish'> & { publish: string }> {
    const r = await rebuildAccountMedia(deps, accountId, (done, total) => job.updateProgress({ done, total }));
    return { ...r, publish: r.publish.outcome };
  },
});
