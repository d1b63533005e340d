import { createHash } from 'node:crypto';
import os from 'node:os';
import sharp, { type Metadata, type OutputInfo, type Sharp } from 'sharp';
import { rgbaToThumbHash } from 'thumbhash';
import { ImageTooLargeError, InvalidImageError } from './errors.ts';

/**
 * sharp, configured once for a small worker: no libvips operation cache (each image is processed
 * once, a cache only holds memory) and few threads per image, because parallelism comes from
 * concurrent jobs; on 2 cores more threads per image only fight each other.
 */
sharp.cache(false);
sharp.concurrency(Math.max(1, Math.floor(os.availableParallelism() / 2)));

/** Encodings of the resized variants (MEDIA_VARIANT_FORMATS). */
export const VARIANT_FORMATS = ['webp', 'avif'] as const;
export type VariantFormat = (typeof VARIANT_FORMATS)[number];

export interface ProcessImageOptions {
  maxPixels: number;
  /** Candidate widths of the srcset ladder; those too close to the original's width are skipped (variantLadder). */
  variantWidths: number[];
  /** Each width is encoded in each of these; WebP when not given. */
  formats?: readonly VariantFormat[];
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
  contentType: 'image/webp' | 'image/avif';
  ext: VariantFormat;
}

/** What a page paints while the image loads. */
export interface Placeholder {
  /** Dominant colour, `#rrggbb`. */
  color: string;
  /** ThumbHash (https://evanw.github.io/thumbhash/), base64: a ~25-byte blurred preview with the image's aspect ratio. */
  thumbhash: string;
}

export interface ProcessedImage {
  original: ProcessedOriginal;
  variants: ProcessedVariant[];
  placeholder: Placeholder;
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
// Effort 2 instead of libwebp's default 4: the higher efforts spend much more CPU per image for
// barely smaller files, and a worker's throughput is its CPU (docs/benchmarks.md measures it).
const WEBP_EFFORT = 2;
// AVIF at 50 looks like WebP at 80 at a smaller size; effort 2 keeps its CPU cost bounded (the
// default, 4, costs many times more for slightly fewer bytes; docs/benchmarks.md).
const AVIF_QUALITY = 50;
const AVIF_EFFORT = 2;
const MIME: Record<VariantFormat, ProcessedVariant['contentType']> = { webp: 'image/webp', avif: 'image/avif' };
/** ThumbHash encodes images of at most 100x100. */
const THUMBHASH_MAX = 100;
/**
 * A variant must be at least this much narrower than the original to be worth its bytes: a
 * 1000 px variant of a 1080 px original saves a browser almost nothing over the original itself.
 */
const MIN_STEP_BELOW_ORIGINAL = 1.15;

/**
 * The widths to encode for an original `width` px wide: the configured ladder (about 1.5x steps
 * from 160 px by default), never upscaled, and none so close to the original that the original
 * (always the top of the ladder) serves as well.
 */
export function variantLadder(width: number, candidates: readonly number[]): number[] {
  return [...new Set(candidates)]
    .filter((w) => Number.isInteger(w) && w > 0 && w * MIN_STEP_BELOW_ORIGINAL <= width)
    .sort((a, b) => a - b);
}

/**
 * Validate, measure and resize one downloaded image. The pixel limit is checked from the header
 * BEFORE anything is decoded (decompression bombs), and passed to libvips as limitInputPixels too.
 */
export async function processImage(input: Buffer, opts: ProcessImageOptions): Promise<ProcessedImage> {
  let meta: Metadata;
  try {
    // Header only: cheap, and nothing large is allocated yet.
    meta = await sharp(input, { limitInputPixels: false }).metadata();
  } catch (err) {
    throw new InvalidImageError(`downloaded bytes are not an image (${input.length} bytes)`, { cause: err });
  }
  const format = String(meta.format);
  if (!KEPT[format] && !REENCODED.has(format)) {
    throw new InvalidImageError(
      `unsupported image format ${format}; expected JPEG, PNG, WebP, GIF, AVIF, HEIF or TIFF`,
    );
  }
  if (!meta.width || !meta.height) throw new InvalidImageError(`image has no dimensions (${format})`);
  const pixels = meta.width * meta.height;
  if (pixels > opts.maxPixels) {
    throw new ImageTooLargeError(
      `image is ${meta.width}x${meta.height} (${pixels} pixels), more than MEDIA_MAX_PIXELS ${opts.maxPixels}`,
      pixels,
      opts.maxPixels,
    );
  }
  // R-CNV-11: the displayed size, after EXIF orientation (browsers apply it to kept JPEGs too).
  const width = meta.autoOrient.width;
  const height = meta.autoOrient.height;

  const decodeFailure = (err: unknown) =>
    new InvalidImageError(`image data is corrupt or truncated (${format}, ${width}x${height})`, { cause: err });
  /**
   * Every output is a pipeline of its own from the file, EXIF orientation applied. The decoded
   * pixels never come into JavaScript: a raw copy of a photo is megabytes of Buffer per image in
   * flight, and that churn of external memory makes V8 run full collections every few images,
   * each costing more the larger the worker's live heap (more CPU per image and more RSS, growing
   * with the copies at once; `npm run bench` measures both). Decoding again per output is cheaper
   * than it sounds: libjpeg and libwebp shrink on load, so a 160 px variant decodes 1/8 of the
   * pixels; only widths above half the original's decode in full.
   */
  const open = () => sharp(input, { limitInputPixels: opts.maxPixels, failOn: 'error' }).autoOrient();
  const output = async (pipeline: Sharp) => {
    try {
      return await pipeline.toBuffer({ resolveWithObject: true });
    } catch (err) {
      throw decodeFailure(err);
    }
  };

  let original: ProcessedOriginal;
  const kept = KEPT[format];
  if (kept) {
    original = { buffer: input, contentType: kept.contentType, ext: kept.ext, width, height, sha256: sha256(input) };
  } else {
    const { data: out } = await output(meta.hasAlpha ? open().png() : open().jpeg({ quality: 90, mozjpeg: true }));
    original = meta.hasAlpha
      ? { buffer: out, contentType: 'image/png', ext: 'png', width, height, sha256: sha256(out) }
      : { buffer: out, contentType: 'image/jpeg', ext: 'jpg', width, height, sha256: sha256(out) };
  }

  // The placeholder first: its decode is the cheapest (1/8 scale where the format allows), so a
  // corrupt file is refused before any variant is encoded.
  const placeholder = await placeholderOf(open, output);
  const formats: readonly VariantFormat[] =
    opts.formats && opts.formats.length > 0 ? [...new Set(opts.formats)] : ['webp'];
  const variants: ProcessedVariant[] = [];
  for (const w of variantLadder(width, opts.variantWidths)) {
    for (const format of formats) {
      // toColourspace: greyscale and CMYK become sRGB, as browsers expect of WebP and AVIF.
      const resized = open().resize({ width: w, withoutEnlargement: true }).toColourspace('srgb');
      const encoded =
        format === 'avif'
          ? resized.avif({ quality: AVIF_QUALITY, effort: AVIF_EFFORT })
          : resized.webp({ quality: WEBP_QUALITY, effort: WEBP_EFFORT });
      const { data, info } = await output(encoded);
      variants.push({ width: info.width, height: info.height, buffer: data, contentType: MIME[format], ext: format });
    }
  }
  return { original, variants, placeholder };
}

function sha256(buf: Buffer): string {
  return createHash('sha256').update(buf).digest('hex');
}

/**
 * Dominant colour and ThumbHash, from the image scaled to fit 100x100 (ThumbHash's limit; the
 * colour of 10,000 pixels is the colour of the image).
 */
async function placeholderOf(
  open: () => Sharp,
  output: (p: Sharp) => Promise<{ data: Buffer; info: OutputInfo }>,
): Promise<Placeholder> {
  const small = await output(
    open()
      .resize({ width: THUMBHASH_MAX, height: THUMBHASH_MAX, fit: 'inside' })
      .toColourspace('srgb')
      .ensureAlpha()
      .raw({ depth: 'uchar' }),
  );
  const hash = rgbaToThumbHash(small.info.width, small.info.height, small.data);
  const { dominant } = await sharp(small.data, {
    raw: { width: small.info.width, height: small.info.height, channels: 4 },
  }).stats();
  const hex = (n: number) =>
    Math.max(0, Math.min(255, Math.round(n)))
      .toString(16)
      .padStart(2, '0');
  return {
    color: `#${hex(dominant.r)}${hex(dominant.g)}${hex(dominant.b)}`,
    thumbhash: Buffer.from(hash).toString('base64'),
  };
}
