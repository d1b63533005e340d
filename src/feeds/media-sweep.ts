import type pg from 'pg';
import type { Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import type { ObjectStorage } from '../storage/types.ts';
import { sweepOrphans } from '../mirror/copy.ts';
import { listPostIds, deleteMediaCopies, getFeedPublication } from '../store/posts.ts';
import { publishedIds } from './publication.ts';
import { eachAccount } from '../store/accounts.ts';

/**
 * The periodic media sweep (R-LNK-6): objects under media/<account>/<media>/ whose post no longer
 * exists are removed, with their copy records. Pruning after a complete listing already removes
 * what it prunes; this catches what a crash between the two left behind. It works per media item
 * of posts that are gone, so a copy in flight (its post row exists) is never touched. Removed
 * accounts keep their last feed and copies on purpose (sites may still embed them).
 */

export interface MediaSweepResult {
  accounts: number;
  removedMedia: number;
}

/** Accounts swept at once. */
export const MEDIA_SWEEP_CONCURRENCY = 8;

export async function runMediaSweep(deps: {
  db: pg.Pool;
  storage: ObjectStorage;
  clock: Clock;
  logger: Logger;
}): Promise<MediaSweepResult> {
  let accounts = 0;
  let removedMedia = 0;
  // A page of accounts at a time (eachAccount), a few accounts at once: each is a few round trips
  // to PostgreSQL and a listing of storage, so one at a time left the worker waiting; 100,000
  // accounts took over half an hour. The sweeps share one iterator, which hands each account out once.
  const all = eachAccount(deps.db, deps.clock.now());
  await Promise.all(Array.from({ length: MEDIA_SWEEP_CONCURRENCY }, () => sweepEach(all)));
  return { accounts, removedMedia };

  async function sweepEach(list: AsyncIterable<{ id: string }>): Promise<void> {
    for await (const account of list) {
      accounts++;
      // Ids only: unpacking and converting every stored post was most of the sweep's CPU.
      const keep = new Set(await listPostIds(deps.db, account.id));
      // R-OWN-6: and every post the published feed still shows (kept as last published).
      for (const id of publishedIds(await getFeedPublication(deps.db, account.id)) ?? []) keep.add(id);
      const swept = await sweepOrphans(deps.storage, account.id, keep);
      for (const mediaId of swept) await deleteMediaCopies(deps.db, account.id, mediaId);
      removedMedia += swept.length;
      if (swept.length)
        deps.logger.info(
          { accountId: account.id, mediaIds: swept.length },
          'media sweep removed the objects of deleted posts',
        );
    }
  }
}
