import { convertItems } from '../convert/convert-item.ts';
import {
  InsufficientDeveloperRoleError,
  MissingScopeError,
  PersonalAccountError,
  RateLimitedError,
  RunawayListingError,
  TokenInvalidError,
  isAppFault,
} from '../platform/errors.ts';
import { recordRunawayListing } from '../store/listing-guard.ts';
import { DEFAULT_LISTING_MAX_ITEMS, listingItemBound, runawayPauseMs } from './listing-bound.ts';
import { markSynced, setRefusedFields } from '../store/accounts.ts';
import { statusOnlyLifecycle } from '../accounts/lifecycle.ts';
import { errorKind, isLocalFailure } from '../util/error-kinds.ts';
import {
  copySourceKey,
  getPosts,
  upsertPosts,
  type FeedPublication,
  type PostInput,
  type UpsertedPost,
} from '../store/posts.ts';
import { readSyncContext, type SyncContext } from '../store/sync-context.ts';
import type { Account } from '../store/accounts.ts';
import type { MediaListing } from '../platform/types.ts';
import { DROPPABLE_FIELDS } from '../platform/media-item.ts';
import type { Post } from '../schema/v1.ts';
import type { Logger } from '../util/logger.ts';
import { openToken } from '../store/tokens.ts';
import { redactText } from '../util/redact.ts';
import { feedKey } from '../storage/keys.ts';
import type { StoredRemovalHold } from '../store/holds.ts';
import { linkExpiry } from './expiry.ts';
import { copySlot, noteCopyFailure, renewPostLinks } from './copy-slot.ts';
import { appFaulted } from './app-fault.ts';
import { dataClient } from '../accounts/apps.ts';
import type { FeedDeps } from './deps.ts';
import {
  announceSource,
  publishAccountFeed,
  placeFeedIfNone,
  sweepAccountMedia,
  type PublishOutcome,
} from './publish.ts';
import { settleRemoval, type Settled } from './publication.ts';
import { imageSlots } from './slots.ts';
import { contentHash } from '../util/content-hash.ts';
import { feedCheckDue } from './feed-check.ts';
import { DAY } from '../util/clock.ts';
import type { SyncOutcome } from '../metrics/index.ts';
import { secondsSince } from '../metrics/observe.ts';

export interface SyncProgress {
  pages: number;
  posts: number;
  imagesToCopy: number;
  imagesCopied: number;
}

/** One image to copy, with the moment its link dies (R-LNK-1): copies are ordered by it. */
export interface CopyTask {
  accountId: string;
  mediaId: string;
  slot: string;
  /** Earliest oe of the post's links; null when unknown. */
  deadline: Date | null;
}

export type SyncResult =
  | {
      outcome: 'synced';
      accountId: string;
      /** R-MED-5: only a complete listing prunes (R-LNK-6). */
      complete: boolean;
      pages: number;
      calls: number;
      posts: number;
      newPosts: number;
      changedPosts: number;
      /** Posts whose video links were renewed (R-MED-8) before publishing. */
      renewedVideos: number;
      dropped: Array<{ id: string; reason: string }>;
      pruned: string[];
      /** R-OWN-7: the removal this complete listing asked for is held (nothing pruned). */
      held?: StoredRemovalHold;
      copies: CopyTask[];
      /** The feed must be written even if nothing changed (still the demo feed, or its video links die soon). */
      feedDue: boolean;
      /** The published feed object was not in storage: it is written again whatever the listing. */
      feedMissing: boolean;
      /** Why the listing stopped early (redacted). */
      error?: string;
    }
  | { outcome: 'skipped' | 'reauth-required'; accountId: string; reason: string };

export interface SyncOptions {
  onProgress?: ((p: SyncProgress) => void) | undefined;
  /** An operator asked for this sync (CLI, dashboard): it lists even while scheduled listings are paused (R-NET-6). */
  manual?: boolean;
  /**
   * Make sure the published feed is still in storage (one HEAD). Default: an operator's sync
   * always does, a scheduled one once in FEED_CHECK_INTERVAL_MS (src/feeds/feed-check.ts).
   */
  checkFeed?: boolean;
}

/** Errors that only the account owner can fix: the account is marked and left alone (R-TOK-10). */
function ownerMustAct(err: unknown): err is Error {
  return (
    err instanceof TokenInvalidError ||
    err instanceof InsufficientDeveloperRoleError ||
    err instanceof PersonalAccountError ||
    err instanceof MissingScopeError
  );
}

/**
 * Read an account's whole media edge and bring the store up to date: remember refused fields
 * (R-MED-4), convert (R-CNV), upsert posts with first/last seen, prune what a COMPLETE listing no
 * longer holds (R-LNK-6), and list the images that need copying (R-LNK-5): every cover and photo
 * slide whose file is not copied yet, soonest oe first. Copying and publishing are the caller's
 * (a BullMQ flow in the worker, runSyncNow inline). Throws RateLimitedError (R-OWN-1) for the job
 * layer to back off; every other listing failure ends incomplete and prunes nothing. With
 * deps.metrics, its duration and outcome go to feedmirror_sync_duration_seconds.
 */
export async function syncAccount(deps: FeedDeps, accountId: string, opts: SyncOptions = {}): Promise<SyncResult> {
  const metrics = deps.metrics;
  const started = performance.now();
  let outcome: SyncOutcome | undefined = 'failed';
  try {
    const result = await readAndStore(deps, accountId, opts).catch(async (err: unknown) => {
      // R-HLT-5: a failure of this deployment (Redis, PostgreSQL or storage unreachable, a token
      // no configured key opens) is not the account's: recorded against nothing, it fails the
      // command or job, which says what is wrong, and the account's health stays as it was.
      if (isLocalFailure(err)) throw err;
      // A sync that failed says so, with its kind: the account never shows "ok" after it.
      await markSynced(deps.db, accountId, deps.clock.now(), {
        error: err instanceof Error ? err.message : String(err),
        errorKind: errorKind(err),
      }).catch(() => undefined);
      // R-WID-5: the account's widgets now say since when their data is stale.
      await announceSource(deps, accountId);
      throw err;
    });
    // A skipped account did no work: it would only drag the histogram towards zero.
    // R-WID-5: a sync that ended without a complete listing may publish nothing; the account's
    // widgets still learn that their data is getting stale.
    if (result.outcome === 'reauth-required' || (result.outcome === 'synced' && !result.complete))
      await announceSource(deps, accountId);
    if (result.outcome === 'synced') outcome = result.complete ? 'ok' : 'incomplete';
    else outcome = result.outcome === 'reauth-required' ? 'reauth_required' : undefined;
    return result;
  } catch (err) {
    if (err instanceof RateLimitedError) outcome = 'rate_limited';
    throw err;
  } finally {
    if (outcome) metrics?.syncDuration.observe({ outcome }, secondsSince(started));
  }
}

/**
 * syncAccount's work, unmeasured: the steps of one sync, in order. Each step is handed what the
 * steps before it read (the context read once before listing, the listing, the posts as stored)
 * and reads nothing again: an unchanged sync makes three round trips to PostgreSQL (its context,
 * the posts' last-seen update, its record; test/integration/sync-queries.test.ts).
 */
async function readAndStore(deps: FeedDeps, accountId: string, opts: SyncOptions): Promise<SyncResult> {
  const run = await readContext(deps, accountId, opts);
  if ('outcome' in run) return run;
  const feed = await examineFeed(run, opts);
  const progress: SyncProgress = { pages: 0, posts: 0, imagesToCopy: 0, imagesCopied: 0 };
  const report = () => opts.onProgress?.({ ...progress });
  const listing = await listAccount(run, progress, report);
  if ('outcome' in listing) return listing;
  const now = deps.clock.now();
  const pauseNote = await noteListing(run, listing, now);
  const converted = convertListing(run, listing);
  const changes = await upsertPosts(deps.db, accountId, converted.inputs, now);
  const settled = listing.complete
    ? await settleRemovals(run, converted, feed.publication, now)
    : { pruned: [], held: null, agreed: false, stale: false };
  const mirrorVideos = run.deps.limits.videos !== undefined;
  const renewedVideos = await renewVideoLinks(run, converted.inputs, changes, now);
  const copies = planCopies(accountId, converted.inputs, run.context.copySources, now, mirrorVideos);
  progress.imagesToCopy = copies.length;
  report();
  const error = await recordSync(run, listing, converted, pauseNote, now);
  return {
    outcome: 'synced',
    accountId,
    complete: listing.complete,
    pages: listing.pages,
    calls: listing.calls,
    posts: converted.inputs.length,
    ...countChanges(changes),
    renewedVideos,
    dropped: converted.dropped,
    pruned: settled.pruned,
    ...(settled.held ? { held: settled.held } : {}),
    copies,
    feedDue: feed.feedDue || settled.stale,
    feedMissing: feed.feedMissing,
    ...(error ? { error } : {}),
  };
}

/** What a sync read of its account before listing, handed from step to step instead of read again. */
interface SyncRun {
  deps: FeedDeps;
  accountId: string;
  log: Logger;
  account: Account;
  /** The account's token, opened once: the listing and every link renewal of this sync use it. */
  accessToken: string;
  context: SyncContext;
  /** When the sync began: the checks before listing go by it. */
  startedAt: Date;
}

type Skipped = Extract<SyncResult, { outcome: 'skipped' | 'reauth-required' }>;

/**
 * Read the context (src/store/sync-context.ts: account, listing guard, sealed token, publication,
 * held removal, stored post ids, recorded copies, in one round trip) and decide whether this
 * account is synced at all: it exists, is active, has a token, and its listing is not paused.
 */
async function readContext(deps: FeedDeps, accountId: string, opts: SyncOptions): Promise<SyncRun | Skipped> {
  const context = await readSyncContext(deps.db, accountId);
  const { account, guard } = context;
  const skip = (reason: string): Skipped => ({ outcome: 'skipped', accountId, reason });
  if (!account) return skip('account not found (removed?)');
  if (account.status !== 'active') return skip(`account is ${account.status}; it needs its owner to connect again`);
  if (!context.token) return skip('no token stored');
  const token = openToken(deps.cipher, accountId, context.token);
  const startedAt = deps.clock.now();
  // R-NET-6: after a listing that would not end, scheduled syncs wait; the operator's do not.
  if (!opts.manual && guard.pausedUntil && startedAt < guard.pausedUntil)
    return skip(
      `listing paused until ${guard.pausedUntil.toISOString()} after ${guard.runaways} listing(s) in a row that would not end; a manual sync lists at once`,
    );
  const log = deps.logger.child({ job: 'feed-sync', accountId });
  return { deps, accountId, log, account, accessToken: token.accessToken, context, startedAt };
}

/** The published feed as this sync found it, and whether it must be written whatever the listing. */
interface FeedState {
  publication: FeedPublication | null;
  /** The publication row names a feed object storage no longer holds. */
  feedMissing: boolean;
  /** Still the demo feed, or its platform links (video files) die soon. */
  feedDue: boolean;
}

/**
 * The feed as published before listing: R-SCH-11 puts the demo feed in place until the first
 * complete sync (or takes over a feed found in storage); the publication it wrote is used as it is.
 * The publication row is what was written, not what storage still holds: one HEAD now and then
 * (src/feeds/feed-check.ts), and a feed object deleted behind our back is published again by this
 * sync rather than trusted.
 */
async function examineFeed(run: SyncRun, opts: SyncOptions): Promise<FeedState> {
  const { deps, accountId, account, startedAt } = run;
  const placed = await placeFeedIfNone(deps, accountId, { publication: run.context.publication });
  const publication = placed.publication;
  const checkFeed = opts.checkFeed ?? (opts.manual || feedCheckDue(accountId, account.lastSyncAt, startedAt));
  // A feed the step above just wrote, read or found with a HEAD is in storage: no second HEAD.
  const feedMissing =
    publication !== null && checkFeed && !placed.inStorage && !(await deps.storage.head(feedKey(accountId)));
  if (feedMissing) run.log.warn('the published feed is missing from storage; this sync publishes it again');
  const feedDue =
    !publication ||
    publication.demo ||
    (publication.earliestOe !== null &&
      startedAt.getTime() >= publication.earliestOe.getTime() - (deps.relinkMarginMs ?? DAY));
  return { publication, feedMissing, feedDue };
}

/**
 * List the account's whole media edge (R-MED-5..7), within the listing's bound (R-NET-6). A
 * refusal only the owner can fix ends the sync as reauth-required: the lifecycle unschedules and
 * alerts, exactly once (R-TOK-10). Any other failure is thrown for syncAccount to record.
 */
async function listAccount(run: SyncRun, progress: SyncProgress, report: () => void): Promise<MediaListing | Skipped> {
  const { deps, accountId, account } = run;
  try {
    const listing = await dataClient(deps, account.app ?? null).listMedia(run.accessToken, {
      accountId,
      refusedFields: DROPPABLE_FIELDS.filter((f) => account.refusedFields.includes(f)),
      maxItems: listingItemBound(run.context.guard, deps.listingMaxItems ?? DEFAULT_LISTING_MAX_ITEMS),
      onPage: (p) => {
        progress.pages = p.index + 1;
        progress.posts += p.items;
        report();
      },
    });
    // A named app that lists again is no longer restricted (only a named app has a row to clear).
    if (account.app && listing.complete) await deps.apps?.worked(account.app, 'app_restricted');
    return listing;
  } catch (err) {
    // The app's fault, not the owner's: recorded against the app (its operator is alerted once),
    // the account's sync fails naming the app, and no owner is asked to log in again.
    if (isAppFault(err)) throw await appFaulted(deps, account.app ?? null, err);
    if (!ownerMustAct(err)) throw err;
    const reason = redactText(err.message);
    const kind = errorKind(err);
    await markSynced(deps.db, accountId, deps.clock.now(), { error: reason, errorKind: kind });
    await (deps.lifecycle ?? statusOnlyLifecycle(deps)).apply(accountId, 'owner_must_act', reason, kind);
    run.log.warn({ reason }, 'account needs its owner to log in again; sync stopped');
    return { outcome: 'reauth-required', accountId, reason };
  }
}

/**
 * What the listing says of the account itself: the fields it refuses (R-MED-4, remembered so the
 * next sync does not ask again), a rate limit (R-OWN-1: thrown for the job layer to back off;
 * nothing is pruned), a listing that would not end (R-NET-6: the schedule pauses). Returns the
 * pause's note for the sync's error. A complete listing's count is written with the sync's record.
 */
async function noteListing(run: SyncRun, listing: MediaListing, now: Date): Promise<string> {
  const { deps, accountId } = run;
  if (listing.refusedFields.length > 0)
    await setRefusedFields(deps.db, accountId, [...run.account.refusedFields, ...listing.refusedFields], now);
  if (listing.error instanceof RateLimitedError) throw listing.error;
  if (listing.complete || !(listing.error instanceof RunawayListingError)) return '';
  const until = new Date(now.getTime() + runawayPauseMs(run.context.guard.runaways + 1));
  await recordRunawayListing(deps.db, accountId, until);
  return `; scheduled syncs of this account wait until ${until.toISOString()}`;
}

/** A listing converted: the posts to store and every item left out. */
interface ConvertedListing {
  /** One per converted post, with its content hash and the earliest oe of its links. */
  inputs: PostInput[];
  /** Every item left out, with its reason: malformed in the listing, or not convertible. */
  dropped: Array<{ id: string; reason: string; byPolicy?: true }>;
  /** The items left out that are faults (not the operator's policy): what the account records as skipped. */
  faults: Array<{ id: string; reason: string }>;
  /** Every id the listing still has, readable or not (R-OWN-8): what a complete listing keeps. */
  listed: string[];
}

/**
 * Convert the listing's items to schema v1 posts (R-CNV). An item left out by the operator's own
 * policy (copyright-flagged, COPYRIGHT_ITEMS=drop) is not a fault: counting it would mark every
 * such account with a warning on every sync, and a real fault would drown in it.
 */
function convertListing(run: SyncRun, listing: MediaListing): ConvertedListing {
  const converted = convertItems(listing.items, { copyrightItems: run.deps.copyrightItems ?? 'drop' });
  const dropped = [...listing.skipped, ...converted.dropped];
  const faults = dropped.filter((d) => !('byPolicy' in d && d.byPolicy));
  if (faults.length > 0)
    run.log.warn(
      { skipped: faults.length, reasons: faults.slice(0, 5) },
      'items skipped; the rest of the listing is used',
    );
  if (dropped.length > faults.length)
    run.log.debug({ leftOut: dropped.length - faults.length }, 'items left out by COPYRIGHT_ITEMS=drop');
  const inputs: PostInput[] = converted.posts.map((post) => ({
    mediaId: post.id,
    post,
    contentHash: contentHash(post),
    earliestOe: listing.expiries.get(post.id) ?? null, // parsed once, when the listing was read
  }));
  // An item that came back malformed (unreadable, or not convertible: no timestamp, an unknown
  // media type) is not "gone": its post keeps its last good version until it reads well again or
  // really disappears (R-OWN-8). One left out by the operator's policy is.
  const listed = [
    ...inputs.map((i) => i.mediaId),
    ...listing.skipped.map((s) => s.id),
    ...converted.dropped.filter((d) => !d.byPolicy).map((d) => d.id),
  ];
  return { inputs, dropped, faults, listed };
}

/**
 * After a COMPLETE listing (R-LNK-6): prune what it no longer has, or hold a large removal for a
 * second listing or the operator (R-OWN-7, src/feeds/publication.ts). The stored ids are those of
 * the context and every post the upsert wrote, so nothing is read again.
 */
async function settleRemovals(
  run: SyncRun,
  converted: ConvertedListing,
  publication: FeedPublication | null,
  now: Date,
): Promise<Settled> {
  const { context } = run;
  const stored = [...new Set([...context.storedPostIds, ...converted.inputs.map((i) => i.mediaId)])];
  const settled = await settleRemoval(run.deps.db, run.accountId, {
    publication,
    listed: converted.listed,
    listedPosts: converted.inputs.length,
    now,
    known: { stored, hold: context.hold },
    // R-OWN-7: a held removal goes ahead only when the profile's count agrees with the listing
    // (an empty listing answered for hours by a glitching platform must not empty the feed).
    corroborate: async () => {
      const counted = await run.deps.platform.mediaCount(run.accessToken).catch(() => undefined);
      // Every item the listing returned counts, those left out by policy (copyright) too.
      return (
        counted === null || (counted !== undefined && counted <= converted.inputs.length + converted.dropped.length)
      );
    },
  });
  if (settled.held)
    run.log.warn(
      {
        removing: settled.held.removing.length,
        publishedPosts: settled.held.publishedPosts,
        since: settled.held.since.toISOString(),
      },
      'removal held: the listing would remove more than half of the feed; nothing pruned until a second complete listing an hour later agrees or the operator confirms (feedmirror feeds confirm-removal)',
    );
  else if (settled.agreed)
    run.log.info({ pruned: settled.pruned.length }, 'held removal agreed by a second complete listing: pruned');
  return settled;
}

/**
 * Video files stay platform links in the feed (R-LNK-5): when theirs are dead or about to die (the
 * listing may hand out old signatures), renew them through the single-media read (R-MED-8) so the
 * published feed never carries a dead video link. Once renewed they last until the next renewal
 * window, so an unchanged account costs no call here most of the time.
 *
 * What is due goes by the stored links' oe, not the listing's: for the same content the upsert
 * keeps links a renewal made, which live longer. Only the video posts whose stored links are due
 * are read back, in one query (a round trip per post would cost more than the sync's own work).
 * Renewed posts are updated in `inputs`, whose links the copies then use. Returns how many.
 */
async function renewVideoLinks(
  run: SyncRun,
  inputs: PostInput[],
  changes: ReadonlyMap<string, UpsertedPost>,
  now: Date,
): Promise<number> {
  const { deps, accountId } = run;
  const renewMarginMs = deps.relinkMarginMs ?? DAY;
  const due = (earliestOe: Date | null) => linkExpiry(earliestOe, now, { renewMarginMs }).renew;
  // A video file whose copy the feed points at (MIRROR_VIDEOS) needs no live link; the copy job
  // renews the link of one it still has to copy.
  const copied = run.context.copySources;
  const hasVideo = (mediaId: string, post: Post) =>
    imageSlots(post).some((s) => s.kind === 'video' && copied.get(copySourceKey(mediaId, s.slot)) === undefined);
  const toRenew = inputs.filter((i) => {
    const kept = changes.get(i.mediaId);
    return kept !== undefined && hasVideo(i.mediaId, i.post) && due(kept.earliestOe);
  });
  if (toRenew.length === 0) return 0;
  const stored = new Map(
    (
      await getPosts(
        deps.db,
        accountId,
        toRenew.map((i) => i.mediaId),
      )
    ).map((p) => [p.mediaId, p]),
  );
  let renewed = 0;
  for (const input of toRenew) {
    const post = stored.get(input.mediaId);
    if (!post || !hasVideo(input.mediaId, post.post) || !due(post.earliestOe)) continue;
    try {
      const fresh = await renewPostLinks(deps, accountId, input.mediaId, post.post, {
        accessToken: run.accessToken,
        app: run.account.app ?? null,
      });
      input.post = fresh.post;
      input.earliestOe = fresh.earliestOe;
      renewed++;
    } catch (err) {
      if (ownerMustAct(err) || err instanceof RateLimitedError) throw err;
      run.log.warn(
        { mediaId: input.mediaId, err: redactText((err as Error).message) },
        'could not renew video links; the next sync tries again',
      );
    }
  }
  return renewed;
}

/**
 * The files to copy (R-LNK-5): every cover and photo slide (and, with MIRROR_VIDEOS=on, every
 * video file) whose file is not copied yet, the link
 * that dies first copied first and unknown expiry last (R-LNK-1, R-LNK-2). `copied` is the copies
 * recorded when the sync began: one a copy job records meanwhile is queued again, and that job
 * finds it done (copySlot).
 */
function planCopies(
  accountId: string,
  inputs: readonly PostInput[],
  copied: ReadonlyMap<string, string>,
  now: Date,
  mirrorVideos: boolean,
): CopyTask[] {
  const copies: CopyTask[] = [];
  for (const input of inputs) {
    for (const s of imageSlots(input.post)) {
      // Video files are copied with MIRROR_VIDEOS=on only; off, they stay platform links.
      if (s.kind === 'video' && !mirrorVideos) continue;
      if (copied.get(copySourceKey(input.mediaId, s.slot)) === s.sourceId) continue;
      const deadline = linkExpiry(input.earliestOe, now).copyDeadline;
      copies.push({ accountId, mediaId: input.mediaId, slot: s.slot, deadline });
    }
  }
  return copies.sort((a, b) => (a.deadline?.getTime() ?? Infinity) - (b.deadline?.getTime() ?? Infinity));
}

/**
 * Record the sync on the account (its outcome, error and kind, skipped items, post count; a
 * complete listing's item count sets the bound of the next ones and ends a pause, R-NET-6).
 * Returns the error of an incomplete listing (redacted), the reason nothing was pruned.
 */
async function recordSync(
  run: SyncRun,
  listing: MediaListing,
  converted: ConvertedListing,
  pauseNote: string,
  now: Date,
): Promise<string | undefined> {
  const error = listing.complete
    ? undefined
    : redactText(listing.error?.message ?? 'the listing did not finish') + pauseNote;
  await markSynced(run.deps.db, run.accountId, now, {
    error: error ?? null,
    errorKind: listing.error ? errorKind(listing.error) : null,
    skipped: converted.faults,
    outcome: listing.complete ? 'complete' : 'incomplete',
    posts: converted.inputs.length,
    ...(listing.complete ? { completeListingItems: listing.items.length + listing.skipped.length } : {}),
  });
  if (error) run.log.warn({ pages: listing.pages, error }, 'listing incomplete: nothing pruned');
  return error;
}

function countChanges(changes: ReadonlyMap<string, UpsertedPost>): { newPosts: number; changedPosts: number } {
  let newPosts = 0;
  let changedPosts = 0;
  for (const { change } of changes.values()) {
    if (change === 'new') newPosts++;
    else if (change === 'changed') changedPosts++;
  }
  return { newPosts, changedPosts };
}

/**
 * Whether a sync's result calls for publishing: something was read that the feed lacks (new or
 * changed posts, images to copy, renewed video links), a complete listing pruned posts, the feed
 * object is missing from storage, or the feed is due anyway (the demo feed still in place, video links about to die). Otherwise the
 * previous feed stays as it is and no publish job runs: building and validating a feed only to
 * find it the same is most of the work of an unchanged sync, and most syncs are unchanged
 * (`npm run bench` measures it). The worker's flow decides with it; runSyncNow (one account, by
 * hand) also publishes after any complete listing, so its summary can say the feed is unchanged.
 */
export function needsPublish(result: Extract<SyncResult, { outcome: 'synced' }>): boolean {
  return (
    result.copies.length > 0 ||
    result.newPosts > 0 ||
    result.changedPosts > 0 ||
    result.pruned.length > 0 ||
    result.renewedVideos > 0 ||
    result.feedMissing ||
    (result.complete && result.feedDue)
  );
}

/**
 * Whether the publish after this sync sweeps the account's media folder (sweepAccountMedia): only
 * when the listing was complete and could have left objects no record names, that is when it
 * pruned posts (R-LNK-6: their copies leave on this run) or found changed ones (an edited post's
 * earlier file, a carousel that lost a slide). The sweep lists every object of the account and
 * reads the feed back: after a sync that only added posts it finds nothing to remove, and costs
 * a LIST of every object of the account and a GET per written feed. What a crash leaves behind is
 * found by the daily media sweep and verify.
 */
export function sweepDue(result: Extract<SyncResult, { outcome: 'synced' }>): boolean {
  return result.complete && (result.pruned.length > 0 || result.changedPosts > 0);
}

export interface SyncNowResult {
  sync: SyncResult;
  copied: number;
  reused: number;
  renewed: number;
  failedCopies: Array<{ mediaId: string; slot: string; error: string }>;
  publish?: PublishOutcome;
  swept: number;
}

/**
 * One whole sync in this process, no queue: read, copy (soonest oe first), publish, sweep. The
 * same steps the worker's flow runs as separate jobs; used by `feedmirror sync <id> --wait`.
 */
export async function runSyncNow(deps: FeedDeps, accountId: string, opts: SyncOptions = {}): Promise<SyncNowResult> {
  // Someone is watching this one: it always makes sure the feed object is in storage.
  const sync = await syncAccount(deps, accountId, { checkFeed: true, ...opts });
  const out: SyncNowResult = { sync, copied: 0, reused: 0, renewed: 0, failedCopies: [], swept: 0 };
  if (sync.outcome !== 'synced') return out;
  const progress: SyncProgress = {
    pages: sync.pages,
    posts: sync.posts,
    imagesToCopy: sync.copies.length,
    imagesCopied: 0,
  };
  for (const task of sync.copies) {
    try {
      const r = await copySlot(deps, task);
      if (r.outcome === 'copied' || r.outcome === 'reused') {
        if (r.outcome === 'copied') out.copied++;
        else out.reused++;
        if (r.renewed) out.renewed++;
      }
    } catch (err) {
      // Storage, PostgreSQL or the key failing fails every copy after it too: the run stops and
      // says so (the next sync copies what is left), recording nothing against the account.
      if (isLocalFailure(err)) throw err;
      // One image that cannot be copied must not hold up the others or the feed. It is tried
      // once here (the next sync tries again): recorded as given up, for the account's health.
      out.failedCopies.push({ mediaId: task.mediaId, slot: task.slot, error: redactText((err as Error).message) });
      await noteCopyFailure(deps, task, err, { gaveUp: true });
    }
    progress.imagesCopied++;
    opts.onProgress?.({ ...progress });
  }
  if (!needsPublish(sync) && !sync.complete) return out;
  out.publish = await publishAccountFeed(deps, accountId, { complete: sync.complete });
  if (out.publish.outcome === 'written' && sweepDue(sync))
    out.swept = (await sweepAccountMedia(deps, accountId)).length;
  return out;
}
