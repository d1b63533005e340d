import type { Post } from '../schema/v1.ts';
import { sourceIdOf } from '../util/content-hash.ts';

/**
 * Which files of a post are copied (R-LNK-5). Pure functions; how a post or feed is identified
 * across re-signed links is src/util/content-hash.ts.
 */

export interface ImageSlot {
  /**
   * image: a picture (copied always, measured, resized); video: a video file, copied only with
   * MIRROR_VIDEOS=on (src/mirror/video.ts). Both are recorded copies alike (media_copies), so
   * everything that walks an account's copies (verify, pruning, the sweep, rebuild) meets both.
   */
  kind: 'image' | 'video';
  /** 'cover' or 'slide-<index in media[]>': the name of the copy (media_copies.slot). */
  slot: string;
  /** The current signed link to copy from. */
  url: string;
  /** The link without its signature: same file => same id, whatever its oe (R-LNK-2). */
  sourceId: string;
  /** Indexes of post.media this copy stands for. */
  mediaIndexes: number[];
}

export const isImageMime = (mime: string) => mime.startsWith('image/');
export const isVideoMime = (mime: string) => mime.startsWith('video/');

/**
 * R-LNK-5: the files a post's copies are of: its cover (thumbnailUrl: the photo, the video's cover
 * frame, the carousel's first cover), every photo slide, and every video file (slot
 * `video-<index>`, kind video: copied only with MIRROR_VIDEOS=on, else a platform link; the cover
 * stays its poster). A photo slide that is the cover file is copied once, as the cover.
 */
export function imageSlots(post: Post): ImageSlot[] {
  const slots: ImageSlot[] = [];
  const cover = post.thumbnailUrl
    ? {
        kind: 'image' as const,
        slot: 'cover',
        url: post.thumbnailUrl,
        sourceId: sourceIdOf(post.thumbnailUrl),
        mediaIndexes: [] as number[],
      }
    : undefined;
  if (cover) slots.push(cover);
  post.media.forEach((m, i) => {
    if (isVideoMime(m.mime)) {
      slots.push({ kind: 'video', slot: `video-${i}`, url: m.url, sourceId: sourceIdOf(m.url), mediaIndexes: [i] });
      return;
    }
    if (!isImageMime(m.mime)) return;
    const sourceId = sourceIdOf(m.url);
    if (cover && cover.sourceId === sourceId) {
      cover.mediaIndexes.push(i);
      return;
    }
    slots.push({ kind: 'image', slot: `slide-${i}`, url: m.url, sourceId, mediaIndexes: [i] });
  });
  return slots;
}
