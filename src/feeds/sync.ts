import { convertItems } from '../convert/convert-item.ts';
import {
  InsufficientDeveloperRoleError,
  MissingScopeError,
  PersonalAccountError,
  RateLimitedError,
  RunawayListingError,
  TokenInvalidError,
} from '../platform/errors.ts';
import { recordRunawayListing } from '../store/listing-guard.ts';
import { DEFAULT_LISTING_MAX_ITEMS, listingItemBound, runawayPauseMs } from './listing-bound.ts';
import { markSynced, setRefusedFields } from '../store/accounts.ts';
import { statusOnlyLifecycle } from '../accounts/lifecycle.ts';
import { errorKind, isLocalFailure } from '../accounts/error-kind.ts';
import { copySourceKey, getFeedPublication, getPosts, upsertPosts, type PostInput } from '../store/posts.ts';
import { readSyncContext } from '../store/sync-context.ts';
import { openToken } from '../store/tokens.ts';
import { redactText } from '../util/redact.ts';
import { feedKey } from '../storage/keys.ts';
import type { StoredRemovalHold } from '../store/holds.ts';
import { linkExpiry } from './expiry.ts';
import { copySlot, noteCopyFailure, renewPostLinks } from './copy-slot.ts';
import type { FeedDeps } from './deps.ts';
import {
  announceSource,
  publishAccountFeed,
  publishDemoFeedIfNone,
  sweepAccountMedia,
  type PublishOutcome,
} from './publish.ts';
import { settleRemoval } from './publication.ts';
import { contentHash, imageSlots, isImageMime } from './slots.ts';
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
  onProgress?: (p: SyncProgress) => void;
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
        error: (err as Error).message ?? String(err),
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

/** syncAccount's work, unmeasured. */
async function readAndStore(deps: FeedDeps, accountId: string, opts: SyncOptions): Promise<SyncResult> {
  const log = deps.logger.child({ job: 'feed-sync', accountId });
  // Everything read before listing, in one round trip (src/store/sync-context.ts).
  const context = await readSyncContext(deps.db, accountId);
  const { account, guard } = context;
  if (!account) return { outcome: 'skipped', accountId, reason: 'account not found (removed?)' };
  if (account.status !== 'active')
    return {
      outcome: 'skipped',
      accountId,
      reason: `account is ${account.status}; it needs its owner to connect again`,
    };
  if (!context.token) return { outcome: 'skipped', accountId, reason: 'no token stored' };
  const token = openToken(deps.cipher, accountId, context.token);
  // R-NET-6: after a listing that would not end, scheduled syncs wait; the operator's do not.
  if (!opts.manual && guard.pausedUntil && deps.clock.now() < guard.pausedUntil)
    return {
      outcome: 'skipped',
      accountId,
      reason: `listing paused until ${guard.pausedUntil.toISOString()} after ${guard.runaways} listing(s) in a row that would not end; a manual sync lists at once`,
    };

  // R-SCH-11 until the first complete sync. It may write the publication (the demo feed, or a
  // feed found in storage adopted): then it is read again.
  const wroteDemo = await publishDemoFeedIfNone(deps, accountId, { publication: context.publication });
  // Whether the feed must be written even if nothing changed: still the demo feed, or its
  // platform links (video files) die soon. Otherwise an unchanged sync publishes nothing.
  const publication =
    context.publication && !wroteDemo ? context.publication : await getFeedPublication(deps.db, accountId);
  // The publication row is what was written, not what storage still holds: one HEAD now and
  // then (src/feeds/feed-check.ts), and a feed object deleted behind our back is published again
  // by this sync rather than trusted.
  const checkFeed = opts.checkFeed ?? (opts.manual || feedCheckDue(accountId, account.lastSyncAt, deps.clock.now()));
  const feedMissing = publication !== null && checkFeed && !(await deps.storage.head(feedKey(accountId)));
  if (feedMissing) log.warn('the published feed is missing from storage; this sync publishes it again');
  const feedDue =
    !publication ||
    publication.demo ||
    (publication.earliestOe !== null &&
      deps.clock.now().getTime() >= publication.earliestOe.getTime() - (deps.relinkMarginMs ?? DAY));

  const progress: SyncProgress = { pages: 0, posts: 0, imagesToCopy: 0, imagesCopied: 0 };
  const report = () => opts.onProgress?.({ ...progress });
  let listing;
  try {
    listing = await deps.platform.listMedia(token.accessToken, {
      accountId,
      refusedFields: account.refusedFields as never,
      maxItems: listingItemBound(guard, deps.listingMaxItems ?? DEFAULT_LISTING_MAX_ITEMS),
      onPage: (p) => {
        progress.pages = p.index + 1;
        progress.posts += p.items;
        report();
      },
    });
  } catch (err) {
    if (ownerMustAct(err)) {
      const reason = redactText(err.message);
      // Stop hammering the API (R-TOK-10): the lifecycle unschedules and alerts, exactly once.
      const kind = errorKind(err);
      await markSynced(deps.db, accountId, deps.clock.now(), { error: reason, errorKind: kind });
      await (deps.lifecycle ?? statusOnlyLifecycle(deps)).apply(accountId, 'owner_must_act', reason, kind);
      log.warn({ reason }, 'account needs its owner to log in again; sync stopped');
      return { outcome: 'reauth-required', accountId, reason };
    }
    throw err;
  }
  const now = deps.clock.now();
  if (listing.refusedFields.length > 0) {
    // R-MED-4: remember what the account refuses, so the next sync does not ask again.
    await setRefusedFields(deps.db, accountId, [...account.refusedFields, ...listing.refusedFields], now);
  }
  if (listing.error instanceof RateLimitedError) {
    throw listing.error; // R-OWN-1: the job layer backs off (syncAccount records it); nothing is pruned
  }
  // R-NET-6: a complete listing sets the bound of the next ones; a runaway pauses the schedule.
  // (A complete listing's count is written with the sync's record, markSynced below.)
  let pauseNote = '';
  if (!listing.complete && listing.error instanceof RunawayListingError) {
    const until = new Date(now.getTime() + runawayPauseMs(guard.runaways + 1));
    await recordRunawayListing(deps.db, accountId, until);
    pauseNote = `; scheduled syncs of this account wait until ${until.toISOString()}`;
  }

  const converted = convertItems(listing.items, { copyrightItems: deps.copyrightItems ?? 'drop' });
  const posts = converted.posts;
  // Every item left out, with its reason: malformed in the listing, or not convertible (a
  // malformed id, no timestamp, an unknown media type, no cover). The rest is published.
  const dropped = [...listing.skipped, ...converted.dropped];
  // What the account records as skipped is the faults only: an item left out by the operator's
  // own policy (copyright-flagged, COPYRIGHT_ITEMS=drop) would otherwise mark every such account
  // with a warning on every sync, and a real fault would drown in it. Both stay in `dropped`.
  const faults = dropped.filter((d) => !('byPolicy' in d && d.byPolicy));
  if (faults.length > 0)
    log.warn({ skipped: faults.length, reasons: faults.slice(0, 5) }, 'items skipped; the rest of the listing is used');
  if (dropped.length > faults.length)
    log.debug({ leftOut: dropped.length - faults.length }, 'items left out by COPYRIGHT_ITEMS=drop');
  const inputs: PostInput[] = posts.map((post) => ({
    mediaId: post.id,
    post,
    contentHash: contentHash(post),
    earliestOe: listing.expiries.get(post.id) ?? null, // parsed once, when the listing was read
  }));
  const changes = await upsertPosts(deps.db, accountId, inputs, now);
  // R-LNK-6: only a listing that reached its end may say a post is gone, and a large removal
  // waits for a second listing or the operator (R-OWN-7, src/feeds/publication.ts). An item that
  // came back malformed (unreadable, or not convertible: no timestamp, an unknown media type) is
  // not "gone": its post keeps its last good version until it reads well again or really
  // disappears (R-OWN-8). An item left out by the operator's own policy (COPYRIGHT_ITEMS=drop) is.
  const listed = [
    ...posts.map((p) => p.id),
    ...listing.skipped.map((s) => s.id),
    ...converted.dropped.filter((d) => !d.byPolicy).map((d) => d.id),
  ];
  const settled = listing.complete
    ? await settleRemoval(deps.db, accountId, {
        publication,
        listed,
        listedPosts: posts.length,
        now,
        // The stored ids as the upsert left them: those read before it, and every post it wrote.
        known: { stored: [...new Set([...context.storedPostIds, ...posts.map((p) => p.id)])], hold: context.hold },
      })
    : { pruned: [], held: null, agreed: false, stale: false };
  const pruned = settled.pruned;
  if (settled.held)
    log.warn(
      {
        removing: settled.held.removing.length,
        publishedPosts: settled.held.publishedPosts,
        since: settled.held.since.toISOString(),
      },
      'removal held: the listing would remove more than half of the feed; nothing pruned until a second complete listing an hour later agrees or the operator confirms (feedmirror feeds confirm-removal)',
    );
  else if (settled.agreed)
    log.info({ pruned: pruned.length }, 'held removal agreed by a second complete listing: pruned');

  // Video files stay platform links in the feed (R-LNK-5): when theirs are dead or about to die
  // (the listing may hand out old signatures), renew them through the single-media read (R-MED-8)
  // so the published feed never carries a dead video link. Once renewed, they last until the
  // next renewal window: an unchanged account costs no call here most of the time.
  const relinkBefore = now.getTime() + (deps.relinkMarginMs ?? DAY);
  let renewedVideos = 0;
  // The stored links' oe, not the listing's: for the same content the upsert keeps links a
  // renewal made, which live longer. Only the posts with a video whose stored links are due are
  // read back (a post's kinds of media are the same in both), all in one query: a round trip per
  // post cost more than the sync's own work, and reading every video post back on every sync was
  // a twentieth of its CPU time.
  const hasVideo = (post: PostInput['post']) => post.media.some((m) => !isImageMime(m.mime));
  const due = (earliestOe: Date | null) =>
    linkExpiry(earliestOe, now, { renewMarginMs: relinkBefore - now.getTime() }).renew;
  const toRenew = inputs.filter((i) => {
    const kept = changes.get(i.mediaId);
    return kept !== undefined && hasVideo(i.post) && due(kept.earliestOe);
  });
  const storedVideos = new Map(
    toRenew.length === 0
      ? []
      : (
          await getPosts(
            deps.db,
            accountId,
            toRenew.map((i) => i.mediaId),
          )
        ).map((p) => [p.mediaId, p]),
  );
  for (const input of toRenew) {
    const stored = storedVideos.get(input.mediaId);
    if (!stored || !hasVideo(stored.post)) continue;
    if (due(stored.earliestOe)) {
      try {
        const renewed = await renewPostLinks(deps, accountId, input.mediaId, stored.post);
        input.post = renewed.post;
        input.earliestOe = renewed.earliestOe;
        renewedVideos++;
      } catch (err) {
        if (ownerMustAct(err) || err instanceof RateLimitedError) throw err;
        log.warn(
          { mediaId: input.mediaId, err: redactText((err as Error).message) },
          'could not renew video links; the next sync tries again',
        );
      }
    }
  }

  const copies: CopyTask[] = [];
  // The copies recorded when the sync began: one a copy job records meanwhile is queued again,
  // and that job finds it done (copySlot).
  const copied = context.copySources;
  for (const input of inputs) {
    for (const s of imageSlots(input.post)) {
      if (copied.get(copySourceKey(input.mediaId, s.slot)) === s.sourceId) continue; // this file is already copied
      copies.push({
        accountId,
        mediaId: input.mediaId,
        slot: s.slot,
        deadline: linkExpiry(input.earliestOe, now).copyDeadline,
      });
    }
  }
  // R-LNK-1/R-LNK-2: the link that dies first is copied first; unknown expiry last.
  copies.sort((a, b) => (a.deadline?.getTime() ?? Infinity) - (b.deadline?.getTime() ?? Infinity));
  progress.imagesToCopy = copies.length;
  report();

  const error = listing.complete
    ? undefined
    : redactText(listing.error?.message ?? 'the listing did not finish') + pauseNote;
  await markSynced(deps.db, accountId, now, {
    error: error ?? null,
    errorKind: listing.error ? errorKind(listing.error) : null,
    skipped: faults,
    outcome: listing.complete ? 'complete' : 'incomplete',
    posts: posts.length,
    // R-NET-6: a complete listing sets the bound of the next ones and ends a pause.
    ...(listing.complete ? { completeListingItems: listing.items.length + listing.skipped.length } : {}),
  });
  if (error) log.warn({ pages: listing.pages, error }, 'listing incomplete: nothing pruned');
  let newPosts = 0;
  let changedPosts = 0;
  for (const { change: c } of changes.values()) {
    if (c === 'new') newPosts++;
    else if (c === 'changed') changedPosts++;
  }
  return {
    outcome: 'synced',
    accountId,
    complete: listing.complete,
    pages: listing.pages,
    calls: listing.calls,
    posts: posts.length,
    newPosts,
    changedPosts,
    renewedVideos,
    dropped,
    pruned,
    ...(settled.held ? { held: settled.held } : {}),
    copies,
    feedDue: feedDue || settled.stale,
    feedMissing,
    ...(error ? { error } : {}),
  };
}

/**
 * Whether a sync's result calls for publishing: something was read that the feed lacks (new or
 * changed posts, images to copy, renewed video links), a complete listing pruned posts, the feed
 * object is missing from storage, or the feed is due anyway (the demo feed still in place, video links about to die). Otherwise the
 * previous feed stays as it is and no publish job runs: a publish job for every unchanged sync
 * (a feed built, validated and found the same) took the worker's CPU per catch-up sync from
 * 12.9 to 17.5 ms in `npm run bench -- --scale 600`. The worker's flow decides with it; runSyncNow (one account, by hand) also
 * publishes after any complete listing, so its summary can say the feed is unchanged.
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
 * reads the feed back: after a sync that only added posts it found nothing to remove, and cost
 * the worker a LIST and a GET per written feed (and s3rver, on the benchmark's cores, about 4 ms
 * per image copied). What a crash leaves behind is found by the daily media sweep and verify.
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
