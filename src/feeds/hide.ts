import { getAccount } from '../store/accounts.ts';
import { hideFeedPost, unhideFeedPost } from '../store/hidden-posts.ts';
import { getPost } from '../store/posts.ts';
import { ID_PATTERN } from '../util/ids.ts';
import type { FeedDeps } from './deps.ts';
import { publishAccountFeed, type PublishOutcome } from './publish.ts';

/**
 * R-OWN-17: the operator hides a post from its account's published feed, and so from every site
 * and widget that reads it; and shows it again. Only the feed changes: the post stays stored,
 * synced and copied (its row and its images are never deleted by a hide), so unhiding publishes it
 * again at once from the copies it has. `feedmirror feeds hide|unhide` and the dashboard call these.
 * A hide is kept by post id, through re-syncs, reconnects and the removal and return of its account.
 */
export class FeedHideError extends Error {
  override readonly name = 'FeedHideError';
  /** usage: a malformed id; not_found: no such account, post or hidden post. */
  constructor(
    message: string,
    readonly kind: 'usage' | 'not_found',
  ) {
    super(message);
  }
}

export interface FeedHideOutcome {
  accountId: string;
  postId: string;
  /** false when nothing changed (already hidden, for a hide). */
  changed: boolean;
  /** The feed written without (or with) the post. */
  publish: PublishOutcome;
}

type HideDeps = Pick<
  FeedDeps,
  'db' | 'storage' | 'clock' | 'logger' | 'feedMaxAgeSeconds' | 'relinkMarginMs' | 'events' | 'sourceChanged' | 'status'
>;

function checkIds(accountId: string, postId: string): void {
  if (!ID_PATTERN.test(accountId))
    throw new FeedHideError('an account id is 1-128 characters of A-Z a-z 0-9 _ -', 'usage');
  if (!ID_PATTERN.test(postId)) throw new FeedHideError('a post id is 1-128 characters of A-Z a-z 0-9 _ -', 'usage');
}

async function requireAccount(deps: HideDeps, accountId: string): Promise<void> {
  if (!(await getAccount(deps.db, accountId)))
    throw new FeedHideError(`no account ${accountId} (feedmirror accounts list shows them)`, 'not_found');
}

/** Hide a stored post of the account from its feed, then publish the feed without it. */
export async function hidePostFromFeed(deps: HideDeps, accountId: string, postId: string): Promise<FeedHideOutcome> {
  checkIds(accountId, postId);
  await requireAccount(deps, accountId);
  if (!(await getPost(deps.db, accountId, postId)))
    throw new FeedHideError(
      `account ${accountId} has no post ${postId} (feedmirror feeds get ${accountId} lists its posts)`,
      'not_found',
    );
  const changed = await hideFeedPost(deps.db, accountId, postId, deps.clock.now());
  deps.logger.info({ accountId, postId, changed }, 'post hidden from its feed by the operator');
  // The widgets of the account follow through publishAccountFeed (sourceChanged, R-WID-5).
  return { accountId, postId, changed, publish: await publishAccountFeed(deps, accountId) };
}

/** Show a hidden post again: its feed is published with it (from its stored copies). */
export async function unhidePostFromFeed(deps: HideDeps, accountId: string, postId: string): Promise<FeedHideOutcome> {
  checkIds(accountId, postId);
  // No account check: a hide outlives its account's removal, and may be dropped meanwhile.
  if (!(await unhideFeedPost(deps.db, accountId, postId)))
    throw new FeedHideError(`post ${postId} is not hidden from the feed of account ${accountId}`, 'not_found');
  deps.logger.info({ accountId, postId }, 'post shown in its feed again by the operator');
  return { accountId, postId, changed: true, publish: await publishAccountFeed(deps, accountId) };
}
