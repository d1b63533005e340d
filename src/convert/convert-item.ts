import type { MediaItem, ChildItem } from '../platform/media-item.ts';
import { SOURCE } from '../platform/identifiers.ts';
import type { Media, Post, Stats } from '../schema/v1.ts';
import { validatePost } from '../schema/validate.ts';
import { normalizeTimestamp } from './timestamp.ts';
import { ID_PATTERN } from '../util/ids.ts';

export interface ConvertOptions {
  /**
   * What to do with an item whose cover cannot be determined (R-CNV-12: copyright-flagged media
   * comes without media_url). 'drop' (default) leaves it out; 'text-card' keeps it as a text post
   * linking to its permalink. Never an image post without an image.
   */
  copyrightItems?: 'drop' | 'text-card';
}

export interface DroppedItem {
  id: string;
  reason: string;
  /**
   * Left out because the operator's policy says so (COPYRIGHT_ITEMS=drop, R-CNV-12), not because
   * the item is faulty: the account is healthy, so it is not reported as a skipped item.
   */
  byPolicy?: true;
}

export type ConvertResult = { post: Post } | { dropped: DroppedItem };

/** R-CNV-2: the platform's media_type to schema v1 type. */
const TYPE_OF = { IMAGE: 'image', VIDEO: 'video', CAROUSEL_ALBUM: 'carousel' } as const;
type PlatformMediaType = keyof typeof TYPE_OF;

function isKnownType(t: string | undefined): t is PlatformMediaType {
  return t !== undefined && Object.hasOwn(TYPE_OF, t);
}

/** An http(s) link the platform gave, or undefined (an empty string counts as absent). */
function link(value: string | undefined): string | undefined {
  return value !== undefined && /^https?:\/\//.test(value) ? value : undefined;
}

/**
 * R-CNV-8: the platform sends no MIME type. ASSUMPTION: its videos are MP4 and everything else is
 * JPEG; the mirror, which downloads the bytes, may correct this later.
 */
function mimeOf(mediaType: string | undefined): string {
  return mediaType === 'VIDEO' ? 'video/mp4' : 'image/jpeg';
}

/** R-CNV-4 for one photo or video (item or slide): thumbnail_url for a video, media_url for a photo. */
function coverOf(node: {
  media_type?: string | undefined;
  media_url?: string | undefined;
  thumbnail_url?: string | undefined;
}): string | undefined {
  return node.media_type === 'VIDEO' ? link(node.thumbnail_url) : link(node.media_url);
}

function slidesOf(item: MediaItem): ChildItem[] {
  return item.children?.data ?? [];
}

/**
 * R-CNV-4 for a carousel: the rule applied to the first slide. Choice where the spec is silent:
 * when the first slide gives no cover (e.g. it alone is copyright-flagged), the first slide that
 * gives one is used, so one flagged slide does not hide the whole post; and when the children were
 * not expanded, the album's own media_url (the platform fills it with the first slide's picture).
 */
function carouselCover(item: MediaItem): string | undefined {
  for (const slide of slidesOf(item)) {
    const cover = coverOf(slide);
    if (cover) return cover;
  }
  return link(item.media_url);
}

/** R-CNV-7: one entry per slide with a media_url; a single photo or video gives one entry. */
function mediaOf(item: MediaItem): Media[] {
  const nodes = item.media_type === 'CAROUSEL_ALBUM' ? slidesOf(item) : [item];
  const media: Media[] = [];
  for (const node of nodes) {
    const url = link(node.media_url);
    if (!url) continue; // a slide without media_url gives no entry
    // R-CNV-11: no width/height here: only the mirror, which measures, sets them.
    media.push({ url, mime: mimeOf(node.media_type) });
  }
  return media;
}

/** R-CNV-9: a count appears only when the platform returned it; missing is unknown, never 0. */
function statsOf(item: MediaItem): Stats | undefined {
  const stats: Stats = {};
  if (typeof item.like_count === 'number') stats.likes = item.like_count;
  if (typeof item.comments_count === 'number') stats.comments = item.comments_count;
  return Object.keys(stats).length > 0 ? stats : undefined;
}

/**
 * R-CNV-3 / R-CNV-13: reel only when media_product_type says REELS. Never guessed from the
 * permalink shape, never from is_shared_to_feed (R-MED-11); without media_product_type every
 * video is a plain post and shows no reel badge.
 */
function formatOf(item: MediaItem): 'reel' | 'post' {
  return item.media_product_type === 'REELS' ? 'reel' : 'post';
}

const drop = (item: MediaItem, reason: string, byPolicy = false): ConvertResult => ({
  dropped: { id: item.id, reason, ...(byPolicy ? { byPolicy: true as const } : {}) },
});

/** Convert one platform media item to a schema v1 post, or say why it was left out. Pure. */
export function convertItem(item: MediaItem, opts: ConvertOptions = {}): ConvertResult {
  // R-CNV-10: raw is the whole item as the platform sent it; a copy so later edits of either side
  // cannot leak into the other.
  const built = buildPost(item, opts, structuredClone(item));
  if (!('post' in built)) return built;
  // Every post we emit satisfies schema v1; anything else is left out with the problems named.
  const checked = validatePost(built.post);
  if (!checked.ok) {
    return drop(
      item,
      `does not satisfy schema v1: ${checked.problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`,
    );
  }
  return built;
}

/**
 * The post convertItem makes of an item whose post was stored before, with `item` itself as raw
 * (no copy, no validation: the store validates what it reads). The store keeps only raw for a
 * post that is exactly this (src/store/post-pack.ts); 'text-card' because a stored post without
 * a cover can only have been made under it.
 */
export function derivePost(item: MediaItem): Post | undefined {
  const built = buildPost(item, { copyrightItems: 'text-card' }, item);
  return 'post' in built ? built.post : undefined;
}

/** convertItem's post, unvalidated, with `raw` as given. */
function buildPost(item: MediaItem, opts: ConvertOptions, raw: MediaItem): ConvertResult {
  // The id becomes a database key, an object key and a job payload: nothing else may pass.
  if (!ID_PATTERN.test(item.id))
    return drop(item, `malformed id ${JSON.stringify(item.id.slice(0, 40))} (expected letters, digits, _ and -)`);
  const mediaType = item.media_type;
  if (!isKnownType(mediaType)) {
    return drop(
      item,
      mediaType === undefined ? 'no media_type returned' : `unknown media_type ${JSON.stringify(mediaType)}`,
    );
  }
  // Schema v1 requires url; without a permalink there is nothing honest to link to.
  const url = link(item.permalink);
  if (!url) return drop(item, item.permalink ? 'permalink is not an http(s) URL' : 'no permalink returned');
  if (item.timestamp === undefined) return drop(item, 'no timestamp returned');
  const publishedAt = normalizeTimestamp(item.timestamp);
  if (!publishedAt) return drop(item, `timestamp ${JSON.stringify(item.timestamp)} is not a valid date-time`);

  const type = TYPE_OF[mediaType];
  const thumbnailUrl = mediaType === 'CAROUSEL_ALBUM' ? carouselCover(item) : coverOf(item);
  const stats = statsOf(item);

  const common = {
    id: item.id, // R-CNV-1
    source: SOURCE, // R-CNV-1
    format: formatOf(item),
    status: 'published' as const, // R-CNV-1, R-OWN-2
    url, // R-CNV-5
    text: item.caption ?? '', // R-CNV-5
    publishedAt, // R-CNV-6
    ...(stats ? { stats } : {}),
    raw, // R-CNV-10
  };

  let post: Post;
  if (thumbnailUrl) {
    post = { ...common, type, thumbnailUrl, media: mediaOf(item) };
  } else if (opts.copyrightItems === 'text-card') {
    // R-CNV-12: no cover determinable; show the caption as a text card linking to the permalink.
    post = { ...common, type: 'text', media: [] };
  } else {
    // R-CNV-12: schema v1 rejects image/video/carousel posts without thumbnailUrl (R-SCH-7).
    return drop(item, 'no cover image determinable (media_url or thumbnail_url absent, e.g. copyright-flagged)', true);
  }
  return { post };
}

/** Convert a listing; posts keep the listing's order. */
export function convertItems(
  items: readonly MediaItem[],
  opts: ConvertOptions = {},
): { posts: Post[]; dropped: DroppedItem[] } {
  const posts: Post[] = [];
  const dropped: DroppedItem[] = [];
  for (const item of items) {
    const r = convertItem(item, opts);
    if ('post' in r) posts.push(r.post);
    else dropped.push(r.dropped);
  }
  return { posts, dropped };
}
