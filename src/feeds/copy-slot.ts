import { dataClient } from '../accounts/apps.ts';
import { appOfAccount } from '../store/apps.ts';
import { isAppFault } from '../platform/errors.ts';
import { appFaulted } from './app-fault.ts';
import { LinkExpiredError, TooLargeError } from '../mirror/errors.ts';
import { mirrorImage, type MirroredImage, type VideoLimits } from '../mirror/copy.ts';
import { mirrorVideo, type MirroredVideo, type VideoJob } from '../mirror/video.ts';
import { noteVideoOverCap, videoBytesOfAccount } from '../store/video-caps.ts';
import { mediaItemSchema } from '../platform/media-item.ts';
import { earliestExpiry } from '../platform/links.ts';
import { linkExpiry } from './expiry.ts';
import { convertItem } from '../convert/convert-item.ts';
import type { Post } from '../schema/v1.ts';
import { getPostForCopy, saveMediaCopy, updatePostLinks } from '../store/posts.ts';
import { clearCopyFailure, recordCopyFailure } from '../store/copy-failures.ts';
import { errorKind, isLocalFailure } from '../util/error-kinds.ts';
import { loadToken } from '../store/tokens.ts';
import { MINUTE } from '../util/clock.ts';
import type { FeedDeps } from './deps.ts';
import { imageSlots } from './slots.ts';

/** A link this close to its oe is renewed before downloading: the download itself takes time. */
const EXPIRY_MARGIN_MS = MINUTE;

export interface CopyTarget {
  accountId: string;
  mediaId: string;
  slot: string;
}

export type CopyOutcome =
  | { outcome: 'copied' | 'reused'; renewed: boolean; image: MirroredImage | MirroredVideo }
  | { outcome: 'up-to-date' }
  | { outcome: 'gone'; reason: string }
  /** A video file over VIDEO_MAX_BYTES or the account's VIDEO_MAX_BYTES_PER_ACCOUNT: left a platform link. */
  | { outcome: 'over-cap'; reason: string };

/**
 * R-MED-8: ask the platform for newly signed links of one media item and store them in the post
 * (its other fields are kept: the single-media read returns only the link fields). A caller that
 * has opened the account's token already (a sync) hands it over; otherwise it is read here.
 */
export async function renewPostLinks(
  deps: FeedDeps,
  accountId: string,
  mediaId: string,
  post: Post,
  opened?: { accessToken: string; app?: string | null },
): Promise<{ post: Post; earliestOe: Date | null }> {
  const token = opened ?? (await loadToken(deps.db, deps.cipher, accountId));
  if (!token) throw new Error(`account ${accountId} has no token: cannot renew the links of media ${mediaId}`);
  // The account's own app (one query, only where a deployment has apps and the caller did not say).
  const app = opened?.app !== undefined ? opened.app : deps.apps ? await appOfAccount(deps.db, accountId) : null;
  let fresh;
  try {
    fresh = await dataClient(deps, app).getMedia(token.accessToken, mediaId, undefined, { accountId });
  } catch (err) {
    if (isAppFault(err)) throw await appFaulted(deps, app, err);
    throw err;
  }
  const raw = mediaItemSchema.parse(post.raw);
  const merged = mediaItemSchema.parse({
    ...raw,
    ...(fresh.media_url !== undefined ? { media_url: fresh.media_url } : {}),
    ...(fresh.thumbnail_url !== undefined ? { thumbnail_url: fresh.thumbnail_url } : {}),
    ...(fresh.children !== undefined ? { children: fresh.children } : {}),
  });
  const converted = convertItem(merged, { copyrightItems: deps.copyrightItems ?? 'drop' });
  if (!('post' in converted))
    throw new Error(`media ${mediaId}: renewed item no longer converts: ${converted.dropped.reason}`);
  // The renewed links' oe, parsed once as they are read (R-LNK-1), stored with them.
  const earliestOe = earliestExpiry(merged) ?? null;
  await updatePostLinks(deps.db, accountId, mediaId, converted.post, earliestOe);
  deps.logger.info({ accountId, mediaId }, 'media links renewed through the single-media read (R-MED-8)');
  return { post: converted.post, earliestOe };
}

/**
 * Copy one image of a stored post (R-LNK-5). Reads the post's current link from Postgres (job data
 * holds ids only); a link past (or within a minute of) its oe, or one the host answers with
 * "URL signature expired", is renewed first (R-LNK-3, R-MED-8). Idempotent: a slot whose source
 * file is already copied costs one query; mirrorImage's manifest covers a crash between upload and
 * bookkeeping. A copy marked missing from storage (src/store/missing-copies.ts) is made again from
 * renewed links; saving it clears the mark.
 */
export async function copySlot(
  deps: FeedDeps,
  t: CopyTarget,
  opts: {
    firstAttempt?: boolean;
    /**
     * Copy again although this file is recorded as copied: its objects went missing from storage
     * (`feedmirror verify --repair`). The manifest is not trusted either: it may outlive them.
     */
    force?: boolean;
  } = {},
): Promise<CopyOutcome> {
  // The post and its slot's recorded copy in one round trip: this runs once per image.
  const found = await getPostForCopy(deps.db, t.accountId, t.mediaId, t.slot);
  if (!found) return { outcome: 'gone', reason: 'post no longer stored (pruned)' };
  const { stored, copiedSourceId, missing } = found;
  let post = stored.post;
  const find = (p: Post) => imageSlots(p).find((s) => s.slot === t.slot);
  let slot = find(post);
  if (!slot) {
    // An edited post lost this slot: a failure recorded for it no longer means anything.
    await clearCopyFailure(deps.db, t.accountId, t.mediaId, t.slot);
    return { outcome: 'gone', reason: `post has no image slot ${t.slot}` };
  }
  // R-HLT-4: a copy whose objects were found missing from storage (`feedmirror verify`) is not up
  // to date: it is made again, and its manifest, which may have outlived them, is not trusted.
  if (copiedSourceId === slot.sourceId && !opts.force && !missing) return { outcome: 'up-to-date' };

  let renewed = false;
  let earliestOe = stored.earliestOe;
  const renew = async () => {
    ({ post, earliestOe } = await renewPostLinks(deps, t.accountId, t.mediaId, post));
    renewed = true;
    slot = find(post);
    if (!slot) throw new Error(`media ${t.mediaId}: slot ${t.slot} disappeared when its links were renewed`);
  };
  // A missing copy's links are renewed first (R-MED-8), as verify's repair does before it forces
  // a copy (so a forcing caller has renewed them itself): the link it was copied from is old.
  if ((missing && !opts.force) || linkExpiry(earliestOe, deps.clock.now(), { renewMarginMs: EXPIRY_MARGIN_MS }).renew)
    await renew();

  if (slot.kind === 'video') {
    const videos = deps.limits.videos;
    // MIRROR_VIDEOS turned off since the copy was planned: the file stays a platform link.
    if (!videos) return { outcome: 'gone', reason: 'video mirroring is off (MIRROR_VIDEOS)' };
    return copyVideo(deps, t, videos, {
      url: () => slot!.url,
      sourceId: slot.sourceId,
      earliestOe: () => earliestOe,
      renew,
      renewed: () => renewed,
      force: copiedSourceId !== null || opts.force === true || missing,
      firstAttempt: opts.firstAttempt === true,
    });
  }

  const mirrorDeps = { storage: deps.storage, limits: deps.limits, clock: deps.clock };
  // A different file was copied before under this slot: its manifest must not be reused.
  const job = {
    accountId: t.accountId,
    mediaId: t.mediaId,
    slot: t.slot,
    force: copiedSourceId !== null || opts.force === true || missing,
    sourceId: slot.sourceId,
    ...(opts.firstAttempt ? { firstAttempt: true } : {}),
  };
  let image: MirroredImage;
  try {
    image = await mirrorImage(mirrorDeps, { ...job, url: slot.url, expiresAt: earliestOe });
  } catch (err) {
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- renew() sets it; narrowing does not follow a closure
    if (!(err instanceof LinkExpiredError) || renewed) throw err;
    await renew(); // R-LNK-3: 403 "URL signature expired" => renew, then copy
    image = await mirrorImage(mirrorDeps, { ...job, url: slot.url, expiresAt: earliestOe });
  }
  // Counted once the upload is done (not after the bookkeeping): a retry after a failed save
  // reuses the manifest and uploads nothing, so it is not counted again.
  if (!image.reused) {
    deps.metrics?.imagesCopied.inc();
    deps.metrics?.imageBytesCopied.inc(image.bytes);
  }
  await saveMediaCopy(deps.db, {
    accountId: t.accountId,
    mediaId: t.mediaId,
    slot: t.slot,
    sourceId: slot.sourceId,
    key: image.key,
    width: image.width,
    height: image.height,
    bytes: image.bytes,
    contentType: image.contentType,
    variants: image.variants.map((v) => ({ key: v.key, width: v.width, height: v.height, contentType: v.contentType })),
    placeholder: image.placeholder ?? null,
    copiedAt: deps.clock.now(),
  });
  return { outcome: image.reused ? 'reused' : 'copied', renewed, image };
}

/**
 * Copy one video file of a stored post (copySlot's video branch): within VIDEO_MAX_BYTES and what
 * the account's VIDEO_MAX_BYTES_PER_ACCOUNT has left, renewing a dead link as an image copy does.
 * A file over either cap is no failure: it stays a platform link and is recorded (videos_over_cap)
 * so the account's health says so; it is not retried until the next sync plans it again.
 */
async function copyVideo(
  deps: FeedDeps,
  t: CopyTarget,
  caps: VideoLimits,
  s: {
    url: () => string;
    sourceId: string;
    earliestOe: () => Date | null;
    renew: () => Promise<void>;
    renewed: () => boolean;
    force: boolean;
    firstAttempt: boolean;
  },
): Promise<CopyOutcome> {
  const used = await videoBytesOfAccount(deps.db, t.accountId, { mediaId: t.mediaId, slot: t.slot });
  const left = Math.max(0, caps.maxBytesPerAccount - used);
  const accountBound = left < caps.maxBytes;
  const overCap = async (fileBytes: number | null) => {
    const cap = accountBound ? 'account' : 'file';
    const limitBytes = accountBound ? caps.maxBytesPerAccount : caps.maxBytes;
    await noteVideoOverCap(deps.db, { ...t, cap, limitBytes, fileBytes, notedAt: deps.clock.now() });
    await clearCopyFailure(deps.db, t.accountId, t.mediaId, t.slot);
    const reason =
      cap === 'account'
        ? `the account's video copies hold ${used} of VIDEO_MAX_BYTES_PER_ACCOUNT ${limitBytes} bytes`
        : `the file is larger than VIDEO_MAX_BYTES ${limitBytes} bytes`;
    deps.logger.info(
      { accountId: t.accountId, mediaId: t.mediaId, slot: t.slot, cap },
      `video not mirrored: ${reason}`,
    );
    return { outcome: 'over-cap' as const, reason };
  };
  if (left === 0) return overCap(null);
  const job = (): VideoJob => ({
    accountId: t.accountId,
    mediaId: t.mediaId,
    slot: t.slot,
    url: s.url(),
    sourceId: s.sourceId,
    expiresAt: s.earliestOe(),
    force: s.force,
    firstAttempt: s.firstAttempt,
    maxBytes: Math.min(caps.maxBytes, left),
  });
  const mirrorDeps = { storage: deps.storage, limits: deps.limits, clock: deps.clock };
  let video: MirroredVideo;
  try {
    try {
      video = await mirrorVideo(mirrorDeps, job());
    } catch (err) {
      if (!(err instanceof LinkExpiredError) || s.renewed()) throw err;
      await s.renew(); // R-LNK-3: 403 "URL signature expired" => renew, then copy
      video = await mirrorVideo(mirrorDeps, job());
    }
  } catch (err) {
    if (err instanceof TooLargeError) return overCap(err.announcedBytes ?? null);
    throw err;
  }
  await saveMediaCopy(deps.db, {
    accountId: t.accountId,
    mediaId: t.mediaId,
    slot: t.slot,
    sourceId: s.sourceId,
    key: video.key,
    width: video.width,
    height: video.height,
    bytes: video.bytes,
    contentType: video.contentType,
    variants: [],
    placeholder: null,
    copiedAt: deps.clock.now(),
    durationSec: video.durationSec ?? null,
  });
  return { outcome: video.reused ? 'reused' : 'copied', renewed: s.renewed(), image: video };
}

/**
 * Record a failed copy of one slot for the account's health and page (media_copy_failures): its
 * error kind and redacted text, one more attempt, and whether this was the last one. The worker's
 * mirror-media job and `sync --wait` both record through here; the copy's success clears it
 * (saveMediaCopy). A failure of this deployment (localFailure) is not recorded. Never throws: a
 * copy that failed must not fail twice because of its record.
 */
export async function noteCopyFailure(
  deps: Pick<FeedDeps, 'db' | 'clock' | 'logger'>,
  t: CopyTarget,
  err: unknown,
  opts: { gaveUp: boolean },
): Promise<void> {
  // R-HLT-5: storage or PostgreSQL unreachable, a key that opens no token: this deployment's
  // failure, not the account's (src/util/error-kinds.ts); the job retries and says why in the worker's log.
  if (isLocalFailure(err)) return;
  await recordCopyFailure(deps.db, {
    ...t,
    errorKind: errorKind(err),
    error: err instanceof Error ? err.message : String(err),
    at: deps.clock.now(),
    gaveUp: opts.gaveUp,
  }).catch((e: unknown) =>
    deps.logger.warn({ accountId: t.accountId, mediaId: t.mediaId, err: e }, 'could not record a failed copy'),
  );
}
