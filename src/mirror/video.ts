import { createHash } from 'node:crypto';
import { Transform } from 'node:stream';
import { mediaKey } from '../storage/keys.ts';
import type { ObjectStorage } from '../storage/types.ts';
import type { Clock } from '../util/clock.ts';
import {
  checkSlot,
  IMMUTABLE_CACHE_CONTROL,
  MANIFEST_CACHE_CONTROL,
  manifestKey,
  readManifest,
  type CopyManifest,
  type MirrorLimits,
} from './copy.ts';
import { downloadStream } from './download.ts';
import { InvalidVideoError } from './errors.ts';
import { Mp4Probe, type VideoHeader } from './mp4.ts';

/**
 * Copy one video file (MIRROR_VIDEOS=on) into storage before its link expires, as copy.ts copies
 * an image and with the same guards (guardedGet: host allow-list on every redirect, the byte cap
 * counted while reading, one timeout, an expired link recognised so the caller renews it), but
 * streamed: the file goes from the socket through the checks to storage's streamed write (S3's
 * multipart upload, or a temporary file renamed into place) and is never held whole in memory.
 * On the way its type is checked from its signature (an `ftyp` box first: nothing else is
 * uploaded past the first chunk), its header read (duration, size: src/mirror/mp4.ts) and its
 * sha256 taken. It is not transcoded: the feed serves the platform's own file.
 *
 * The object is named after the file it copies (the first 16 hex digits of the sha256 of its
 * link without signature): the content hash is known only once the whole file went by, and a
 * retry of a crashed copy writes the same name again, leaving no duplicates. The manifest
 * (`<slot>.json`, the same schema as an image's, no variants) is written last, the commit point.
 */
export interface VideoJob {
  accountId: string;
  mediaId: string;
  /** 'video-<index in media[]>'. */
  slot: string;
  /** The signed link; never stored, never logged. */
  url: string;
  /** The link without its signature: which file this is, and its object's name. */
  sourceId: string;
  expiresAt?: Date | null;
  /** Ignore an existing manifest (a new file, or its objects went missing). */
  force?: boolean;
  firstAttempt?: boolean;
  /** The cap for this file: VIDEO_MAX_BYTES, or less when the account's budget has less left. */
  maxBytes: number;
}

export interface MirroredVideo {
  key: string;
  url: string;
  width: number;
  height: number;
  contentType: string;
  bytes: number;
  durationSec?: number;
  reused: boolean;
}

export interface VideoMirrorDeps {
  storage: ObjectStorage;
  limits: Pick<MirrorLimits, 'allowedHosts' | 'timeoutMs'>;
  clock?: Clock;
  download?: typeof downloadStream;
}

export const VIDEO_CONTENT_TYPE = 'video/mp4';

function fromManifest(storage: ObjectStorage, m: CopyManifest, reused: boolean): MirroredVideo {
  return {
    key: m.key,
    url: storage.publicUrl(m.key),
    width: m.width,
    height: m.height,
    contentType: m.contentType,
    bytes: m.bytes,
    ...(m.durationSec !== undefined ? { durationSec: m.durationSec } : {}),
    reused,
  };
}

/** The object key of a video copy: `<slot>-<16 hex of sha256(sourceId)>.mp4`. */
export function videoKey(accountId: string, mediaId: string, slot: string, sourceId: string): string {
  const sha16 = createHash('sha256').update(sourceId).digest('hex').slice(0, 16);
  return mediaKey(accountId, mediaId, `${checkSlot(slot)}-${sha16}.mp4`);
}

/**
 * Errors: LinkExpiredError (renew, R-LNK-3), DownloadError, TooLargeError (over job.maxBytes,
 * announced or counted), DisallowedHostError, InvalidVideoError (not an MP4, or no video track),
 * StorageError.
 */
export async function mirrorVideo(deps: VideoMirrorDeps, job: VideoJob): Promise<MirroredVideo> {
  const { storage, limits } = deps;
  const slot = checkSlot(job.slot);
  const mKey = manifestKey(job.accountId, job.mediaId, slot);
  if (!job.force && !job.firstAttempt) {
    const existing = await readManifest(storage, mKey);
    if (existing && existing.source === job.sourceId) return fromManifest(storage, existing, true);
  }
  const key = videoKey(job.accountId, job.mediaId, slot, job.sourceId);
  const download = deps.download ?? downloadStream;
  const { header, bytes, sha256 } = await download(
    job.url,
    {
      allowedHosts: limits.allowedHosts,
      maxBytes: job.maxBytes,
      timeoutMs: limits.timeoutMs,
      ...(deps.clock ? { clock: deps.clock } : {}),
      ...(job.expiresAt !== undefined ? { expiresAt: job.expiresAt } : {}),
    },
    async ({ body }) => {
      const probe = new Mp4Probe();
      const hash = createHash('sha256');
      let bytes = 0;
      // Checks as the bytes go by: the signature on the first chunk fails the stream before
      // anything past it is written (a failed write leaves nothing: putStream).
      const check = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          try {
            probe.push(chunk);
          } catch (err) {
            cb(err as Error);
            return;
          }
          hash.update(chunk);
          bytes += chunk.length;
          cb(null, chunk);
        },
      });
      body.once('error', (err) => check.destroy(err));
      // Its error may come before the storage reads it (the sidecar is written first): the
      // storage reports it (putStream rethrows a failed stream's own error), so it is not lost.
      check.on('error', () => undefined);
      body.pipe(check);
      await storage.putStream(key, check, { contentType: VIDEO_CONTENT_TYPE, cacheControl: IMMUTABLE_CACHE_CONTROL });
      let header: VideoHeader;
      try {
        header = probe.finish();
      } catch (err) {
        // Uploaded but unplayable (no header, cut short): no manifest, no record, so the object
        // is an orphan of a name the copy makes, and the media sweep deletes it (R-DEL-2).
        throw err instanceof InvalidVideoError ? err : new InvalidVideoError(String(err));
      }
      return { header, bytes, sha256: hash.digest('hex') };
    },
  );
  const manifest: CopyManifest = {
    version: 1,
    key,
    width: header.width,
    height: header.height,
    contentType: VIDEO_CONTENT_TYPE,
    bytes,
    sha256,
    variants: [],
    source: job.sourceId,
    ...(header.durationSec !== undefined ? { durationSec: header.durationSec } : {}),
  };
  await storage.put(mKey, Buffer.from(JSON.stringify(manifest)), {
    contentType: 'application/json',
    cacheControl: MANIFEST_CACHE_CONTROL,
  });
  return fromManifest(storage, manifest, false);
}
