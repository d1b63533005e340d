import type { Feed, Post } from '../schema/v1.ts';
import { validateFeed } from '../schema/validate.ts';
import { feedKey } from '../storage/keys.ts';
import type { ObjectStorage } from '../storage/types.ts';
import type { Db } from '../store/db.ts';
import {
  getRemovalHold,
  saveRemovalHold,
  takeRemovalHold,
  type RemovalHold,
  type StoredRemovalHold,
} from '../store/holds.ts';
import { deletePosts, listPostIds, type FeedPublication } from '../store/posts.ts';
import { HOUR } from '../util/clock.ts';
import { ID_PATTERN } from '../util/ids.ts';

/**
 * The publication invariant (R-OWN-6, R-OWN-7), in one place: what may leave a published feed, and
 * when a removal waits. Pure decisions plus the read of the feed as published; the sync (which
 * prunes) and the publish step (which writes) call these and nothing else decides it.
 *
 * - A post leaves a published feed only when a complete listing no longer has it (R-LNK-6) or the
 *   operator removed it or its account. In the store that is exactly: its row in `posts` is gone.
 *   Anything else (a copy refused or failed, a storage error, a rate limit, a restart, a
 *   reconnect) leaves the row, and the publish step keeps the post as last published until its
 *   copies exist again (keepPublished).
 * - A complete listing that would remove more than half of the feed's posts is held: nothing is
 *   pruned until a second complete listing at least an hour later agrees, or the operator
 *   confirms (planRemoval). An empty page without paging is such a listing.
 */

/** How long a held removal waits for a second listing to agree (R-OWN-7). */
export const HOLD_AGREE_AFTER_MS = HOUR;

export interface RemovalInput {
  /** Ids in the published feed (none while the demo feed or nothing is published). */
  published: ReadonlySet<string>;
  /** Ids of the stored posts. */
  stored: readonly string[];
  /** Ids the complete listing still has (its posts, and items it could not read: R-OWN-8). */
  listed: ReadonlySet<string>;
  /** Posts in the listing. */
  listedPosts: number;
  hold: StoredRemovalHold | null;
  now: Date;
  /** Default HOLD_AGREE_AFTER_MS. */
  agreeAfterMs?: number;
}

export type RemovalPlan =
  /** Prune these stored posts (possibly none); any held removal is over. */
  | { kind: 'prune'; prune: string[]; agreed: boolean }
  /** Prune nothing; record (or keep) this hold. */
  | { kind: 'hold'; hold: RemovalHold; fresh: boolean };

/** Whether removing `removing` would take more than half of a published feed (R-OWN-7). */
export function removalIsLarge(published: ReadonlySet<string>, removing: readonly string[]): boolean {
  if (published.size === 0) return false;
  const fromFeed = removing.filter((id) => published.has(id)).length;
  return fromFeed * 2 > published.size;
}

/**
 * What a COMPLETE listing may remove (R-LNK-6, R-OWN-7). Everything stored or published that the
 * listing lacks is "removing". A small removal proceeds at once. A large one is held, unless a
 * hold asked for the same posts (or more) at least an hour before: then the second listing agrees
 * and it proceeds. A hold whose listing no longer asks for a large removal is over.
 */
export function planRemoval(input: RemovalInput): RemovalPlan {
  const known = new Set([...input.stored, ...input.published]);
  const removing = [...known].filter((id) => !input.listed.has(id)).sort();
  const storedSet = new Set(input.stored);
  const prune = removing.filter((id) => storedSet.has(id));
  if (!removalIsLarge(input.published, removing)) return { kind: 'prune', prune, agreed: false };
  const held = input.hold;
  const within = held !== null && removing.every((id) => held.removing.includes(id));
  if (held && within && input.now.getTime() - held.since.getTime() >= (input.agreeAfterMs ?? HOLD_AGREE_AFTER_MS))
    return { kind: 'prune', prune, agreed: true };
  return {
    kind: 'hold',
    fresh: !within,
    hold: {
      since: within ? held.since : input.now,
      removing,
      listedPosts: input.listedPosts,
      publishedPosts: input.published.size,
    },
  };
}

/** The ids of a publication's posts (postHashes), or null when it does not record them. */
export function publishedIds(publication: { demo: boolean; postHashes?: Record<string, string> | null } | null) {
  if (!publication || publication.demo) return new Set<string>();
  return publication.postHashes ? new Set(Object.keys(publication.postHashes)) : null;
}

/**
 * The feed as published in storage, when it is a real (not demo) schema v1 feed of this account;
 * null when there is none or it is not one. A storage failure throws: the caller must not go on
 * as if nothing were published.
 */
export async function readPublishedPosts(storage: ObjectStorage, accountId: string): Promise<Feed | null> {
  const obj = await storage.get(feedKey(accountId));
  if (!obj) return null;
  let json: unknown;
  try {
    json = JSON.parse(obj.body.toString('utf8'));
  } catch {
    return null;
  }
  const checked = validateFeed(json);
  if (!checked.ok || checked.feed.demo || checked.feed.origin.id !== accountId) return null;
  return checked.feed;
}

export interface KeepInput {
  /** Ids in the feed as last published (publishedIds), or null to read them from `previousFeed`. */
  previous: ReadonlySet<string> | null;
  /** The posts the store can publish now, by id. */
  built: ReadonlyMap<string, Post>;
  /** Stored posts whose copies are incomplete (a cover or a photo slide not copied yet). */
  incomplete: ReadonlySet<string>;
  /** Ids of the stored posts. */
  stored: ReadonlySet<string>;
  /** Ids a held removal keeps (R-OWN-7). */
  held: ReadonlySet<string>;
}

export interface Kept {
  /** The posts to publish, newest first. */
  posts: Post[];
  /** Posts published as last published, because their copies are not all there yet (R-OWN-6). */
  carried: string[];
  /** Posts leaving the feed: no longer stored (pruned by a complete listing, or by the operator). */
  removed: string[];
  /** Posts the feed should keep but whose last published version could not be found. */
  lost: string[];
}

/** Which previously published posts need their published version (they may not leave, and cannot be rebuilt whole). */
export function needsPrevious(input: KeepInput): string[] {
  if (!input.previous) return [];
  return [...input.previous].filter(
    (id) => (input.stored.has(id) || input.held.has(id)) && (!input.built.has(id) || input.incomplete.has(id)),
  );
}

/** Newest first, as listPosts orders them (ties by id, descending). */
function newestFirst(a: Post, b: Post): number {
  const t = Date.parse(b.publishedAt) - Date.parse(a.publishedAt);
  return t !== 0 ? t : a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/**
 * R-OWN-6: the posts to publish. Every post the store can publish whole, in its new version; a
 * post that may not leave (still stored, or held) but cannot be published whole (its cover or a
 * slide not copied: a refused or failed download, a reconnect before its copies are back) in its
 * last published version, which points at copies that exist; a post leaves only when it is no
 * longer stored. `previousFeed` is the feed as published (readPublishedPosts), needed only when
 * needsPrevious() names any post.
 */
export function keepPublished(input: KeepInput, previousFeed: Feed | null): Kept {
  const previousPosts = new Map((previousFeed?.posts ?? []).map((p) => [p.id, p]));
  const previous = input.previous ?? new Set(previousPosts.keys());
  const out = new Map<string, Post>();
  for (const [id, post] of input.built) if (!input.incomplete.has(id)) out.set(id, post);
  const carried: string[] = [];
  const lost: string[] = [];
  for (const id of needsPrevious({ ...input, previous })) {
    const last = previousPosts.get(id);
    if (last) {
      out.set(id, last);
      carried.push(id);
    } else if (input.built.has(id)) {
      out.set(id, input.built.get(id)!); // incomplete but publishable: better than nothing
    } else lost.push(id);
  }
  // A post first published now may show with only the slides copied so far.
  for (const [id, post] of input.built) if (!out.has(id) && !previous.has(id)) out.set(id, post);
  const removed = [...previous].filter((id) => !out.has(id) && !input.stored.has(id) && !input.held.has(id));
  return { posts: [...out.values()].sort(newestFirst), carried: carried.sort(), removed: removed.sort(), lost };
}

export interface Settled {
  /** Posts removed from the store (their objects go once the feed without them is published). */
  pruned: string[];
  /** The removal held instead (nothing pruned), when the listing asked for a large one. */
  held: StoredRemovalHold | null;
  /** A held removal that a second listing agreed with (and that was carried out now). */
  agreed: boolean;
  /**
   * The published feed shows posts the store no longer has and nothing removed now: a removal
   * made earlier whose feed was never written (the write failed). The feed is due.
   */
  stale: boolean;
}

/**
 * After a COMPLETE listing (R-LNK-6): remove what it no longer has, or hold the removal (R-OWN-7).
 * `listed` holds every id the listing returned, readable or not: an item that came back malformed
 * is not gone (R-OWN-8), so its post keeps its last good version. Ids that are not ids are ignored.
 */
export async function settleRemoval(
  db: Db,
  accountId: string,
  input: {
    publication: FeedPublication | null;
    listed: readonly string[];
    listedPosts: number;
    now: Date;
    agreeAfterMs?: number;
    /** The stored posts' ids and the held removal, when the caller has read them (a sync's context). */
    known?: { stored: readonly string[]; hold: StoredRemovalHold | null };
    /**
     * R-OWN-7: asked before a held removal is carried out; false keeps it held. The sync asks the
     * platform's profile: a listing that lacks posts the profile still counts is a glitch, however
     * long it lasts, not the owner's deletions.
     */
    corroborate?: () => Promise<boolean>;
  },
): Promise<Settled> {
  const stored = input.known ? [...input.known.stored] : await listPostIds(db, accountId);
  const hold = input.known ? input.known.hold : await getRemovalHold(db, accountId);
  const plan = planRemoval({
    // A publication from before post ids were recorded: its posts are the stored ones.
    published: publishedIds(input.publication) ?? new Set(stored),
    stored,
    listed: new Set(input.listed.filter((id) => ID_PATTERN.test(id))),
    listedPosts: input.listedPosts,
    hold,
    now: input.now,
    ...(input.agreeAfterMs !== undefined ? { agreeAfterMs: input.agreeAfterMs } : {}),
  });
  const published = publishedIds(input.publication) ?? new Set<string>();
  if (plan.kind === 'prune' && plan.agreed && hold && input.corroborate && !(await input.corroborate())) {
    // The second listing agrees, the profile does not: still held, from the same moment.
    await saveRemovalHold(db, accountId, hold, input.now);
    return { pruned: [], held: { ...hold, lastSeenAt: input.now }, agreed: false, stale: false };
  }
  if (plan.kind === 'hold') {
    await saveRemovalHold(db, accountId, plan.hold, input.now);
    return { pruned: [], held: { ...plan.hold, accountId, lastSeenAt: input.now }, agreed: false, stale: false };
  }
  if (hold) await takeRemovalHold(db, accountId);
  const pruned = await deletePosts(db, accountId, plan.prune);
  const storedSet = new Set(stored);
  const stale = pruned.length === 0 && [...published].some((id) => !storedSet.has(id));
  return { pruned, held: null, agreed: plan.agreed, stale };
}
