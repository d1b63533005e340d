import type pg from 'pg';
import type { Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import type { ObjectStorage } from '../storage/types.ts';
import { findOrphanMedia } from '../mirror/copy.ts';
import { listPostIds, deleteMediaCopies, getFeedPublication, getPost } from '../store/posts.ts';
import { publishedIds } from './publication.ts';
import { eachAccount, getAccount } from '../store/accounts.ts';
import { openDeletions, type DeleteCap, type DeletionRun } from '../deletion/guard.ts';

/**
 * The periodic media sweep (R-LNK-6): objects under media/<account>/<media>/ whose post no longer
 * exists are removed, with their copy records. Pruning after a complete listing already removes
 * what it prunes; this catches what a crash between the two left behind. It works per media item
 * of posts that are gone, so a copy in flight (its post row exists) is never touched. Removed
 * accounts keep their last feed and copies on purpose (sites may still embed them).
 *
 * Every delete goes through the deletion guard (R-DEL-1..4): nothing in a storage that is not
 * this deployment's, nothing but names the copy writes, the post row and the published feed read
 * again right before each delete, and a mass deletion held until `--force`.
 */

export interface MediaSweepResult {
  accounts: number;
  removedMedia: number;
  /** Objects the cap held (R-DEL-4): `feedmirror media sweep --force` deletes them. */
  held: number;
  /** Objects the guard refused: not this deployment's storage, not a name feedmirror writes, no readable feed. */
  refused: number;
  /** Why nothing at all may be deleted (R-DEL-1: the storage is not this deployment's), when so. */
  storageRefused?: string;
}

export interface MediaSweepOptions {
  /** Only this account. */
  accountId?: string;
  /** The operator's --force: past the cap (R-DEL-4), never past the rest of the guard. */
  force?: boolean;
}

/** Accounts swept at once. */
export const MEDIA_SWEEP_CONCURRENCY = 8;

export async function runMediaSweep(
  deps: { db: pg.Pool; storage: ObjectStorage; clock: Clock; logger: Logger; deleteCap?: DeleteCap },
  opts: MediaSweepOptions = {},
): Promise<MediaSweepResult> {
  const result: MediaSweepResult = { accounts: 0, removedMedia: 0, held: 0, refused: 0 };
  const run = await openDeletions(deps, {
    by: 'media sweep',
    ...(opts.force ? { force: true } : {}),
    forceWith: `feedmirror media sweep${opts.accountId ? ` --account ${opts.accountId}` : ''} --force`,
  });
  if (run.refusal) result.storageRefused = run.refusal;
  if (opts.accountId !== undefined) {
    const account = await getAccount(deps.db, opts.accountId);
    if (account) await sweepAccount(run, account.id);
    return result;
  }
  // A page of accounts at a time (eachAccount), a few accounts at once: each is a few round trips
  // to PostgreSQL and a listing of storage, so one at a time would leave the worker waiting on
  // them. The sweeps share one iterator, which hands each account out once.
  const all = eachAccount(deps.db, deps.clock.now());
  await Promise.all(Array.from({ length: MEDIA_SWEEP_CONCURRENCY }, () => sweepEach(all)));
  return result;

  async function sweepEach(list: AsyncIterable<{ id: string }>): Promise<void> {
    for await (const account of list) await sweepAccount(run, account.id);
  }

  async function sweepAccount(deletions: DeletionRun, accountId: string): Promise<void> {
    result.accounts++;
    // Ids only: the sweep needs no post's content, and unpacking and converting each is costly.
    const keep = new Set(await listPostIds(deps.db, accountId));
    // R-OWN-6: and every post the published feed still shows (kept as last published).
    for (const id of publishedIds(await getFeedPublication(deps.db, accountId)) ?? []) keep.add(id);
    const { total, orphans } = await findOrphanMedia(deps.storage, accountId, keep);
    if (orphans.size === 0) return;
    const r = await deletions.removeMediaObjects(accountId, [...orphans.values()].flat(), {
      total,
      // The post row, and the posts the published feed records, read again right before the delete.
      stillUnreferenced: async (key) => {
        const mediaId = key.split('/')[2]!;
        if (await getPost(deps.db, accountId, mediaId)) return false;
        return !(publishedIds(await getFeedPublication(deps.db, accountId))?.has(mediaId) ?? false);
      },
    });
    result.held += r.held.length;
    result.refused += r.refused.length;
    const deleted = new Set(r.deleted);
    let removed = 0;
    for (const [mediaId, keys] of orphans) {
      if (!keys.every((k) => deleted.has(k))) continue;
      await deleteMediaCopies(deps.db, accountId, mediaId);
      removed++;
    }
    result.removedMedia += removed;
    if (removed > 0)
      deps.logger.info({ accountId, mediaIds: removed }, 'media sweep removed the objects of deleted posts');
  }
}
