import { reencodeMirroredImage } from '../mirror/copy.ts';
import { variantLadder } from '../mirror/image.ts';
import { mediaPrefix } from '../storage/keys.ts';
import { listMediaCopies, saveMediaCopy, type MediaCopy } from '../store/posts.ts';
import type { FeedDeps } from './deps.ts';
import { isVideoMime } from './slots.ts';
import { publishAccountFeed, type PublishOutcome } from './publish.ts';

export interface RebuildResult {
  accountId: string;
  /** Copies re-encoded with the current ladder and formats. */
  rebuilt: number;
  /** Copies that already had them (and a placeholder): nothing done. */
  upToDate: number;
  /** Copies whose original is no longer in storage (`feedmirror verify --repair` copies them again). */
  missing: number;
  publish: PublishOutcome;
}

/** Does a copy already have exactly the variants the current settings ask for, and a placeholder? */
export function isCurrent(copy: MediaCopy, widths: readonly number[], formats: readonly string[]): boolean {
  if (!copy.placeholder) return false;
  const want = new Set(variantLadder(copy.width, widths).flatMap((w) => formats.map((f) => `${w}:image/${f}`)));
  const have = new Set(copy.variants.map((v) => `${v.width}:${v.contentType}`));
  return want.size === have.size && [...want].every((k) => have.has(k));
}

/**
 * `feedmirror media rebuild`: re-encode an account's copies with the current MEDIA_VARIANT_WIDTHS
 * and MEDIA_VARIANT_FORMATS (and give old copies their placeholders), then publish the feed so it
 * lists the new sizes (a feed.updated event follows when it changed). Idempotent: copies already
 * current are skipped, so a retried or repeated rebuild redoes nothing.
 */
export async function rebuildAccountMedia(
  deps: FeedDeps,
  accountId: string,
  onProgress?: (done: number, total: number) => Promise<void>,
): Promise<RebuildResult> {
  const copies = await listMediaCopies(deps.db, accountId);
  const formats = deps.limits.variantFormats ?? ['webp'];
  // What storage holds, listed once: the database alone would call a copy whose objects were
  // deleted "up to date". A copy with an object not listed goes through the re-encoding, which
  // reads its original back (and counts it missing when that is gone too).
  const stored = new Set<string>();
  for await (const key of deps.storage.list(mediaPrefix(accountId))) stored.add(key);
  const inStorage = (c: MediaCopy) => stored.has(c.key) && c.variants.every((v) => stored.has(v.key));
  let rebuilt = 0;
  let upToDate = 0;
  let missing = 0;
  for (const [i, copy] of copies.entries()) {
    if (isVideoMime(copy.contentType)) {
      // A video file is served as the platform made it (never transcoded): nothing to re-encode.
      // One whose object is gone is counted missing, as a picture's is (verify --repair copies it).
      if (inStorage(copy)) upToDate++;
      else missing++;
    } else if (isCurrent(copy, deps.limits.variantWidths, formats) && inStorage(copy)) {
      upToDate++;
    } else {
      const image = await reencodeMirroredImage({ storage: deps.storage, limits: deps.limits }, copy);
      if (!image) {
        missing++;
      } else {
        await saveMediaCopy(deps.db, {
          ...copy,
          variants: image.variants.map((v) => ({
            key: v.key,
            width: v.width,
            height: v.height,
            contentType: v.contentType,
          })),
          placeholder: image.placeholder ?? null,
        });
        rebuilt++;
      }
    }
    await onProgress?.(i + 1, copies.length);
  }
  // complete: false: a rebuild read no listing, so an account still showing its demo feed keeps it.
  const publish = await publishAccountFeed(deps, accountId, { complete: false });
  deps.logger.info({ accountId, rebuilt, upToDate, missing, publish: publish.outcome }, 'media rebuilt');
  return { accountId, rebuilt, upToDate, missing, publish };
}
