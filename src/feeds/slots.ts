import { createHash } from 'node:crypto';
import type { Post } from '../schema/v1.ts';

/**
 * Which images of a post are copied, and how a post or feed is identified across re-signed links.
 * Pure functions.
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

/**
 * A link's identity without its signed query string (oe, signature): scheme, host and path. A
 * re-signed link of the same file keeps it; a new file (an edited post) has a new path.
 */
export function sourceIdOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return url.split('?')[0] ?? url;
  }
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

/** Signed query strings removed from every http(s) string, recursively (hashing only). */
export function withoutSignatures(value: unknown): unknown {
  if (typeof value === 'string') return /^https?:\/\/[^?]*\?/.test(value) ? sourceIdOf(value) : value;
  if (Array.isArray(value)) return value.map(withoutSignatures);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = withoutSignatures(v);
    return out;
  }
  return value;
}

/** JSON with object keys sorted, so equal content always hashes equal. */
export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** What a post or feed is, ignoring link signatures: links are re-signed on every read. */
export function contentHash(value: unknown): string {
  return createHash('sha256')
    .update(stableStringify(withoutSignatures(value)))
    .digest('hex');
}
