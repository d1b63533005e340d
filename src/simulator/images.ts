import sharp from 'sharp';
import { createHash } from 'node:crypto';

/**
 * The bytes behind the fake CDN's links: real JPEGs, distinct per media and slot (a gradient whose
 * colours come from a hash of the key, with the key written on it), and a tiny MP4-shaped body for
 * video files (never decoded by feedmirror: videos are not copied, R-LNK-5).
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

function colour(hash: Buffer, offset: number): string {
  return `#${hash.subarray(offset, offset + 3).toString('hex')}`;
}

function escapeXml(s: string): string {
  return s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function render(key: string, width: number, height: number, cacheKey: string): Promise<Buffer> {
  const h = createHash('sha256').update(cacheKey).digest();
  const fontSize = Math.max(10, Math.round(Math.min(width, height) / 18));
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">` +
    `<defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1">` +
    `<stop offset="0" stop-color="${colour(h, 0)}"/><stop offset="1" stop-color="${colour(h, 3)}"/></linearGradient></defs>` +
    `<rect width="100%" height="100%" fill="url(#g)"/>` +
    `<text x="${fontSize}" y="${fontSize * 2}" font-family="sans-serif" font-size="${fontSize}" fill="#ffffff">${escapeXml(key)}</text>` +
    `</svg>`;
  return sharp(Buffer.from(svg)).jpeg({ quality: 80 }).toBuffer();
}

export function jpegFor(key: string, width: number, height: number): Promise<Buffer> {
  const cacheKey = `${key}@${width}x${height}`;
  const hit = jpegCache.get(cacheKey);
  if (hit) {
    // LRU: a hit becomes the most recent entry.
    jpegCache.delete(cacheKey);
    jpegCache.set(cacheKey, hit);
    return hit;
  }
  const rendering = render(key, width, height, cacheKey);
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

/** An `ftyp` box and a `free` box naming the media: enough to look like MP4, small to serve. */
export function mp4For(key: string): Buffer {
  const ftyp = Buffer.concat([
    Buffer.from([0, 0, 0, 0x18]),
    Buffer.from('ftypisom'),
    Buffer.from([0, 0, 2, 0]),
    Buffer.from('isommp42'),
  ]);
  const payload = Buffer.from(`feedmirror simulator video ${key}`);
  const size = Buffer.alloc(4);
  size.writeUInt32BE(8 + payload.length);
  return Buffer.concat([ftyp, size, Buffer.from('free'), payload]);
}
