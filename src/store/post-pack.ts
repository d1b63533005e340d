import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { derivePost } from '../convert/convert-item.ts';
import type { Post } from '../schema/v1.ts';

/**
 * How a post is kept in the posts table (migrations/018_compact_posts_and_copies.sql). A post is
 * almost always exactly what converting its raw item gives (R-CNV-10: raw is the whole item), so
 * the store keeps only the item, deflated (`posts.raw`), and converts it again when reading: the
 * converted fields repeat the item's caption, permalink and signed links, and storing both would
 * keep each of them twice in every row. Anything else (a post taken over from a published feed,
 * R-OWN-6) is kept whole (`posts.post`). Reading either gives the same object, keys in the same order,
 * as the jsonb column of one whole post gave: published feeds stay byte for byte what they were.
 */

/**
 * `value` with every object's keys in jsonb's order (shorter keys first, then bytewise), the order
 * a post read back from a jsonb column had: JSON.stringify of it is what publishing wrote.
 */
export function jsonbOrdered(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(jsonbOrdered);
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
  entries.sort(([a], [b]) => compareKeys(a, b));
  const out: Record<string, unknown> = {};
  for (const [k, v] of entries) out[k] = jsonbOrdered(v);
  return out;
}

/** Printable ASCII only: UTF-16 order is byte order (anything else is compared as UTF-8 bytes). */
const isAscii = (s: string) => /^[ -~]*$/.test(s);

/** jsonb's order of object keys: by length in UTF-8 bytes, then bytewise. */
function compareKeys(a: string, b: string): number {
  if (isAscii(a) && isAscii(b)) return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length - y.length || Buffer.compare(x, y);
}

/**
 * The deflate dictionary of format 1: the platform item's field names and frequent values, as
 * JSON.stringify writes them. Never change it: rows written with it are read with it. A new
 * dictionary is a new format byte.
 */
const DICTIONARY_V1 = Buffer.from(
  '"is_shared_to_feed":true,"thumbnail_url":"https://scontent.cdninstagram.com/v/t51.2885-15/' +
    '"children":{"data":[{"id":"","media_type":"VIDEO","media_url":"","media_type":"IMAGE","media_url":"' +
    '"media_product_type":"REELS","media_product_type":"FEED","media_type":"CAROUSEL_ALBUM",' +
    '"permalink":"https://www.instagram.com/reel/","permalink":"https://www.instagram.com/p/' +
    '.jpg?stp=dst-jpg&_nc_cat=&ccb=&_nc_sid=&_nc_ohc=&_nc_ht=&oh=&oe=&sig=' +
    '"comments_count":0,"like_count":0,"timestamp":"2026-01-01T00:00:00+0000","username":"' +
    '{"id":"","caption":"',
  'utf8',
);
const FORMAT_DEFLATE_V1 = 1;

/** A raw item as `posts.raw` keeps it: a format byte, then its JSON (keys in jsonb order) deflated. */
export function packRaw(raw: unknown): Buffer {
  const json = Buffer.from(JSON.stringify(jsonbOrdered(raw)), 'utf8');
  return Buffer.concat([Buffer.of(FORMAT_DEFLATE_V1), deflateRawSync(json, { dictionary: DICTIONARY_V1 })]);
}

export function unpackRaw(packed: Buffer): unknown {
  if (packed[0] !== FORMAT_DEFLATE_V1) throw new Error(`unknown packed raw format ${packed[0]}`);
  return JSON.parse(inflateRawSync(packed.subarray(1), { dictionary: DICTIONARY_V1 }).toString('utf8'));
}

/** The two columns of a stored post: exactly one is set. */
export interface PackedPost {
  /** The whole post as JSON (for the jsonb column), when it is not its raw item converted. */
  post: string | null;
  /** packRaw(post.raw), when the post is exactly that item converted. */
  raw: Buffer | null;
}

/** The post convertItem makes of `raw`, or undefined when `raw` gives none (or is no item at all). */
function derived(raw: unknown): Post | undefined {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return undefined;
  try {
    return derivePost(raw as Parameters<typeof derivePost>[0]);
  } catch {
    return undefined; // not an item of the platform's shape: the post is kept whole
  }
}

const withoutRaw = (post: Post) => JSON.stringify(jsonbOrdered({ ...post, raw: undefined }));

export function packPost(post: Post): PackedPost {
  const made = derived(post.raw);
  if (made && withoutRaw(made) === withoutRaw(post)) return { post: null, raw: packRaw(post.raw) };
  return { post: JSON.stringify(post), raw: null };
}

/**
 * The stored post as the jsonb column of a whole post gave it (keys in jsonb order), for the
 * store's schema check. A row holds either column (a CHECK constraint says so).
 */
export function unpackPost(row: { post: unknown; raw: Buffer | null }): unknown {
  if (row.raw === null) return row.post;
  const raw = unpackRaw(row.raw);
  const made = derived(raw);
  if (!made) throw new Error('its raw item no longer converts to a post');
  return jsonbOrdered(made);
}
