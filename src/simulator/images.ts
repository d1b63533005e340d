import sharp from 'sharp';
import { createHash } from 'node:crypto';

/**
 * The bytes behind the fake CDN's links: real JPEGs, distinct per media and slot (a gradient whose
 * colours come from a hash of the key, with the key written on it), and a tiny MP4-shaped body for
 * video files (never decoded by feedmirror: videos are not copied, R-LNK-5). Generated once.
 */

const jpegCache = new Map<string, Promise<Buffer>>();
const CACHE_MAX = 2000;

function colour(hash: Buffer, offset: number): string {
  return `#${hash.subarray(offset, offset + 3).toString('hex')}`;
}

function escapeXml(s: string): string {
  return s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function jpegFor(key: string, width: number, height: number): Promise<Buffer> {
  const cacheKey = `${key}@${width}x${height}`;
  let hit = jpegCache.get(cacheKey);
  if (!hit) {
    const h = createHash('sha256').update(cacheKey).digest();
    const fontSize = Math.max(10, Math.round(Math.min(width, height) / 18));
    const svg =
      `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">` +
      `<defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1">` +
      `<stop offset="0" stop-color="${colour(h, 0)}"/><stop offset="1" stop-color="${colour(h, 3)}"/></linearGradient></defs>` +
      `<rect width="100%" height="100%" fill="url(#g)"/>` +
      `<text x="${fontSize}" y="${fontSize * 2}" font-family="sans-serif" font-size="${fontSize}" fill="#ffffff">${escapeXml(key)}</text>` +
      `</svg>`;
    hit = sharp(Buffer.from(svg)).jpeg({ quality: 80 }).toBuffer();
    // A failed render must not stay cached.
    hit.catch(() => jpegCache.delete(cacheKey));
    if (jpegCache.size >= CACHE_MAX) {
      const oldest = jpegCache.keys().next().value;
      if (oldest !== undefined) jpegCache.delete(oldest);
    }
    jpegCache.set(cacheKey, hit);
  }
  return hit;
}

/** An `ftyp` box and a `free` box naming the media: enough to look like MP4, small to serve. */
export function mp4For(key: string): Buffer {
  const ftyp = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), Buffer.from([0, 0, 2, 0]), Buffer.from('isommp42')]);
  const payload = Buffer.from(`feedmirror simulator video ${key}`);
  const size = Buffer.alloc(4);
  size.writeUInt32BE(8 + payload.length);
  return Buffer.concat([ftyp, size, Buffer.from('free'), payload]);
}
