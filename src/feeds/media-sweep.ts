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
    const { total, orphans } = await findOrphanMedia(deps.storage, accountId, await mediaSweepKeep(deps.db, accountId));
    const r = await removeSweptMedia(deps, deletions, accountId, total, orphans);
    result.held += r.held;
    result.refused += r.refused;
    result.removedMedia += r.removedMedia;
  }
}

/**
 * The media ids whose folders the sweep keeps: every stored post's (ids only: the sweep needs no
 * post's content, and unpacking and converting each is costly), and every post the published
 * feed still shows (R-OWN-6: kept as last published).
 */
export async function mediaSweepKeep(db: pg.Pool, accountId: string): Promise<Set<string>> {
  const keep = new Set(await listPostIds(db, accountId));
  for (const id of publishedIds(await getFeedPublication(db, accountId)) ?? []) keep.add(id);
  return keep;
}

/**
 * Delete the objects of the media folders a listing found without a post (`orphans`: media id
 * => its listed keys; `total`: the objects listed under the account), through the deletion guard,
 * and the copy records of each folder emptied. Its own listing (runMediaSweep) or the daily
 * verify's, which sweeps on the listing it checks with (one listing for both).
 */
export async function removeSweptMedia(
  deps: { db: pg.Pool; logger: Logger },
  deletions: DeletionRun,
  accountId: string,
  total: number,
  orphans: ReadonlyMap<string, readonly string[]>,
): Promise<{ deleted: string[]; removedMedia: number; held: number; refused: number }> {
  if (orphans.size === 0) return { deleted: [], removedMedia: 0, held: 0, refused: 0 };
  const r = await deletions.removeMediaObjects(accountId, [...orphans.values()].flat(), {
    total,
    // The post row, and the posts the published feed records, read again right before the delete.
    stillUnreferenced: async (key) => {
      const mediaId = key.split('/')[2]!;
      if (await getPost(deps.db, accountId, mediaId)) return false;
      return !(publishedIds(await getFeedPublication(deps.db, accountId))?.has(mediaId) ?? false);
    },
  });
  const deleted = new Set(r.deleted);
  let removed = 0;
  for (const [mediaId, keys] of orphans) {
    if (!keys.every((k) => deleted.has(k))) continue;
    await deleteMediaCopies(deps.db, accountId, mediaId);
    removed++;
  }
  if (removed > 0)
    deps.logger.info({ accountId, mediaIds: removed }, 'media sweep removed the objects of deleted posts');
  return { deleted: r.deleted, removedMedia: removed, held: r.held.length, refused: r.refused.length };
}
