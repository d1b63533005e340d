import sharp, { type Sharp } from 'sharp';
import { bundledPhoto } from './photos.ts';
import { makeMp4 } from './mp4.ts';
import { avatarSvg, sceneSvg } from './scene.ts';

/**
 * The bytes behind the fake CDN's links: real JPEGs, distinct per media and slot (a generated
 * landscape, scene.ts, chosen by a hash of the key; or, for an account that posts photographs, a
 * bundled photo cropped to the post's size, photos.ts; the key itself is in the EXIF description,
 * never drawn, R-SIM-3), and real playable MP4s for video files (mp4.ts: made in code, a still
 * picture per key, played by browsers and copied by MIRROR_VIDEOS).
 *
 * Rendered JPEGs are kept in a small LRU cache (bounded by entries AND bytes): a fake's cache must
 * not grow with the number of posts served, or a long simulator run (or the benchmark) holds every
 * image it ever rendered. A miss only costs a re-render: the bytes are deterministic per key.
 */

export interface JpegCacheLimits {
  maxEntries: number;
  maxBytes: number;
}
const DEFAULT_LIMITS: JpegCacheLimits = { maxEntries: 256, maxBytes: 32 * 1024 * 1024 };
let limits: JpegCacheLimits = { ...DEFAULT_LIMITS };

/** Insertion order = recency order (a hit is moved to the end); the first key is the least recent. */
const jpegCache = new Map<string, Promise<Buffer>>();
/** Sizes of the renders that have finished (pending ones count 0 until then). */
const sizes = new Map<string, number>();
let cachedBytes = 0;

/**
 * Change the cache's bounds for this process (the benchmark's service process enlarges it so the
 * fake CDN's rendering stays out of the pipeline's figures). Evicts at once when they shrink.
 */
export function configureJpegCache(next: Partial<JpegCacheLimits>): void {
  limits = { ...limits, ...next };
  evict();
}

/** For tests and the benchmark: what the cache holds now. */
export function jpegCacheStats(): { entries: number; bytes: number } & JpegCacheLimits {
  return { entries: jpegCache.size, bytes: cachedBytes, ...limits };
}

function forget(key: string): void {
  jpegCache.delete(key);
  const size = sizes.get(key);
  if (size !== undefined) {
    cachedBytes -= size;
    sizes.delete(key);
  }
}

function evict(): void {
  while (jpegCache.size > limits.maxEntries || (cachedBytes > limits.maxBytes && jpegCache.size > 0)) {
    const oldest = jpegCache.keys().next().value;
    if (oldest === undefined) break;
    forget(oldest);
  }
}

/** The scene is drawn this many pixels along its longer side, then scaled up (soft, as a photo). */
const DRAW_SIZE = 480;

/** Where the key sits in every JPEG: the EXIF description (invisible; `imageKeyOf` reads it back). */
export const KEY_PREFIX = 'feedmirror-simulator ';

/** The key in the EXIF description, then the JPEG's bytes (the same settings for scenes and photos). */
function finish(image: Sharp, key: string): Promise<Buffer> {
  return image
    .withExif({ IFD0: { ImageDescription: `${KEY_PREFIX}${key}` } })
    .jpeg({ quality: 82 })
    .toBuffer();
}

async function render(key: string, width: number, height: number, look: JpegLook): Promise<Buffer> {
  if (look.photo !== undefined) {
    // A photograph: cropped to the post's shape (keeping the part the photo's entry names), scaled to its size.
    const { photo, bytes } = bundledPhoto(look.photo);
    return finish(sharp(await bytes).resize(width, height, { fit: 'cover', position: photo.position }), key);
  }
  const scale = Math.min(1, DRAW_SIZE / Math.max(width, height));
  const w = Math.max(1, Math.round(width * scale));
  const h = Math.max(1, Math.round(height * scale));
  const svg = look.avatarName !== undefined ? avatarSvg(key, look.avatarName, Math.max(w, h)) : sceneSvg(key, w, h);
  // Drawn small, then scaled up from raw pixels: softer (as a photo) and faster than drawing it full size.
  const drawn = await sharp(Buffer.from(svg)).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const { width: dw, height: dh, channels } = drawn.info;
  return finish(
    sharp(drawn.data, { raw: { width: dw, height: dh, channels } }).resize(width, height, {
      fit: 'fill',
      kernel: 'linear',
    }),
    key,
  );
}

/** The key a simulator JPEG was rendered for (its EXIF description), or undefined. */
export async function imageKeyOf(jpeg: Buffer): Promise<string | undefined> {
  const { exif } = await sharp(jpeg).metadata();
  if (!exif) return undefined;
  const text = exif.toString('latin1');
  const at = text.indexOf(KEY_PREFIX);
  if (at === -1) return undefined;
  return /^[^\0]*/.exec(text.slice(at + KEY_PREFIX.length))?.[0];
}

/**
 * What a JPEG shows: a generated scene (scene.ts) unless `avatarName` asks for a profile picture
 * (the account's initials on a disc of colour) or `photo` for bundled photograph number `photo`
 * (photos.ts, any integer).
 */
export interface JpegLook {
  avatarName?: string | undefined;
  photo?: number | undefined;
}

/** The JPEG for a media slot, as `look` says (a generated scene by default). */
export function jpegFor(key: string, width: number, height: number, look: JpegLook = {}): Promise<Buffer> {
  const cacheKey = `${key}@${width}x${height}${look.avatarName !== undefined ? `:${look.avatarName}` : ''}${look.photo !== undefined ? `#${look.photo}` : ''}`;
  const hit = jpegCache.get(cacheKey);
  if (hit) {
    // LRU: a hit becomes the most recent entry.
    jpegCache.delete(cacheKey);
    jpegCache.set(cacheKey, hit);
    return hit;
  }
  const rendering = render(key, width, height, look);
  jpegCache.set(cacheKey, rendering);
  rendering.then(
    (buf) => {
      // Still cached (not evicted while rendering): now its bytes count.
      if (jpegCache.get(cacheKey) !== rendering) return;
      sizes.set(cacheKey, buf.length);
      cachedBytes += buf.length;
      evict();
    },
    // A failed render must not stay cached.
    () => {
      if (jpegCache.get(cacheKey) === rendering) forget(cacheKey);
    },
  );
  evict();
  return rendering;
}

/** Made MP4s by key and size: tens of KB each, so a few dozen are kept. */
const mp4Cache = new Map<string, Buffer>();
const MP4_CACHE_ENTRIES = 64;

/** A playable MP4 of the key, its track header at the post's display size (mp4.ts). */
export function mp4For(key: string, size: { width: number; height: number }): Buffer {
  const id = `${key}@${size.width}x${size.height}`;
  let file = mp4Cache.get(id);
  if (!file) {
    file = makeMp4(key, size);
    if (mp4Cache.size >= MP4_CACHE_ENTRIES) mp4Cache.delete(mp4Cache.keys().next().value!);
    mp4Cache.set(id, file);
  }
  return file;
}
