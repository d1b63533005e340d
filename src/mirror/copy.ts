import { z } from 'zod';
import type { Config } from '../config.ts';
import { InvalidKeyError } from '../storage/errors.ts';
import { mediaKey, mediaPrefix, SLOT_PATTERN, variantKey } from '../storage/keys.ts';
import type { ObjectStorage } from '../storage/types.ts';
import type { Clock } from '../util/clock.ts';
import { downloadImage } from './download.ts';
import { processImage, type Placeholder, type VariantFormat } from './image.ts';
import { ID_PATTERN } from '../util/ids.ts';

/** Mirrored copies never change under their name (content-addressed), so caches may keep them forever. */
export const IMMUTABLE_CACHE_CONTROL = 'public, max-age=31536000, immutable';
/** The manifest can be rewritten (force); nobody outside should cache it. */
export const MANIFEST_CACHE_CONTROL = 'no-cache';

export interface MirrorLimits {
  allowedHosts: string[];
  maxBytes: number;
  maxPixels: number;
  timeoutMs: number;
  variantWidths: number[];
  /** Encodings of each variant width; WebP when absent. */
  variantFormats?: readonly VariantFormat[];
  /** MIRROR_VIDEOS=on: video files are copied too, within these caps (src/mirror/video.ts); absent: off. */
  videos?: VideoLimits;
}

export interface VideoLimits {
  /** VIDEO_MAX_BYTES: the largest video file copied. */
  maxBytes: number;
  /** VIDEO_MAX_BYTES_PER_ACCOUNT: the bytes of video copies one account may hold. */
  maxBytesPerAccount: number;
}

export function mirrorLimitsFromConfig(
  config: Pick<
    Config,
    | 'MEDIA_ALLOWED_HOSTS'
    | 'MEDIA_MAX_BYTES'
    | 'MEDIA_MAX_PIXELS'
    | 'MEDIA_TIMEOUT_MS'
    | 'MEDIA_VARIANT_WIDTHS'
    | 'MEDIA_VARIANT_FORMATS'
    | 'MIRROR_VIDEOS'
    | 'VIDEO_MAX_BYTES'
    | 'VIDEO_MAX_BYTES_PER_ACCOUNT'
  >,
): MirrorLimits {
  return {
    ...(config.MIRROR_VIDEOS
      ? { videos: { maxBytes: config.VIDEO_MAX_BYTES, maxBytesPerAccount: config.VIDEO_MAX_BYTES_PER_ACCOUNT } }
      : {}),
    variantFormats: config.MEDIA_VARIANT_FORMATS,
    allowedHosts: config.MEDIA_ALLOWED_HOSTS,
    maxBytes: config.MEDIA_MAX_BYTES,
    maxPixels: config.MEDIA_MAX_PIXELS,
    timeoutMs: config.MEDIA_TIMEOUT_MS,
    variantWidths: config.MEDIA_VARIANT_WIDTHS,
  };
}

export interface MirrorDeps {
  storage: ObjectStorage;
  download?: typeof downloadImage;
  limits: MirrorLimits;
  /** For the oe check before downloading. */
  clock?: Clock;
}

export interface MirrorJob {
  accountId: string;
  mediaId: string;
  /** 'cover', 'slide-0', ...: one image of a media item. */
  slot: string;
  /** The signed link; never stored, never logged. */
  url: string;
  /** Ignore an existing manifest and copy again (a changed image). */
  force?: boolean;
  /**
   * The link without its signature (scheme, host, path): which file this copy is of. Kept in the
   * manifest, so a reconnected account's copies are known again from storage alone.
   */
  sourceId?: string;
  /** The link's expiry as stored with the post (R-LNK-1): a dead link is not even requested. */
  expiresAt?: Date | null;
  /**
   * No earlier attempt of this copy has run (the job's first start): nothing of it can be in
   * storage yet, so the manifest is not read. On a first copy that read only ever answers 404,
   * and it was one storage request in eight per image. A retried or re-delivered job leaves
   * this unset and finds what a crashed attempt finished.
   */
  firstAttempt?: boolean;
}

export interface MirroredVariant {
  key: string;
  url: string;
  width: number;
  height: number;
  contentType: string;
}

export interface MirroredImage {
  key: string;
  /** storage.publicUrl(key): what the feed points at. */
  url: string;
  width: number;
  height: number;
  contentType: string;
  bytes: number;
  variants: MirroredVariant[];
  /** Absent only for copies made before placeholders existed (until `media rebuild`). */
  placeholder?: Placeholder;
  /** True when an earlier run's manifest was found and nothing was downloaded or uploaded. */
  reused: boolean;
}

/** The slot names the copy accepts: the deletion guard knows a copy's objects by them (R-DEL-2). */
const SLOT_RE = SLOT_PATTERN;

/** What we store next to the copies. URLs are not stored: they follow MEDIA_PUBLIC_URL at read time. */
export const manifestSchema = z.object({
  version: z.literal(1),
  key: z.string().min(1),
  width: z.number().int().positive(),
  height: z.number().int().positive(),
  contentType: z.string().min(1),
  bytes: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  variants: z.array(
    z.object({
      key: z.string().min(1),
      width: z.number().int().positive(),
      height: z.number().int().positive(),
      // Manifests written before MEDIA_VARIANT_FORMATS held WebP only.
      contentType: z.string().min(1).default('image/webp'),
    }),
  ),
  placeholder: z.object({ color: z.string().regex(/^#[0-9a-f]{6}$/), thumbhash: z.string().min(1) }).optional(),
  // The file copied (its link without signature); manifests written before it was kept lack it.
  source: z.string().min(1).optional(),
  // A video file's running time (src/mirror/video.ts), read from its MP4 header.
  durationSec: z.number().positive().optional(),
});
type Manifest = z.output<typeof manifestSchema>;
export type CopyManifest = Manifest;

export function manifestKey(accountId: string, mediaId: string, slot: string): string {
  return mediaKey(accountId, mediaId, `${checkSlot(slot)}.json`);
}

export function checkSlot(slot: string): string {
  if (typeof slot !== 'string' || !SLOT_RE.test(slot))
    throw new InvalidKeyError('slot', String(slot), 'must be 1-64 characters of a-z 0-9 -, like cover or slide-0');
  return slot;
}

function fromManifest(storage: ObjectStorage, m: Manifest, reused: boolean): MirroredImage {
  return {
    key: m.key,
    url: storage.publicUrl(m.key),
    width: m.width,
    height: m.height,
    contentType: m.contentType,
    bytes: m.bytes,
    variants: m.variants.map((v) => ({ ...v, url: storage.publicUrl(v.key) })),
    ...(m.placeholder ? { placeholder: m.placeholder } : {}),
    reused,
  };
}

export async function readManifest(storage: ObjectStorage, key: string): Promise<Manifest | undefined> {
  const obj = await storage.get(key);
  if (!obj) return undefined;
  try {
    return manifestSchema.parse(JSON.parse(obj.body.toString('utf8')));
  } catch {
    return undefined; // unreadable manifest: copy again, the content-addressed names make it harmless
  }
}

/**
 * Copy one image of a media item into storage before its link expires (R-LNK-5): download, check,
 * measure (R-CNV-11), resize, upload the original and its variants, then write the manifest LAST.
 * The manifest is the commit point: when it exists the copy is complete and this returns it
 * without downloading or uploading anything, so a job delivered twice costs one GET of storage
 * (a job's first attempt skips that GET: see MirrorJob.firstAttempt).
 * Object names carry the first 16 hex digits of the original's sha256: a run that crashed midway
 * re-uploads under the same names, leaving no duplicates.
 * Errors: LinkExpiredError (renew the link, R-LNK-3), DownloadError, TooLargeError,
 * DisallowedHostError, InvalidImageError, ImageTooLargeError, StorageError.
 */
export async function mirrorImage(deps: MirrorDeps, job: MirrorJob): Promise<MirroredImage> {
  const { storage, limits } = deps;
  const slot = checkSlot(job.slot);
  const mKey = manifestKey(job.accountId, job.mediaId, slot);

  if (!job.force && !job.firstAttempt) {
    const existing = await readManifest(storage, mKey);
    if (existing) return fromManifest(storage, existing, true);
  }

  const download = deps.download ?? downloadImage;
  const downloaded = await download(job.url, {
    allowedHosts: limits.allowedHosts,
    maxBytes: limits.maxBytes,
    timeoutMs: limits.timeoutMs,
    ...(deps.clock ? { clock: deps.clock } : {}),
    ...(job.expiresAt !== undefined ? { expiresAt: job.expiresAt } : {}),
  });
  const { original, variants, placeholder } = await processImage(downloaded.body, {
    maxPixels: limits.maxPixels,
    variantWidths: limits.variantWidths,
    ...(limits.variantFormats ? { formats: limits.variantFormats } : {}),
  });

  const sha16 = original.sha256.slice(0, 16);
  const key = mediaKey(job.accountId, job.mediaId, `${slot}-${sha16}.${original.ext}`);
  const storedVariants: Manifest['variants'] = variants.map((v) => ({
    key: variantKey(key, v.width, v.contentType),
    width: v.width,
    height: v.height,
    contentType: v.contentType,
  }));
  // The original and its variants in parallel: each PUT is a round trip, and a job waiting on them
  // one by one holds a concurrency slot doing nothing. Only the manifest must come after them all.
  // allSettled: on a failure every other PUT has finished before the job reports it, so no write
  // of this attempt is still in flight when a retry starts.
  const settled = await Promise.allSettled([
    storage.put(key, original.buffer, { contentType: original.contentType, cacheControl: IMMUTABLE_CACHE_CONTROL }),
    ...variants.map((v, i) =>
      storage.put(storedVariants[i]!.key, v.buffer, {
        contentType: v.contentType,
        cacheControl: IMMUTABLE_CACHE_CONTROL,
      }),
    ),
  ]);
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;

  const manifest: Manifest = {
    version: 1,
    key,
    width: original.width,
    height: original.height,
    contentType: original.contentType,
    bytes: original.buffer.length,
    sha256: original.sha256,
    variants: storedVariants,
    placeholder,
    ...(job.sourceId ? { source: job.sourceId } : {}),
  };
  await storage.put(mKey, Buffer.from(JSON.stringify(manifest)), {
    contentType: 'application/json',
    cacheControl: MANIFEST_CACHE_CONTROL,
  });
  return fromManifest(storage, manifest, false);
}

/**
 * Re-encode an existing copy with the current ladder and formats (`feedmirror media rebuild`):
 * the stored original is read back (never downloaded again: its link may be long dead), its
 * variants and placeholder made anew, uploaded under the same content-addressed names, and the
 * manifest rewritten last. Variants of widths no longer in the ladder are left for the media
 * sweep, so a feed still pointing at them keeps working until it is republished. null when the
 * original is gone from storage.
 */
export async function reencodeMirroredImage(
  deps: Pick<MirrorDeps, 'storage' | 'limits'>,
  t: { accountId: string; mediaId: string; slot: string; key: string; sourceId?: string },
): Promise<MirroredImage | null> {
  const { storage, limits } = deps;
  const slot = checkSlot(t.slot);
  const obj = await storage.get(t.key);
  if (!obj) return null;
  const { original, variants, placeholder } = await processImage(obj.body, {
    maxPixels: limits.maxPixels,
    variantWidths: limits.variantWidths,
    ...(limits.variantFormats ? { formats: limits.variantFormats } : {}),
  });
  // The stored original is kept as it is (a re-encoded GIF or TIFF was stored as JPEG/PNG already).
  const storedVariants: Manifest['variants'] = variants.map((v) => ({
    key: variantKey(t.key, v.width, v.contentType),
    width: v.width,
    height: v.height,
    contentType: v.contentType,
  }));
  const settled = await Promise.allSettled(
    variants.map((v, i) =>
      storage.put(storedVariants[i]!.key, v.buffer, {
        contentType: v.contentType,
        cacheControl: IMMUTABLE_CACHE_CONTROL,
      }),
    ),
  );
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  const manifest: Manifest = {
    version: 1,
    key: t.key,
    width: original.width,
    height: original.height,
    contentType: obj.contentType ?? original.contentType,
    bytes: obj.body.length,
    sha256: original.sha256,
    variants: storedVariants,
    placeholder,
    ...(t.sourceId ? { source: t.sourceId } : {}),
  };
  await storage.put(manifestKey(t.accountId, t.mediaId, slot), Buffer.from(JSON.stringify(manifest)), {
    contentType: 'application/json',
    cacheControl: MANIFEST_CACHE_CONTROL,
  });
  return fromManifest(storage, manifest, false);
}

/**
 * Every complete copy of an account found in storage: its manifests (media/<account>/<media>/<slot>.json,
 * written last, so each names a finished copy). What a reconnected account takes over instead of
 * downloading its images again (R-OWN-6). Unreadable manifests are left out.
 */
export async function readCopyManifests(
  storage: ObjectStorage,
  accountId: string,
): Promise<Array<{ mediaId: string; slot: string; manifest: CopyManifest }>> {
  const prefix = mediaPrefix(accountId);
  const out: Array<{ mediaId: string; slot: string; manifest: CopyManifest }> = [];
  const keys: string[] = [];
  for await (const key of storage.list(prefix)) keys.push(key);
  for (const key of keys) {
    const m = /^([^/]+)\/([a-z0-9][a-z0-9-]{0,63})\.json$/.exec(key.slice(prefix.length));
    if (!m || !ID_PATTERN.test(m[1]!)) continue;
    const manifest = await readManifest(storage, key);
    if (manifest) out.push({ mediaId: m[1]!, slot: m[2]!, manifest });
  }
  return out;
}

/**
 * The objects of every media item of an account that is not in `keepMediaIds` (R-LNK-6), by media
 * id, and how many objects the account has under media/: what the media sweep hands the deletion
 * guard. Only folders the copy could have written (valid media ids); nothing is deleted here.
 * Use it only after a COMPLETE listing of the account's media: an empty or partial set names
 * copies that are still needed.
 */
export async function findOrphanMedia(
  storage: ObjectStorage,
  accountId: string,
  keepMediaIds: ReadonlySet<string>,
): Promise<{ total: number; orphans: Map<string, string[]> }> {
  const prefix = mediaPrefix(accountId);
  const orphans = new Map<string, string[]>();
  let total = 0;
  for await (const key of storage.list(prefix)) {
    total++;
    const mediaId = key.slice(prefix.length).split('/')[0];
    if (!mediaId || !ID_PATTERN.test(mediaId) || keepMediaIds.has(mediaId)) continue;
    if (!orphans.has(mediaId)) orphans.set(mediaId, []);
    orphans.get(mediaId)!.push(key);
  }
  return { total, orphans };
}
