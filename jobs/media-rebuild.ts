import { UnrecoverableError } from 'bullmq';
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
 *
 * The job carries the ladder and formats the command announced. A worker whose own settings differ
 * refuses it with a line naming both (R-SET-1) rather than re-encoding with other settings than the
 * operator was told: the copies a worker makes always follow its own settings, and its daily sweep
 * keeps only those, so it cannot honour others.
 */
export const mediaRebuildPayload = z.object({
  accountId: idSchema('account id'),
  widths: z.array(z.number().int().positive()).optional(),
  formats: z.array(z.enum(['webp', 'avif'])).optional(),
});

const same = (a: readonly unknown[], b: readonly unknown[]) => a.join(',') === b.join(',');

export const mediaRebuildJob = defineJob({
  name: 'media-rebuild',
  queue: 'mirrorMedia',
  payload: mediaRebuildPayload,
  options: {
    ...retryOptions({ attempts: 3, backoffMs: 60_000 }),
    removeOnComplete: { age: 7 * 24 * 3600, count: 1000 },
    removeOnFail: { age: 30 * 24 * 3600, count: 1000 },
  },
  async process(
    deps: FeedDeps,
    { accountId, widths, formats },
    job,
  ): Promise<Omit<RebuildResult, 'publish'> & { publish: string }> {
    const own = { widths: deps.limits.variantWidths, formats: deps.limits.variantFormats ?? ['webp'] };
    if ((widths && !same(widths, own.widths)) || (formats && !same(formats, own.formats))) {
      const message = `media rebuild of account ${accountId} asked for widths ${(widths ?? own.widths).join(',')}, formats ${(formats ?? own.formats).join(',')}; this worker runs with MEDIA_VARIANT_WIDTHS=${own.widths.join(',')} MEDIA_VARIANT_FORMATS=${own.formats.join(',')}: set them in every worker's environment, restart the workers, then run \`feedmirror media rebuild\` again`;
      deps.logger.error({ accountId }, message);
      throw new UnrecoverableError(message);
    }
    const r = await rebuildAccountMedia(deps, accountId, (done, total) => job.updateProgress({ done, total }));
    return { ...r, publish: r.publish.outcome };
  },
});
