import { takeRemovalHold, type StoredRemovalHold } from '../store/holds.ts';
import { deletePosts } from '../store/posts.ts';
import type { FeedDeps } from './deps.ts';
import { publishAccountFeed, type PublishOutcome } from './publish.ts';

export interface ConfirmedRemoval {
  accountId: string;
  /** The hold as it was when confirmed. */
  hold: StoredRemovalHold;
  /** The posts removed from the store now (those the listing lacked and that were still stored). */
  removed: string[];
  /** The feed written without them. */
  publish: PublishOutcome;
}

export class FeedNotWrittenError extends Error {
  override readonly name = 'FeedNotWrittenError';
}

/**
 * The operator confirms a held removal at once (R-OWN-7): the posts the held listing lacked leave
 * the store, and the feed is published without them. `feedmirror feeds confirm-removal` and the
 * dashboard's button both call this. null when no removal is held (nothing done). Taking the hold
 * is one statement, so of two confirmations at once exactly one removes and publishes.
 */
export async function confirmHeldRemoval(
  deps: Pick<FeedDeps, 'db' | 'storage' | 'clock' | 'logger' | 'feedMaxAgeSeconds' | 'relinkMarginMs' | 'events'>,
  accountId: string,
): Promise<ConfirmedRemoval | null> {
  const hold = await takeRemovalHold(deps.db, accountId);
  if (!hold) return null;
  const removed = await deletePosts(deps.db, accountId, hold.removing);
  deps.logger.info(
    { accountId, removed: removed.length, heldSince: hold.since.toISOString() },
    'held removal confirmed by the operator',
  );
  let publish: PublishOutcome;
  try {
    publish = await publishAccountFeed(deps, accountId, { complete: true });
  } catch (err) {
    // The removal stands (its posts are gone from the store); the next sync writes the feed.
    throw new FeedNotWrittenError(
      `the removal of ${removed.length} posts is confirmed, but the feed could not be written (${(err as Error).message}); the next sync writes it`,
      { cause: err },
    );
  }
  return { accountId, hold, removed, publish };
}
