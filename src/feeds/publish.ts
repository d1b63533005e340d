import { buildFeed } from '../convert/feed.ts';
import { originFromProfile } from '../convert/origin.ts';
import { demoFeed } from '../demo/demo-feed.ts';
import { linkExpiry } from './expiry.ts';
import type { Feed, ImageSize, Media, Placeholder, Post } from '../schema/v1.ts';
import { parseOe } from '../platform/links.ts';
import { feedKey, mediaPrefix } from '../storage/keys.ts';
import type { ObjectStorage } from '../storage/types.ts';
import { getAccount, type Account } from '../store/accounts.ts';
import type { Db } from '../store/db.ts';
import { hiddenFeedPostIds } from '../store/hidden-posts.ts';
import { getRemovalHold } from '../store/holds.ts';
import { readCopyManifests } from '../mirror/copy.ts';
import { openDeletions } from '../deletion/guard.ts';
import { feedReferences } from '../deletion/references.ts';
import {
  adoptPosts,
  deleteMediaCopies,
  getFeedPublication,
  getPost,
  listMediaCopies,
  listMediaCopiesOf,
  listOrphanedCopyMediaIds,
  listPosts,
  saveFeedPublication,
  saveMediaCopy,
  type FeedPublication,
  type MediaCopy,
  type StoredPost,
} from '../store/posts.ts';
import { DAY } from '../util/clock.ts';
import type { FeedDeps } from './deps.ts';
import { keepPublished, needsPrevious, publishedIds, readPublishedPosts, type KeepInput } from './publication.ts';
import { imageSlots, isImageMime, isVideoMime } from './slots.ts';
import { contentHash } from '../util/content-hash.ts';

export const DEFAULT_FEED_MAX_AGE_SECONDS = 300;
export const FEED_CONTENT_TYPE = 'application/json; charset=utf-8';

type PublishDeps = Pick<
  FeedDeps,
  | 'db'
  | 'storage'
  | 'clock'
  | 'logger'
  | 'feedMaxAgeSeconds'
  | 'relinkMarginMs'
  | 'events'
  | 'sourceChanged'
  | 'status'
  | 'deleteCap'
>;

/**
 * R-WID-5: the account's widgets republish from its feed as published now. Never throws: the
 * feed's own work is done, and a widget missed here is caught up by the next publication.
 */
export async function announceSource(deps: Pick<FeedDeps, 'sourceChanged' | 'logger'>, accountId: string) {
  if (!deps.sourceChanged) return;
  try {
    await deps.sourceChanged(accountId);
  } catch (err) {
    deps.logger.warn({ err, accountId }, 'the widgets of this account could not be told of its feed');
  }
}

/** The platform's signed-link fields of an item and its slides. */
const LINK_FIELDS = ['media_url', 'thumbnail_url'] as const;

/**
 * raw as published: the platform item minus its signed links. Those die within days (R-LNK-2) and
 * would be the only platform image links left in a public feed; the live equivalents are
 * thumbnailUrl and media[]. The store keeps raw whole (R-CNV-10).
 */
function publishedRaw(raw: unknown): unknown {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return raw;
  const out: Record<string, unknown> = { ...(raw as Record<string, unknown>) };
  // eslint-disable-next-line @typescript-eslint/no-dynamic-delete -- the keys are LINK_FIELDS' constants
  for (const f of LINK_FIELDS) delete out[f];
  const children = out.children as { data?: unknown } | undefined;
  if (children && Array.isArray(children.data)) {
    out.children = { ...children, data: children.data.map(publishedRaw) };
  }
  return out;
}

/**
 * The extension fields of one mirrored image: its sizes for srcset (the variants and the original,
 * smallest first; never wider than the original) and its placeholder when one was computed.
 */
export function imageExtension(
  copy: MediaCopy,
  publicUrl: (key: string) => string,
): { sizes: ImageSize[]; placeholder?: Placeholder } {
  const sizes: ImageSize[] = [
    ...copy.variants.map((v) => ({ url: publicUrl(v.key), width: v.width, height: v.height, mime: v.contentType })),
    { url: publicUrl(copy.key), width: copy.width, height: copy.height, mime: copy.contentType },
  ].sort((a, b) => a.width - b.width || a.mime.localeCompare(b.mime));
  return { sizes, ...(copy.placeholder ? { placeholder: copy.placeholder } : {}) };
}

/** A mirrored video's media entry: the copy's address, and its bytes, size and running time as its header says. */
export function videoEntry(m: Media, copy: MediaCopy, publicUrl: (key: string) => string): Media {
  return {
    ...m,
    url: publicUrl(copy.key),
    mime: copy.contentType,
    width: copy.width,
    height: copy.height,
    ...(copy.bytes > 0 ? { bytes: copy.bytes } : {}),
    ...(copy.durationSec ? { durationSec: copy.durationSec } : {}),
  };
}

export interface RewrittenPost {
  post: Post;
  /** Platform links still in the post (video files, R-LNK-5). */
  platformLinks: string[];
  /** A photo slide has no copy yet: it is left out of media[] (R-OWN-6 keeps a published post whole instead). */
  incomplete: boolean;
}

/**
 * One stored post as published: image links rewritten to the copies, measured sizes filled
 * (R-CNV-11), video files kept as platform links (mime video/*). undefined when the cover is not
 * copied yet (never an image post pointing at a link that will die); a photo slide not copied yet
 * is left out of media[] until it is.
 */
export function rewritePost(
  stored: StoredPost,
  copies: ReadonlyMap<string, MediaCopy>,
  publicUrl: (key: string) => string,
): RewrittenPost | undefined {
  const { post } = stored;
  const slots = imageSlots(post);
  const bySlot = new Map<number, MediaCopy | undefined>();
  let cover: MediaCopy | undefined;
  for (const s of slots) {
    const copy = copies.get(s.slot);
    // A copy of an older file of this slot is still a working image; it is replaced once the
    // new file is copied.
    if (s.slot === 'cover') cover = copy;
    for (const i of s.mediaIndexes) bySlot.set(i, copy);
  }
  if (post.thumbnailUrl && !cover) return undefined;

  const platformLinks: string[] = [];
  const media: Media[] = [];
  let incomplete = false;
  post.media.forEach((m, i) => {
    const copy = bySlot.get(i);
    if (!isImageMime(m.mime)) {
      // A mirrored video file (MIRROR_VIDEOS) plays from its copy: no visitor's browser asks the
      // platform for it. Without one it stays the platform's link (R-LNK-5), the cover its poster.
      if (copy && isVideoMime(copy.contentType)) {
        media.push(videoEntry(m, copy, publicUrl));
        return;
      }
      platformLinks.push(m.url);
      media.push(m);
      return;
    }
    if (!copy) {
      incomplete = true;
      return;
    }
    media.push({
      ...m,
      url: publicUrl(copy.key),
      mime: copy.contentType,
      width: copy.width,
      height: copy.height,
      ...imageExtension(copy, publicUrl),
    });
  });
  const coverExt = cover ? imageExtension(cover, publicUrl) : undefined;
  const out = {
    ...post,
    media,
    ...(cover && coverExt
      ? {
          thumbnailUrl: publicUrl(cover.key),
          aspectRatio: cover.width / cover.height,
          thumbnailSizes: coverExt.sizes,
          ...(coverExt.placeholder ? { thumbnailPlaceholder: coverExt.placeholder } : {}),
        }
      : {}),
    raw: publishedRaw(post.raw),
  } as Post;
  return { post: out, platformLinks, incomplete };
}

function originOf(account: Account) {
  // The profile picture is a signed platform link that dies like the others: it is left out
  // (origin.avatarUrl is optional) rather than published to break.
  return originFromProfile({
    id: account.id,
    username: account.username,
    ...(account.displayName ? { name: account.displayName } : {}),
  });
}

export interface BuiltFeed {
  feed: Feed;
  hash: string;
  /** Earliest oe of the platform links in the feed (R-LNK-4); null when none carries one. */
  earliestOe: Date | null;
  platformLinks: string[];
  /** Posts stored but not published yet (cover not copied, never published before). */
  waiting: string[];
  /** Posts published as last published: their copies are not all there yet (R-OWN-6). */
  carried: string[];
  /** Posts left out because the operator hid them from the feed (R-OWN-17). */
  hidden: string[];
}

/** What the store holds for an account's feed: its posts (newest first), their copies by slot, the hidden ids. */
interface FeedInputs {
  stored: StoredPost[];
  copies: Map<string, Map<string, MediaCopy>>;
  hidden: Set<string>;
}

async function loadFeedInputs(db: Db, accountId: string): Promise<FeedInputs> {
  const hidden = await hiddenFeedPostIds(db, accountId);
  const stored = await listPosts(db, accountId);
  const copies = new Map<string, Map<string, MediaCopy>>();
  for (const c of await listMediaCopies(db, accountId)) {
    if (!copies.has(c.mediaId)) copies.set(c.mediaId, new Map());
    copies.get(c.mediaId)!.set(c.slot, c);
  }
  return { stored, copies, hidden };
}

/** Every stored post as it can be published now, and which of them miss a copy. */
function rewriteAll(inputs: FeedInputs, publicUrl: (key: string) => string) {
  const built = new Map<string, RewrittenPost & { stored: StoredPost }>();
  const incomplete = new Set<string>();
  for (const s of inputs.stored) {
    const r = rewritePost(s, inputs.copies.get(s.mediaId) ?? new Map(), publicUrl);
    if (!r) {
      incomplete.add(s.mediaId);
      continue;
    }
    built.set(s.mediaId, { ...r, stored: s });
    if (r.incomplete) incomplete.add(s.mediaId);
  }
  return { built, incomplete };
}

/**
 * Build (and validate: buildFeed throws SchemaViolationError) an account's feed from the store,
 * keeping what was published (R-OWN-6, src/feeds/publication.ts): `keep` names the posts the feed
 * had and those a held removal keeps; a post still stored or held whose copies are not all there
 * is published as last published (read from `previousFeed`). Without `keep`, the store alone.
 */
export async function buildAccountFeed(
  db: Db,
  account: Account,
  publicUrl: (key: string) => string,
  now: Date,
  keep?: { previous: ReadonlySet<string> | null; held: ReadonlySet<string>; previousFeed: () => Promise<Feed | null> },
): Promise<BuiltFeed & { removed: string[]; lost: string[] }> {
  const inputs = await loadFeedInputs(db, account.id);
  const { built, incomplete } = rewriteAll(inputs, publicUrl);
  const keepInput: KeepInput = {
    previous: keep?.previous ?? new Set(),
    built: new Map([...built].map(([id, r]) => [id, r.post])),
    incomplete,
    stored: new Set(inputs.stored.map((s) => s.mediaId)),
    held: keep?.held ?? new Set(),
  };
  // The feed as published is read only when something needs it (a post to keep as it was, or a
  // publication that did not record its post ids).
  const mustRead = keep !== undefined && (keep.previous === null || needsPrevious(keepInput).length > 0);
  const kept = keepPublished(keepInput, mustRead ? await keep.previousFeed() : null);
  // R-OWN-17: a post the operator hid leaves the feed (R-OWN-6: the operator removed it), its
  // row and copies untouched; it is back in the next feed built after it is unhidden.
  const hidden = kept.posts.filter((p) => inputs.hidden.has(p.id)).map((p) => p.id);
  if (hidden.length > 0) kept.posts = kept.posts.filter((p) => !inputs.hidden.has(p.id));
  const carried = new Set(kept.carried);
  const platformLinks: string[] = [];
  let fetchedAt: Date | undefined;
  // R-LNK-4: the earliest oe of the platform links (video files) that stay in the feed: stored
  // with the post, or read from the links of a post kept as last published.
  let earliest: number | undefined;
  const note = (oe: number | undefined) => {
    if (oe !== undefined && (earliest === undefined || oe < earliest)) earliest = oe;
  };
  for (const post of kept.posts) {
    const r = built.get(post.id);
    if (carried.has(post.id) || !r) {
      const links = post.media.filter((m) => !isImageMime(m.mime)).map((m) => m.url);
      platformLinks.push(...links);
      for (const l of links) note(parseOe(l)?.getTime());
    } else {
      platformLinks.push(...r.platformLinks);
      if (r.platformLinks.length > 0) note(r.stored.earliestOe?.getTime());
    }
    const seen = r?.stored.lastSeenAt;
    if (seen && (!fetchedAt || seen > fetchedAt)) fetchedAt = seen;
  }
  const inFeed = new Set(kept.posts.map((p) => p.id));
  const waiting = inputs.stored.map((s) => s.mediaId).filter((id) => !inFeed.has(id) && !inputs.hidden.has(id));
  // fetchedAt: when these posts were last read from the platform.
  const feed = buildFeed({
    origin: originOf(account),
    posts: kept.posts,
    fetchedAt: fetchedAt ?? account.lastSyncAt ?? now,
    demo: false,
  });
  // fetchedAt is left out of the hash: re-reading unchanged posts must not rewrite the feed.
  const { fetchedAt: _f, ...content } = feed;
  return {
    feed,
    hash: contentHash(content),
    earliestOe: earliest === undefined ? null : new Date(earliest),
    platformLinks,
    waiting,
    carried: kept.carried.filter((id) => !inputs.hidden.has(id)),
    hidden,
    removed: kept.removed,
    lost: kept.lost,
  };
}

/**
 * R-LNK-4: the feed may be cached for less than the time to the earliest oe of the platform links
 * it still holds (video files), minus 600 s; capped by a short default, since the feed itself
 * changes with every sync.
 */
export function feedCacheControl(
  built: Pick<BuiltFeed, 'platformLinks' | 'earliestOe'>,
  now: Date,
  maxAgeSeconds = DEFAULT_FEED_MAX_AGE_SECONDS,
): string {
  const lifetime =
    built.platformLinks.length === 0
      ? maxAgeSeconds
      : linkExpiry(built.earliestOe, now, { unknownCacheSeconds: maxAgeSeconds }).cacheSeconds;
  return `public, max-age=${Math.min(lifetime, maxAgeSeconds)}`;
}

export type PublishOutcome =
  | {
      outcome: 'written' | 'unchanged';
      key: string;
      postCount: number;
      /** Stored posts not in the feed yet: never published, and their cover is not copied. */
      waiting: string[];
      /** Posts published as last published, their new copies not there yet (R-OWN-6). */
      carried: string[];
      removedMedia: string[];
      cacheControl?: string;
      /** When written: the post ids added, changed and removed since the previous publication. */
      changes?: FeedChanges;
    }
  | { outcome: 'kept-demo' | 'skipped'; reason: string };

export interface FeedChanges {
  added: string[];
  changed: string[];
  removed: string[];
}

/** Each published post's content hash (signatures ignored), by post id. */
export function postHashes(feed: Feed): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of feed.posts) out[p.id] = contentHash(p);
  return out;
}

/** What changed between two publications; everything is "added" after a demo feed or none. */
export function feedChanges(previous: Record<string, string> | null, next: Record<string, string>): FeedChanges {
  const before = previous ?? {};
  const added = Object.keys(next).filter((id) => !(id in before));
  const changed = Object.keys(next).filter((id) => id in before && before[id] !== next[id]);
  const removed = Object.keys(before).filter((id) => !(id in next));
  return { added: added.sort(), changed: changed.sort(), removed: removed.sort() };
}

export interface PublishOptions {
  /** Whether the sync behind this publish read the whole listing (R-MED-5). */
  complete?: boolean;
  /**
   * Write even when the publication row says the feed is unchanged: the object in storage is not
   * what the row records (altered or replaced behind our back; `feedmirror verify --repair`).
   */
  rewrite?: boolean;
}

/**
 * Publish feeds/<accountId>.json: build from the store, validate, and write with ONE put (readers
 * see the old or the new feed, never half of one). An unchanged feed (same hash) is not written
 * again, unless its platform links are about to die. Only after the write are the objects of
 * pruned posts deleted (R-LNK-6), so the published feed never points at a deleted copy. A storage
 * failure throws (the job retries) and leaves the previous feed and the publication row as they were.
 *
 * R-OWN-6, the publication invariant (src/feeds/publication.ts): a post leaves the feed only when
 * its row is gone from the store (a complete listing pruned it, or the operator removed it); a
 * post still stored (or kept by a held removal) whose copies are not all there is published as
 * it was last published. So the feed never has fewer posts than the previous one but for those.
 */
export async function publishAccountFeed(
  deps: PublishDeps,
  accountId: string,
  opts: PublishOptions = {},
): Promise<PublishOutcome> {
  const account = await getAccount(deps.db, accountId);
  if (!account) return { outcome: 'skipped', reason: 'account not found (removed?)' };
  const previous = await getFeedPublication(deps.db, accountId);
  if (opts.complete === false && (!previous || previous.demo)) {
    // R-SCH-11: the demo feed stays until the first successful (complete) sync.
    return {
      outcome: 'kept-demo',
      reason: 'the listing did not finish; the demo feed stays until the first complete sync',
    };
  }
  const now = deps.clock.now();
  const built = await feedToPublish(deps, account, previous, now);
  if (built.lost.length > 0)
    deps.logger.warn(
      { accountId, posts: built.lost.length },
      'posts of the previous feed could not be kept as published (the feed object lacks them); they wait for their copies',
    );
  const key = feedKey(accountId);
  const margin = deps.relinkMarginMs ?? DAY;
  const linksDying = previous?.earliestOe != null && now.getTime() >= previous.earliestOe.getTime() - margin;
  let outcome: 'written' | 'unchanged' = 'unchanged';
  let cacheControl: string | undefined;
  let changes: FeedChanges | undefined;
  // The publication row says what was written, not that storage still has it: an unchanged feed
  // costs one HEAD, and a feed object deleted behind our back (by hand, a bucket restored, a new
  // STORAGE_URL) is written again instead of being trusted.
  const changed = !previous || previous.demo || previous.feedHash !== built.hash || linksDying || opts.rewrite === true;
  if (changed || !(await deps.storage.head(key))) {
    cacheControl = feedCacheControl(built, now, deps.feedMaxAgeSeconds);
    const hashes = postHashes(built.feed);
    changes = feedChanges(previous && !previous.demo ? (previous.postHashes ?? null) : null, hashes);
    await deps.storage.put(key, Buffer.from(JSON.stringify(built.feed)), {
      contentType: FEED_CONTENT_TYPE,
      cacheControl,
    });
    await saveFeedPublication(deps.db, {
      accountId,
      feedHash: built.hash,
      publishedAt: now,
      postCount: built.feed.posts.length,
      demo: false,
      earliestOe: built.earliestOe,
      postHashes: hashes,
    });
    outcome = 'written';
    deps.logger.info(
      {
        accountId,
        posts: built.feed.posts.length,
        waiting: built.waiting.length,
        ...(built.carried.length > 0 ? { keptAsPublished: built.carried.length } : {}),
        ...(built.removed.length > 0 ? { removed: built.removed.length } : {}),
      },
      'feed published',
    );
    // Sites that build statically or cache at a CDN revalidate on this. Sent whenever
    // the feed was rewritten, even with empty lists (re-signed video links only).
    await deps.events?.emit({
      type: 'feed.updated',
      data: { accountId, feedKey: key, feedUrl: deps.storage.publicUrl(key), ...changes },
    });
  }
  // R-OWN-16: the status document beside the feed, with every publish (days left, last good sync).
  await deps.status?.publish(accountId);
  // Objects of posts that left the store, never of one the published feed still shows (R-OWN-6).
  const inFeed = new Set(built.feed.posts.map((p) => p.id));
  const pruned = (await listOrphanedCopyMediaIds(deps.db, accountId)).filter((id) => !inFeed.has(id));
  const removedMedia = pruned.length > 0 ? await removePrunedMedia(deps, accountId, pruned) : [];
  await announceSource(deps, accountId);
  return {
    outcome,
    key,
    postCount: built.feed.posts.length,
    waiting: built.waiting,
    carried: built.carried,
    removedMedia,
    ...(cacheControl ? { cacheControl } : {}),
    ...(changes ? { changes } : {}),
  };
}

/**
 * The feed publishAccountFeed would write now: the store, with what was published kept by the
 * publication invariant (R-OWN-6). `feedmirror verify` compares the stored feed with it.
 */
export async function feedToPublish(
  deps: Pick<PublishDeps, 'db' | 'storage'>,
  account: Account,
  previous: FeedPublication | null,
  now: Date,
): Promise<BuiltFeed & { removed: string[]; lost: string[] }> {
  const hold = await getRemovalHold(deps.db, account.id);
  return buildAccountFeed(deps.db, account, (k) => deps.storage.publicUrl(k), now, {
    previous: publishedIds(previous),
    held: new Set(hold?.removing ?? []),
    previousFeed: () => readPublishedPosts(deps.storage, account.id),
  });
}

/**
 * R-SCH-11 made concrete: an account that has no published feed yet gets the demo feed (demo:
 * true, placeholder posts of every kind) at feeds/<accountId>.json, so a site embedding it shows a
 * labelled demo instead of an error until the first complete sync replaces it. Called at the start
 * of every sync (a no-op once anything was published and is in storage); callable at connect time too.
 *
 * R-OWN-6: an account connected again after it was removed still has its feed and copies in
 * storage (removal keeps them for the sites that embed them). That feed is taken over
 * (adoptPublishedFeed), never overwritten by the demo: its posts stay until a complete listing
 * says otherwise, and its copies are reused instead of downloaded again.
 */
export async function publishDemoFeedIfNone(
  deps: PublishDeps,
  accountId: string,
  /** The account's publication, when the caller has just read it (a sync: src/store/sync-context.ts). */
  known?: { publication: FeedPublication | null },
): Promise<boolean> {
  return (await placeFeedIfNone(deps, accountId, known)).wrote === 'demo';
}

/** What placeFeedIfNone found or put in place. */
export interface PlacedFeed {
  /** The account's publication now: as it was, the demo feed's, or the adopted feed's. */
  publication: FeedPublication | null;
  /** What was written: the demo feed, an adopted feed's records, or nothing. */
  wrote: 'demo' | 'adopted' | null;
  /** Storage was seen to hold the feed object just now (written, read or found with a HEAD). */
  inStorage: boolean;
}

/**
 * publishDemoFeedIfNone's work, returning the publication it leaves, so that a sync goes on with it
 * instead of reading it back.
 */
export async function placeFeedIfNone(
  deps: PublishDeps,
  accountId: string,
  known?: { publication: FeedPublication | null },
): Promise<PlacedFeed> {
  const previous = known ? known.publication : await getFeedPublication(deps.db, accountId);
  if (previous && !previous.demo) return { publication: previous, wrote: null, inStorage: false };
  // Once published, it stays; but a demo feed deleted from storage is put back (one HEAD, only
  // while the demo stands).
  if (previous && (await deps.storage.head(feedKey(accountId))))
    return { publication: previous, wrote: null, inStorage: true };
  const published = previous ? null : await readPublishedPosts(deps.storage, accountId);
  if (published)
    return { publication: await adoptPublishedFeed(deps, accountId, published), wrote: 'adopted', inStorage: true };
  const now = deps.clock.now();
  const feed = demoFeed(now);
  const { fetchedAt: _f, ...content } = feed;
  await deps.storage.put(feedKey(accountId), Buffer.from(JSON.stringify(feed)), {
    contentType: FEED_CONTENT_TYPE,
    cacheControl: `public, max-age=${deps.feedMaxAgeSeconds ?? DEFAULT_FEED_MAX_AGE_SECONDS}`,
  });
  const publication: FeedPublication = {
    accountId,
    feedHash: contentHash(content),
    publishedAt: now,
    postCount: feed.posts.length,
    demo: true,
    earliestOe: null,
    postHashes: null,
  };
  await saveFeedPublication(deps.db, publication);
  return { publication, wrote: 'demo', inStorage: true };
}

/**
 * Take over a feed published before this account's rows existed (removed, then connected again;
 * R-OWN-6): its copies from their manifests in storage (a copy whose manifest names its source
 * file is not downloaded again), its posts as published (a listing updates them like any stored
 * post; one it no longer has is pruned, or held: R-OWN-7), and the publication itself, written
 * last so that a crash half-way makes the next sync adopt again.
 */
export async function adoptPublishedFeed(deps: PublishDeps, accountId: string, feed: Feed): Promise<FeedPublication> {
  const now = deps.clock.now();
  let copies = 0;
  for (const { mediaId, slot, manifest } of await readCopyManifests(deps.storage, accountId)) {
    await saveMediaCopy(deps.db, {
      accountId,
      mediaId,
      slot,
      // An older manifest does not name its file: the copy is used, and made again when the file can be read.
      sourceId: manifest.source ?? '',
      key: manifest.key,
      width: manifest.width,
      height: manifest.height,
      bytes: manifest.bytes,
      contentType: manifest.contentType,
      variants: manifest.variants,
      placeholder: manifest.placeholder ?? null,
      copiedAt: now,
      ...(manifest.durationSec !== undefined ? { durationSec: manifest.durationSec } : {}),
    });
    copies++;
  }
  const oeOf = (post: Post) => {
    const oes = post.media
      .filter((m) => !isImageMime(m.mime))
      .map((m) => parseOe(m.url)?.getTime())
      .filter((t): t is number => t !== undefined);
    return oes.length > 0 ? new Date(Math.min(...oes)) : null;
  };
  const posts = await adoptPosts(
    deps.db,
    accountId,
    feed.posts.map((post) => ({ mediaId: post.id, post, contentHash: contentHash(post), earliestOe: oeOf(post) })),
    now,
  );
  const { fetchedAt: _f, ...content } = feed;
  const oes = feed.posts.map(oeOf).filter((d): d is Date => d !== null);
  const publication: FeedPublication = {
    accountId,
    feedHash: contentHash(content),
    publishedAt: now,
    postCount: feed.posts.length,
    demo: false,
    earliestOe: oes.length > 0 ? new Date(Math.min(...oes.map((d) => d.getTime()))) : null,
    postHashes: postHashes(feed),
  };
  await saveFeedPublication(deps.db, publication);
  deps.logger.info(
    { accountId, posts, copies },
    'took over the feed published before this account was connected again; its copies are reused',
  );
  return publication;
}

/**
 * R-LNK-6: the objects of pruned posts (their copies recorded, their post rows gone), through the
 * deletion guard (R-DEL-1..4): each post row read again right before the delete. A media item
 * whose objects are all gone loses its copy records; one the guard kept, held or refused keeps
 * them, so the next publish (or `feedmirror media sweep --force`, for what the cap held) tries
 * again. Returns the media ids removed.
 */
async function removePrunedMedia(deps: PublishDeps, accountId: string, mediaIds: string[]): Promise<string[]> {
  const keysOf = new Map<string, string[]>();
  for (const mediaId of mediaIds) {
    const keys: string[] = [];
    for await (const key of deps.storage.list(mediaPrefix(accountId, mediaId))) keys.push(key);
    keysOf.set(mediaId, keys);
  }
  const candidates = [...keysOf.values()].flat();
  const left = new Set<string>();
  if (candidates.length > 0) {
    const run = await openDeletions(deps, { by: 'publish', frequent: true, forceWith: FORCE_MEDIA_SWEEP });
    const r = await run.removeMediaObjects(accountId, candidates, {
      // The share of the cap is of the objects the account's copy records name.
      total: recordedMediaKeys(accountId, await listMediaCopies(deps.db, accountId)).size,
      stillUnreferenced: async (key) => !(await getPost(deps.db, accountId, key.split('/')[2]!)),
    });
    for (const key of [...r.kept, ...r.held, ...r.refused.map((x) => x.key)]) left.add(key);
  }
  const removed: string[] = [];
  for (const [mediaId, keys] of keysOf) {
    if (keys.some((k) => left.has(k))) continue;
    await deleteMediaCopies(deps.db, accountId, mediaId);
    removed.push(mediaId);
  }
  return removed;
}

/** What deletes the objects the cap held in a publish or a media sweep. */
const FORCE_MEDIA_SWEEP = 'feedmirror media sweep --force';

/**
 * The periodic sweep (R-LNK-6): every object under media/<accountId>/ that no recorded copy
 * references (a post pruned while a copy was in flight, a superseded file of an edited post, a
 * crash between upload and bookkeeping) is deleted, through the deletion guard (R-DEL-1..4): the
 * copy records of its media item read again right before each delete. Manifests (<slot>.json) of
 * recorded slots are kept. Run it when no copy of this account is in flight (after its publish).
 * Returns the keys removed.
 */
export async function sweepAccountMedia(
  deps: Pick<FeedDeps, 'db' | 'storage' | 'logger' | 'clock' | 'deleteCap'>,
  accountId: string,
): Promise<string[]> {
  const keep = recordedMediaKeys(accountId, await listMediaCopies(deps.db, accountId));
  // R-OWN-6: never an object the published feed points at (a post kept as last published may
  // point at copies no record names any more), nor its manifest. The guard checks it again.
  const published = await readPublishedPosts(deps.storage, accountId);
  for (const key of published ? feedReferences(published, accountId) : []) keep.add(key);
  let listed = 0;
  const candidates: string[] = [];
  for await (const key of deps.storage.list(mediaPrefix(accountId))) {
    listed++;
    if (!keep.has(key)) candidates.push(key);
  }
  if (candidates.length === 0) return [];
  const run = await openDeletions(deps, { by: 'publish sweep', frequent: true, forceWith: FORCE_VERIFY });
  const r = await run.removeMediaObjects(accountId, candidates, {
    total: listed,
    stillUnreferenced: async (key) => {
      const mediaId = key.split('/')[2]!;
      return !recordedMediaKeys(accountId, await listMediaCopiesOf(deps.db, accountId, mediaId)).has(key);
    },
  });
  return r.deleted;
}

/** What deletes the unreferenced objects the cap held in the publish's sweep (verify's orphans). */
const FORCE_VERIFY = 'feedmirror verify --repair --force';

/** The objects the recorded copies of an account reference: originals, variants, manifests. */
export function recordedMediaKeys(accountId: string, copies: readonly MediaCopy[]): Set<string> {
  const keep = new Set<string>();
  for (const c of copies) {
    keep.add(c.key);
    for (const v of c.variants) keep.add(v.key);
    keep.add(`${mediaPrefix(accountId, c.mediaId)}${c.slot}.json`);
  }
  return keep;
}

/** Read a published feed back (CLI, HTTP): the stored bytes and headers, or null. */
export async function readPublishedFeed(storage: ObjectStorage, accountId: string) {
  return storage.get(feedKey(accountId));
}
