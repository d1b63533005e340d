import type { Post } from '../schema/v1.ts';
import { sourceIdOf } from '../util/content-hash.ts';

/**
 * Which images of a post are copied (R-LNK-5). Pure functions; how a post or feed is identified
 * across re-signed links is src/util/content-hash.ts.
 */

export interface ImageSlot {
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

/**
 * R-LNK-5: the images to copy for a post: its cover (thumbnailUrl: the photo, the video's cover
 * frame, the carousel's first cover) and every photo slide. Video files are never copied; they stay
 * platform links. A photo slide that is the cover file is copied once, as the cover.
 */
export function imageSlots(post: Post): ImageSlot[] {
  const slots: ImageSlot[] = [];
  const cover = post.thumbnailUrl
    ? { slot: 'cover', url: post.thumbnailUrl, sourceId: sourceIdOf(post.thumbnailUrl), mediaIndexes: [] as number[] }
    : undefined;
  if (cover) slots.push(cover);
  post.media.forEach((m, i) => {
    if (!isImageMime(m.mime)) return;
    const sourceId = sourceIdOf(m.url);
    if (cover && cover.sourceId === sourceId) {
      cover.mediaIndexes.push(i);
      return;
    }
    slots.push({ slot: `slide-${i}`, url: m.url, sourceId, mediaIndexes: [i] });
  });
  return slots;
}
