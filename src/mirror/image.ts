import { createHash } from 'node:crypto';
import os from 'node:os';
import sharp, { type Metadata } from 'sharp';
import { ImageTooLargeError, InvalidImageError } from './errors.ts';

/**
 * sharp, configured once for a small worker: no libvips operation cache (each image is processed
 * once, a cache only holds memory) and few threads per image, because parallelism comes from
 * concurrent jobs; on 2 cores more threads per image only fight each other.
 */
sharp.cache(false);
sharp.concurrency(Math.max(1, Math.floor(os.availableParallelism() / 2)));

export interface ProcessImageOptions {
  maxPixels: number;
  variantWidths: number[];
}

export interface ProcessedOriginal {
  buffer: Buffer;
  contentType: string;
  ext: string;
  /** Displayed size, EXIF orientation applied (R-CNV-11: measured, never guessed). */
  width: number;
  height: number;
  sha256: string;
}

export interface ProcessedVariant {
  width: number;
  height: number;
  buffer: Buffer;
  contentType: 'image/webp';
  ext: 'webp';
}

export interface ProcessedImage {
  original: ProcessedOriginal;
  variants: ProcessedVariant[];
}

/** Formats browsers show everywhere: kept byte for byte. */
const KEPT: Record<string, { contentType: string; ext: string }> = {
  jpeg: { contentType: 'image/jpeg', ext: 'jpg' },
  png: { contentType: 'image/png', ext: 'png' },
  webp: { contentType: 'image/webp', ext: 'webp' },
};
/** Readable raster formats we re-encode for the original (JPEG, or PNG when transparent). */
const REENCODED = new Set(['gif', 'avif', 'heif', 'tiff']);
// SVG, PDF and the rest are refused: an SVG served from our origin could carry script.

const WEBP_QUALITY = 80;

/**
 * Validate, measure and resize one downloaded image. The pixel limit is checked from the header
 * BEFORE anything is decoded (decompression bombs), and passed to libvips as limitInputPixels too.
 */
export async function processImage(input: Buffer, opts: ProcessImageOptions): Promise<ProcessedImage> {
  const open = () => sharp(input, { limitInputPixels: opts.maxPixels, failOn: 'error' });
  let meta: Metadata;
  try {
    // Header only: cheap, and nothing large is allocated yet.
    meta = await sharp(input, { limitInputPixels: false }).metadata();
  } catch (err) {
    throw new InvalidImageError(`downloaded bytes are not an image (${input.length} bytes)`, { cause: err });
  }
  const format = String(meta.format);
  if (!KEPT[format] && !REENCODED.has(format)) {
    throw new InvalidImageError(`unsupported image format ${format}; expected JPEG, PNG, WebP, GIF, AVIF, HEIF or TIFF`);
  }
  if (!meta.width || !meta.height) throw new InvalidImageError(`image has no dimensions (${format})`);
  const pixels = meta.width * meta.height;
  if (pixels > opts.maxPixels) {
    throw new ImageTooLargeError(`image is ${meta.width}x${meta.height} (${pixels} pixels), more than MEDIA_MAX_PIXELS ${opts.maxPixels}`, pixels, opts.maxPixels);
  }
  // R-CNV-11: the displayed size, after EXIF orientation (browsers apply it to kept JPEGs too).
  const width = meta.autoOrient?.width ?? meta.width;
  const height = meta.autoOrient?.height ?? meta.height;

  const decodeFailure = (err: unknown) => new InvalidImageError(`image data is corrupt or truncated (${format}, ${width}x${height})`, { cause: err });

  let original: ProcessedOriginal;
  const kept = KEPT[format];
  if (kept) {
    original = { buffer: input, contentType: kept.contentType, ext: kept.ext, width, height, sha256: sha256(input) };
  } else {
    const pipeline = open().autoOrient();
    const out = await (meta.hasAlpha ? pipeline.png() : pipeline.jpeg({ quality: 90, mozjpeg: true })).toBuffer().catch((err: unknown) => {
      throw decodeFailure(err);
    });
    original = meta.hasAlpha
      ? { buffer: out, contentType: 'image/png', ext: 'png', width, height, sha256: sha256(out) }
      : { buffer: out, contentType: 'image/jpeg', ext: 'jpg', width, height, sha256: sha256(out) };
  }

  // No enlargement: a width at or above the original's adds nothing the original does not have.
  const widths = [...new Set(opts.variantWidths)].filter((w) => Number.isInteger(w) && w > 0 && w < width).sort((a, b) => a - b);
  const variants: ProcessedVariant[] = [];
  for (const w of widths) {
    const { data, info } = await open()
      .autoOrient()
      .resize({ width: w, withoutEnlargement: true })
      .webp({ quality: WEBP_QUALITY })
      .toBuffer({ resolveWithObject: true })
      .catch((err: unknown) => {
        throw decodeFailure(err);
      });
    variants.push({ width: info.width, height: info.height, buffer: data, contentType: 'image/webp', ext: 'webp' });
  }
  if (kept && variants.length === 0) {
    // Kept as-is and never decoded by a variant: decode once so a truncated file is caught here.
    await open().raw().toBuffer().catch((err: unknown) => {
      throw decodeFailure(err);
    });
  }
  return { original, variants };
}

function sha256(buf: Buffer): string {
  return createHash('sha256').update(buf).digest('hex');
}
