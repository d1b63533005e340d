import { copySlot, renewPostLinks } from '../feeds/copy-slot.ts';
import type { FeedDeps } from '../feeds/deps.ts';
import { feedChanges, feedToPublish, postHashes, publishAccountFeed, publishDemoFeedIfNone } from '../feeds/publish.ts';
import { contentHash } from '../util/content-hash.ts';
import type { Feed } from '../schema/v1.ts';
import { validateFeed } from '../schema/validate.ts';
import { DEPLOYMENT_MARKER_KEY, feedKey } from '../storage/keys.ts';
import type { ListedObject, ObjectStorage } from '../storage/types.ts';
import { countAccounts, eachAccount, getAccount, type Account } from '../store/accounts.ts';
import {
  eachMediaCopyInKeyOrder,
  getFeedPublication,
  getPost,
  listMediaCopies,
  type MediaCopy,
} from '../store/posts.ts';
import { auditSecrets, type UnopenedSecret } from '../store/secrets.ts';
import { getTokenInfo } from '../store/tokens.ts';
import { saveVerifyRun, type VerifyFinding } from '../store/verify-runs.ts';
import { DAY } from '../util/clock.ts';
import { redactText } from '../util/redact.ts';
import type { WidgetDeps } from '../widgets/publish.ts';
import {
  checkAccountStatus,
  checkStrayStatus,
  repairStatus,
  type StatusProblem,
  type StatusProblemKind,
} from './status.ts';
import {
  checkWidgetScript,
  checkWidgets,
  repairWidgets,
  repairWidgetScript,
  type WidgetProblem,
  type WidgetProblemKind,
  type WidgetScriptProblem,
  type WidgetScriptProblemKind,
} from './widgets.ts';
import { openDeletions, type DeletionRun } from '../deletion/guard.ts';
import { claimedBecause, claimStorage, ownershipNotice, readOwnership } from '../deletion/marker.ts';
import { deleteOrphans, type OrphanAction } from './orphans.ts';
import { recordMissingObjects } from './missing-objects.ts';
import { limiter, liveListing, type Listing } from './listing.ts';
import { mergeAccountObjects, type Expected } from './merge.ts';
import { mediaSweepKeep, removeSweptMedia, type MediaSweepResult } from '../feeds/media-sweep.ts';

/**
 * `feedmirror verify`: do PostgreSQL, Redis and the object storage agree? Every account has its
 * schedules and every schedule an account; every published feed is what the database would
 * publish now; every object the records call for is in storage with its size and type: each URL
 * of the published feed (every size included), of the feed the database would publish now, and
 * each recorded copy of a stored post (so a feed deleted with its images does not hide them); no
 * object under media/<account>/ is left unreferenced past a grace period; every stored token and
 * webhook secret opens with the configured keys; the widgets' objects and the widget script are
 * what would be published now; the status documents follow PUBLISH_STATUS (./status.ts).
 *
 * The repair uses the worker's own operations, never variants of them, in the order the objects
 * depend on each other, so one run restores everything it can: copies first (copySlot, its
 * post's links renewed first, R-MED-8), then the feeds (publishAccountFeed), then the widgets
 * (publishWidgetDocument), the status documents (publishAccountStatus) and the widget script
 * (publishWidget); schedules are set again (the caller's ScheduleCheck: scheduleAccount,
 * unscheduleAccount). Nothing is deleted unless repairing, and then only unreferenced objects
 * older than the grace period and status documents that should not be there, both through the
 * deletion guard (./orphans.ts, ./status.ts). After a repair the accounts that had problems are
 * checked again, with the schedules, secrets, widgets, the widget script and the status documents
 * left without an account.
 *
 * Memory stays flat with the number of accounts: they are read a page at a time (eachAccount),
 * and only an account with a problem keeps its findings (its copies, orphans) for the repair.
 */

export type ProblemKind =
  /** An active account without its scheduler (or with one at another interval). */
  | 'schedule-missing'
  /** A scheduler whose account is gone or waits for its owner. */
  | 'schedule-stray'
  /** The publication is recorded, the feed object is not in storage. */
  | 'feed-missing'
  /** The feed object is not JSON or not schema v1. */
  | 'feed-invalid'
  /** The feed object is not what the database would publish now. */
  | 'feed-stale'
  /** A URL of a published feed has no object in storage. */
  | 'object-missing'
  /** The object's byte size is not the recorded one (or it is empty). */
  | 'object-size'
  /** The object's Content-Type is not the type the feed declares. */
  | 'object-type'
  /** An image URL of a published feed that is not in this storage at all. */
  | 'object-foreign'
  /** An object under media/<account>/ that nothing references, older than the grace period. */
  | 'orphan'
  /** A stored token the configured keys cannot decrypt. */
  | 'token-undecryptable'
  /** A webhook signing secret the configured keys cannot decrypt. */
  | 'webhook-secret-undecryptable'
  /** The repair of a problem failed (the problem itself is listed again by the re-check). */
  | 'repair-failed'
  /** A widget's objects missing, unreadable or not what would be published now (./widgets.ts). */
  | WidgetProblemKind
  /** The widget script missing or not this release's (./widgets.ts). */
  | WidgetScriptProblemKind
  /** A status document missing, stale, or there when it should not be (./status.ts). */
  | StatusProblemKind
  /**
   * The storage's deployment marker (R-DEL-1) missing, another deployment's, or unreadable:
   * nothing is deleted from it. A missing one is written by the repair when a worker's start would.
   */
  | 'storage-unclaimed'
  | 'storage-foreign';

export interface Problem extends VerifyFinding {
  kind: ProblemKind;
}

export interface RepairAction extends VerifyFinding {
  kind:
    | 'recopied'
    | 'republished'
    | 'rescheduled'
    | 'unscheduled'
    | 'deleted-status'
    | 'claimed'
    | 'repair-failed'
    | OrphanAction['kind'];
}

/** One difference between the accounts and the schedules (jobs/verify-schedules.ts supplies it). */
export interface ScheduleDifference {
  kind: 'missing' | 'interval' | 'stray';
  accountId: string;
  schedulerId: string;
}

/**
 * The schedules, as the caller keeps them (BullMQ in the CLI and the worker): the reconciler's
 * comparison, and the repair connect and remove use. This module never touches the queues.
 */
export interface ScheduleCheck {
  compare(): Promise<ScheduleDifference[]>;
  repair(d: ScheduleDifference): Promise<void>;
}

export interface VerifyCounts {
  accounts: number;
  /** Differences found between accounts and schedules (0 when they agree). */
  scheduleDifferences: number;
  /** Feed objects read (published feeds). */
  feeds: number;
  /**
   * Distinct objects the records call for (the published feeds, the feeds the database would
   * publish, the recorded copies of stored posts), each checked against the listing.
   */
  objects: number;
  /** Objects listed under media/. */
  storedObjects: number;
  /** Unreferenced objects younger than the grace period (a copy in flight): left alone. */
  unreferencedRecent: number;
  /** Unreferenced objects past the grace period. */
  orphans: number;
  tokens: number;
  webhookSecrets: number;
  /** Widgets whose published objects were checked (0 when the caller gave no widget deps). */
  widgets: number;
  /** Accounts whose status document was checked (PUBLISH_STATUS on; 0 when off). */
  statusDocuments: number;
  /**
   * HEAD requests the object check sent: where the listing could not decide (a type not known
   * from the name, a difference to confirm) and the sample of types.
   */
  heads: number;
  /** Media folders of deleted posts the media sweep removed on the same listing (with `sweep`). */
  sweptMedia: number;
}

export interface VerifyProgress {
  accountsDone: number;
  accounts: number;
  objects: number;
  /** Objects listed so far. */
  storedObjects?: number;
  /** 'check', 'repair' or 're-check'. */
  phase: string;
}

export interface VerifyOptions {
  /** Only this account (its schedules, feed, objects and token; webhook secrets are not per account). */
  accountId?: string;
  repair?: boolean;
  /** With repair: delete orphans past the cap too (R-DEL-4; never past the rest of the deletion guard). */
  force?: boolean;
  /** Unreferenced objects younger than this are a copy in flight, not an orphan (default 24 h). */
  orphanGraceMs?: number;
  /** Accounts checked at once, and HEADs at once across them (default 16). */
  concurrency?: number;
  /**
   * What storage holds: the storage listed now (default), or an S3 Inventory report
   * (./inventory.ts, `verify --inventory`).
   */
  listing?: Listing;
  /** Keys a LIST request (default 1000, S3's most); the tests use 2 to cross page boundaries. */
  listPageSize?: number;
  /** Copy records read a query (default 1000); the tests use 2. */
  copyPageSize?: number;
  /** Share of the objects whose stored Content-Type is read with a HEAD (default 0.01). */
  typeSample?: number;
  /**
   * The media sweep (R-LNK-6) on the same listing: the daily pass does both with one listing of
   * each account. Deletes through the deletion guard whether or not `repair` is set, as the
   * media sweep always has.
   */
  sweep?: boolean;
  /** Who ran it, as recorded (verify_runs): the command or the worker's daily run. */
  trigger: 'cli' | 'worker';
  onProgress?: (p: VerifyProgress) => void;
}

export type VerifyDeps = FeedDeps & {
  /** Without it (no Redis at hand) the schedules are not compared. */
  schedules?: ScheduleCheck;
  /**
   * What widgets are published with (the CLI's and the worker's own); without it the widgets and
   * the widget script are not checked.
   */
  widgets?: WidgetDeps;
  /**
   * PUBLISH_STATUS, as the caller runs with it: on, every account's status document is checked;
   * off, none may be left in storage. Without it status documents are not checked.
   */
  publishStatus?: boolean;
};

export interface VerifyReport {
  ok: boolean;
  counts: VerifyCounts;
  /** What is wrong now: after the repair (and its re-check) when there was one. */
  problems: Problem[];
  /** With repair: what the first check found. */
  found?: Problem[];
  repaired: RepairAction[];
  /** With `sweep`: what the media sweep on the same listing did (the first check's pass). */
  sweep?: MediaSweepResult;
  startedAt: Date;
  finishedAt: Date;
}

export const DEFAULT_ORPHAN_GRACE_MS = DAY;
/**
 * A 1% sample of stored types a day: 2,400 HEADs for 10,000 accounts of 24 posts, and an object
 * stored with a wrong type is found in about 70 days on average by sampling alone (a copy writes
 * the type its name says, so such an object is one changed behind feedmirror's back).
 */
export const DEFAULT_TYPE_SAMPLE = 0.01;
const DEFAULT_CONCURRENCY = 16;

/** Check (and with `repair`, repair and check again), then record the outcome in verify_runs. */
export async function runVerify(deps: VerifyDeps, opts: VerifyOptions): Promise<VerifyReport> {
  const startedAt = deps.clock.now();
  const first = await check(deps, opts, 'check');
  // Health knows what verify knows: a copy whose object is missing is marked until it is copied again.
  await recordMissingObjects(deps.db, first.problems, startedAt);
  let report: VerifyReport = {
    ok: first.problems.length === 0,
    ...first,
    repaired: [],
    startedAt,
    finishedAt: startedAt,
  };
  if (opts.repair && first.problems.length > 0) {
    const repaired = await repair(deps, opts, first);
    // Checked again: what is not per account (schedules, secrets, widgets) as a whole, and of the
    // accounts only those the first check found something wrong with; the others were not touched.
    // A second pass over every account would take as long as the first, which on a large
    // deployment is hours.
    const again = await check(deps, opts, 're-check', [...first.accounts.keys()]);
    report = {
      ok: again.problems.length === 0,
      counts: mergeCounts(first, again),
      problems: again.problems,
      found: first.problems,
      repaired,
      ...(first.sweep ? { sweep: first.sweep } : {}),
      startedAt,
      finishedAt: startedAt,
    };
  }
  report.finishedAt = deps.clock.now();
  await saveVerifyRun(deps.db, {
    trigger: opts.trigger,
    accountId: opts.accountId ?? null,
    repair: opts.repair === true,
    startedAt: report.startedAt,
    finishedAt: report.finishedAt,
    ok: report.ok,
    counts: { ...report.counts },
    problems: report.problems,
    problemCount: report.problems.length,
    repaired: report.repaired,
  });
  const log = { ok: report.ok, problems: report.problems.length, repaired: report.repaired.length, ...report.counts };
  if (report.ok) deps.logger.info(log, 'verify: the stores agree');
  else deps.logger.warn({ ...log, first: report.problems.slice(0, 5) }, 'verify: the stores disagree');
  return report;
}

// ---- the check ---------------------------------------------------------------------------------

/** What one check found, with what the repair needs to know per account. */
interface CheckResult {
  counts: VerifyCounts;
  problems: Problem[];
  schedules: ScheduleDifference[];
  accounts: Map<string, AccountFindings>;
  widgets: WidgetProblem[];
  widgetScript: WidgetScriptProblem[];
  status: StatusProblem[];
  /** The storage's deployment marker, when it is not this deployment's. */
  ownership?: Problem;
  sweep?: MediaSweepResult;
}

interface AccountFindings {
  account: Account;
  demo: boolean;
  copies: MediaCopy[];
  orphans: string[];
  counts: AccountCounts;
}

/** The counts one account adds to a check's. */
type AccountCounts = Pick<
  VerifyCounts,
  'feeds' | 'objects' | 'storedObjects' | 'unreferencedRecent' | 'orphans' | 'statusDocuments' | 'heads' | 'sweptMedia'
>;
const ACCOUNT_COUNTS = [
  'feeds',
  'objects',
  'storedObjects',
  'unreferencedRecent',
  'orphans',
  'statusDocuments',
  'heads',
  'sweptMedia',
] as const;

/**
 * The counts after a repair: the re-check's for what it checked as a whole, the first check's for
 * the accounts it did not check again, with the re-checked accounts' own counts in place of the
 * first check's.
 */
function mergeCounts(first: CheckResult, again: CheckResult): VerifyCounts {
  const out: VerifyCounts = { ...again.counts, accounts: first.counts.accounts };
  for (const k of ACCOUNT_COUNTS) {
    out[k] = first.counts[k];
    for (const [id, f] of first.accounts) out[k] += (again.accounts.get(id)?.counts[k] ?? 0) - f.counts[k];
  }
  return out;
}

/**
 * One check. `only`: these accounts alone (the re-check after a repair), each kept in the result's
 * `accounts` whatever it found, so their counts can replace the first check's.
 */
async function check(
  deps: VerifyDeps,
  opts: VerifyOptions,
  phase: string,
  only?: readonly string[],
): Promise<CheckResult> {
  const counts: VerifyCounts = {
    accounts: 0,
    scheduleDifferences: 0,
    feeds: 0,
    objects: 0,
    storedObjects: 0,
    unreferencedRecent: 0,
    orphans: 0,
    tokens: 0,
    webhookSecrets: 0,
    widgets: 0,
    statusDocuments: 0,
    heads: 0,
    sweptMedia: 0,
  };
  const problems: Problem[] = [];
  const now = deps.clock.now();

  // One account, or every account a page at a time (eachAccount): holding every row at once would
  // keep heap per account for the length of a run that takes hours on a large deployment.
  let accounts: AsyncIterable<Account> | Account[];
  let total: number;
  if (only !== undefined || opts.accountId !== undefined) {
    // Read one at a time as they are checked: after a wiped bucket every account can be here.
    const ids = only ?? [opts.accountId!];
    accounts = (async function* () {
      for (const id of ids) {
        const a = await getAccount(deps.db, id);
        if (a) yield a;
      }
    })();
    total = ids.length;
  } else {
    total = await countAccounts(deps.db);
    // In key order: the order the listing (or an inventory) gives their objects.
    accounts = eachAccount(deps.db, now, { keyOrder: true });
  }

  // Schedules: the caller's comparison (the reconciler's), narrowed to the account asked for.
  let schedules: ScheduleDifference[] = [];
  if (deps.schedules) {
    schedules = (await deps.schedules.compare()).filter(
      (d) => opts.accountId === undefined || d.accountId === opts.accountId,
    );
    counts.scheduleDifferences = schedules.length;
    for (const d of schedules)
      problems.push(
        d.kind === 'stray'
          ? {
              kind: 'schedule-stray',
              accountId: d.accountId,
              key: d.schedulerId,
              detail: `scheduler ${d.schedulerId} runs for an account that is gone or waits for its owner to connect again`,
            }
          : {
              kind: 'schedule-missing',
              accountId: d.accountId,
              key: d.schedulerId,
              detail:
                d.kind === 'missing'
                  ? `the account has no scheduler ${d.schedulerId}: it is never synced or refreshed`
                  : `scheduler ${d.schedulerId} runs at another interval than the settings say`,
            },
      );
  }

  // Secrets: every token and webhook secret, opened as a sync or a delivery would (the audit
  // `keys list` and `doctor` use); narrowed to the account's token with --account.
  const audit = await auditSecrets(deps.db, deps.cipher);
  const opened = (kind: 'tokens' | 'webhookSecrets') => audit.keys.reduce((n, k) => n + k[kind], 0);
  const mine = (u: UnopenedSecret) => opts.accountId === undefined || u.accountId === opts.accountId;
  const unopened = audit.unopened.filter(mine);
  if (opts.accountId === undefined) {
    counts.tokens = opened('tokens') + unopened.filter((u) => u.accountId).length;
    counts.webhookSecrets = opened('webhookSecrets') + unopened.filter((u) => u.endpointId).length;
  } else counts.tokens = (await getTokenInfo(deps.db, opts.accountId)) ? 1 : 0;
  for (const u of unopened)
    problems.push(
      u.accountId
        ? { kind: 'token-undecryptable', accountId: u.accountId, detail: u.message }
        : { kind: 'webhook-secret-undecryptable', key: u.endpointId ?? u.what, detail: `${u.what}: ${u.message}` },
    );

  const findings = new Map<string, AccountFindings>();
  const limit = opts.concurrency ?? DEFAULT_CONCURRENCY;
  // The media sweep rides on the first check's listing only (a re-check sweeps nothing again).
  const sweepResult: MediaSweepResult = { accounts: 0, removedMedia: 0, held: 0, refused: 0 };
  const sweep = opts.sweep && only === undefined ? await sweepOnListing(deps, opts, sweepResult) : undefined;
  const ctx: AccountContext = {
    now,
    grace: opts.orphanGraceMs ?? DEFAULT_ORPHAN_GRACE_MS,
    limit: limiter(limit),
    publicBase: storageBase(deps.storage),
    listing:
      opts.listing ?? liveListing(deps.storage, opts.listPageSize !== undefined ? { pageSize: opts.listPageSize } : {}),
    typeShare: opts.typeSample ?? DEFAULT_TYPE_SAMPLE,
    // Another sample each day; the same one within a day (a re-check samples what the check did).
    salt: now.toISOString().slice(0, 10),
    ...(opts.copyPageSize !== undefined ? { copyPageSize: opts.copyPageSize } : {}),
    ...(sweep ?? {}),
  };
  const status: StatusProblem[] = [];
  // Accounts `limit` at once (each a few round trips to PostgreSQL, its feed, its listing), in
  // key order (an inventory hands each its part in that order), their findings taken in the
  // same order so the report does not depend on which finished first.
  await inOrder(accounts, limit, async (account) => {
    // Asked for before anything is awaited: an inventory hands out its parts in this order.
    const listed = ctx.listing.media(account.id);
    const mine: Problem[] = [];
    const own: StatusProblem[] = [];
    const f = await checkAccount(deps, account, ctx, mine, listed);
    // Its status document with PUBLISH_STATUS on: there, and what its state gives now.
    if (deps.publishStatus === true) {
      f.counts.statusDocuments++;
      await checkAccountStatus(deps, account.id, own);
      mine.push(...own);
    }
    // Only an account with something to repair keeps its findings (its copies and orphans) for
    // the repair: the rest would hold every recorded copy of every account until the run ends.
    if (mine.length > 0 || only !== undefined) f.copies = await listMediaCopies(deps.db, account.id);
    return () => {
      problems.push(...mine);
      status.push(...own);
      counts.accounts++;
      for (const k of ACCOUNT_COUNTS) counts[k] += f.counts[k];
      if (mine.length > 0 || only !== undefined) findings.set(account.id, f);
      opts.onProgress?.({
        accountsDone: counts.accounts,
        // An account added while the run goes may make the count pass the total read at its start.
        accounts: Math.max(total, counts.accounts),
        objects: counts.objects,
        storedObjects: counts.storedObjects,
        phase,
      });
    };
  });
  // The deployment marker (R-DEL-1): without it nothing is deleted, so copies of deleted posts
  // stay; a wiped storage lost it with everything else.
  let ownership: Problem | undefined;
  if (opts.accountId === undefined) {
    const o = await readOwnership(deps.db, deps.storage);
    if (o.state !== 'ours') {
      const { line, fix } = ownershipNotice(o);
      ownership = {
        kind: o.state === 'unclaimed' ? 'storage-unclaimed' : 'storage-foreign',
        key: DEPLOYMENT_MARKER_KEY,
        detail: `${line} -> ${fix}`,
      };
      problems.push(ownership);
    }
  }
  // Widgets last: they are built from the feeds checked above.
  const widgets: WidgetProblem[] = [];
  if (deps.widgets) counts.widgets = await checkWidgets(deps.widgets, opts.accountId, widgets);
  for (const { widgetId: _id, ...p } of widgets) problems.push(p);
  // The widget script every embed loads (not per account: left out with --account).
  const widgetScript: WidgetScriptProblem[] = [];
  if (deps.widgets && opts.accountId === undefined) await checkWidgetScript(deps.widgets.storage, widgetScript);
  problems.push(...widgetScript);
  // Status documents that should not be there: all with PUBLISH_STATUS off, those of gone accounts.
  if (deps.publishStatus !== undefined) {
    const had = status.length;
    await checkStrayStatus(
      deps,
      { publishing: deps.publishStatus, ...(opts.accountId !== undefined ? { accountId: opts.accountId } : {}) },
      status,
    );
    problems.push(...status.slice(had));
  }
  return {
    counts,
    problems,
    schedules,
    accounts: findings,
    widgets,
    widgetScript,
    status,
    ...(ownership ? { ownership } : {}),
    ...(sweep ? { sweep: sweepResult } : {}),
  };
}

/** What every account's check shares in one run. */
interface AccountContext {
  now: Date;
  grace: number;
  /** HEADs at once, across the accounts checked at once. */
  limit: <T>(fn: () => Promise<T>) => Promise<T>;
  publicBase: string;
  listing: Listing;
  typeShare: number;
  salt: string;
  copyPageSize?: number;
  /** With the media sweep: the media ids it keeps for an account. */
  sweepKeep?: (accountId: string) => Promise<Set<string>>;
  /** With the media sweep: delete what it found (through the deletion guard); the keys deleted. */
  sweep?: (
    accountId: string,
    total: number,
    candidates: Map<string, string[]>,
  ) => Promise<{ deleted: Set<string>; removedMedia: number }>;
}

async function checkAccount(
  deps: VerifyDeps,
  account: Account,
  ctx: AccountContext,
  problems: Problem[],
  listed: AsyncIterable<ListedObject>,
): Promise<AccountFindings> {
  const accountId = account.id;
  const publication = await getFeedPublication(deps.db, accountId);
  const counts: AccountCounts = {
    feeds: 0,
    objects: 0,
    storedObjects: 0,
    unreferencedRecent: 0,
    orphans: 0,
    statusDocuments: 0,
    heads: 0,
    sweptMedia: 0,
  };
  const findings: AccountFindings = { account, demo: publication?.demo ?? false, copies: [], orphans: [], counts };

  // The feed: there, valid, and what the database would publish now.
  let feed: Feed | undefined;
  /** The feed the database would publish now (a connected account's): what the repair publishes. */
  let built: Feed | undefined;
  const buildNow = async () => (await feedToPublish(deps, account, publication, ctx.now)).feed;
  if (publication) {
    const key = feedKey(accountId);
    const obj = await deps.storage.get(key);
    counts.feeds += obj ? 1 : 0;
    if (!obj) {
      problems.push({
        kind: 'feed-missing',
        accountId,
        key,
        detail: `the feed published ${publication.publishedAt.toISOString()} is not in storage: sites reading it get 404`,
      });
    } else {
      let parsed: unknown;
      try {
        parsed = JSON.parse(obj.body.toString('utf8'));
      } catch {
        parsed = undefined;
      }
      const valid = parsed === undefined ? undefined : validateFeed(parsed);
      if (!valid?.ok) {
        problems.push({
          kind: 'feed-invalid',
          accountId,
          key,
          detail: valid
            ? `not a schema v1 feed: ${valid.problems
                .slice(0, 3)
                .map((p) => `${p.path} ${p.message}`)
                .join('; ')}`
            : 'not JSON',
        });
      } else {
        feed = valid.feed;
        if (publication.demo) {
          if (!feed.demo)
            problems.push({
              kind: 'feed-stale',
              accountId,
              key,
              detail: 'the database says the demo feed stands, storage holds a connected feed',
            });
        } else {
          built = await buildNow();
          const stale = staleness(feed, built);
          if (stale) problems.push({ kind: 'feed-stale', accountId, key, detail: stale });
        }
      }
    }
    // Gone or unreadable: what it should point at comes from the database, not from storage.
    if (!feed && !publication.demo) built = await buildNow();
  }

  // Every object the records call for, an object of its size and type: each URL of the stored
  // feed (the demo feed's pictures are not ours) and of the feed the database would publish
  // now, and each recorded copy of a stored post; and no object under media/<account>/ left
  // unreferenced past the grace period. One merge of the listing with the records read in the
  // same order (./merge.ts): HEADs only where the listing cannot decide, and a sample. With the
  // feed object gone (deleted, a bucket emptied) its images are found missing by the same check,
  // and repaired in the same run.
  const expected = new Map<string, Expected>();
  if (feed && !feed.demo) addFeedObjects(expected, feed, ctx.publicBase, accountId, problems);
  if (built) addFeedObjects(expected, built, ctx.publicBase, accountId, problems);
  const merged = await mergeAccountObjects(
    deps,
    accountId,
    expected,
    eachMediaCopyInKeyOrder(deps.db, accountId, ctx.copyPageSize ? { pageSize: ctx.copyPageSize } : {}),
    listed,
    {
      now: ctx.now,
      graceMs: ctx.grace,
      limit: ctx.limit,
      typeShare: ctx.typeShare,
      salt: ctx.salt,
      ...(ctx.listing.takenAt ? { takenAt: ctx.listing.takenAt } : {}),
      ...(ctx.sweepKeep ? { sweepKeep: await ctx.sweepKeep(accountId) } : {}),
    },
  );
  counts.objects += merged.objects;
  counts.storedObjects += merged.storedObjects;
  counts.unreferencedRecent += merged.unreferencedRecent;
  counts.heads += merged.heads;
  let orphans = merged.orphans;
  let objectProblems = merged.problems;
  // The media sweep on the same listing (the daily pass): folders of posts that are gone.
  if (ctx.sweep && merged.sweep.size > 0) {
    const { deleted, removedMedia } = await ctx.sweep(accountId, merged.storedObjects, merged.sweep);
    counts.sweptMedia += removedMedia;
    if (deleted.size > 0) {
      orphans = orphans.filter((k) => !deleted.has(k));
      objectProblems = objectProblems.filter((p) => !deleted.has(p.key));
    }
  }
  counts.orphans += orphans.length;
  findings.orphans.push(...orphans);
  problems.push(...objectProblems);
  return findings;
}

/**
 * Why the stored feed is not what the database would publish now (fetchedAt aside), or
 * undefined. `built`: as publish builds it (feedToPublish: the store, with what was published
 * kept, R-OWN-6).
 */
function staleness(stored: Feed, built: Feed): string | undefined {
  // As publish hashes it: fetchedAt is left out (re-reading unchanged posts rewrites nothing).
  const { fetchedAt: _f, ...content } = stored;
  const { fetchedAt: _b, ...builtContent } = built;
  if (contentHash(content) === contentHash(builtContent)) return undefined;
  const c = feedChanges(postHashes(stored), postHashes(built));
  const parts = [
    c.added.length ? `${c.added.length} post(s) missing from it (${c.added.slice(0, 3).join(', ')})` : '',
    c.removed.length
      ? `${c.removed.length} post(s) it should no longer hold (${c.removed.slice(0, 3).join(', ')})`
      : '',
    c.changed.length ? `${c.changed.length} post(s) changed since (${c.changed.slice(0, 3).join(', ')})` : '',
  ].filter(Boolean);
  return `the published feed (${stored.posts.length} posts) is not what the database would publish now (${built.posts.length} posts): ${parts.join('; ') || 'its origin differs'}`;
}

/**
 * Add the objects a feed points at: thumbnailUrl, thumbnailSizes, each photo of media[] and its
 * sizes, keyed by storage key, with the MIME types the feed declares for them (the merge adds the
 * byte size each original's copy records).
 */
function addFeedObjects(
  out: Map<string, Expected>,
  feed: Feed,
  base: string,
  accountId: string,
  problems: Problem[],
): void {
  const add = (postId: string, url: string, mime: string | undefined) => {
    const key = keyOfUrl(url, base);
    if (key === null) {
      problems.push({
        kind: 'object-foreign',
        accountId,
        detail: `post ${postId}: image ${redactText(url.split('?')[0] ?? url)} is not in this storage (MEDIA_PUBLIC_URL or STORAGE_URL changed?)`,
      });
      return;
    }
    let e = out.get(key);
    if (!e) {
      e = { mimes: new Set(), postId };
      out.set(key, e);
    }
    if (mime) e.mimes.add(mime);
  };
  for (const post of feed.posts) {
    const sizes = post.thumbnailSizes ?? [];
    for (const s of sizes) add(post.id, s.url, s.mime);
    if (post.thumbnailUrl) add(post.id, post.thumbnailUrl, sizes.find((s) => s.url === post.thumbnailUrl)?.mime);
    for (const m of post.media) {
      if (!m.mime.startsWith('image/')) continue; // video files stay platform links (R-LNK-5)
      add(post.id, m.url, m.mime);
      for (const s of m.sizes ?? []) add(post.id, s.url, s.mime);
    }
  }
}

/** The public address of the storage's root: publicUrl of any key, minus that key. */
function storageBase(storage: ObjectStorage): string {
  const probe = 'feeds/x.json';
  const url = storage.publicUrl(probe);
  return url.endsWith(probe) ? url.slice(0, -probe.length) : url;
}

/** The storage key a public URL addresses, or null when the URL is not in this storage. */
export function keyOfUrl(url: string, base: string): string | null {
  if (!url.startsWith(base)) return null;
  const rest = url.slice(base.length).split(/[?#]/)[0] ?? '';
  try {
    return decodeURIComponent(rest) || null;
  } catch {
    return null;
  }
}

/**
 * run over `items`, `limit` at once; each result (a function) is applied in the items' order,
 * so what the run reports does not depend on which finished first.
 */
async function inOrder<T>(
  items: AsyncIterable<T> | Iterable<T>,
  limit: number,
  run: (item: T) => Promise<() => void>,
): Promise<void> {
  const inflight: Array<Promise<() => void>> = [];
  try {
    for await (const item of items) {
      const p = run(item);
      p.catch(() => undefined); // awaited below in its turn; not an unhandled rejection meanwhile
      inflight.push(p);
      if (inflight.length >= limit) (await inflight.shift()!)();
    }
    while (inflight.length > 0) (await inflight.shift()!)();
  } finally {
    // On a failure, the rest settle before the run ends (nothing left writing behind it).
    await Promise.allSettled(inflight);
  }
}

/** The media sweep on the verify's own listing (the daily pass): its keep list and its delete. */
async function sweepOnListing(
  deps: VerifyDeps,
  opts: VerifyOptions,
  result: MediaSweepResult,
): Promise<Required<Pick<AccountContext, 'sweepKeep' | 'sweep'>>> {
  const run = await openDeletions(deps, {
    by: 'media sweep',
    ...(opts.force ? { force: true } : {}),
    forceWith: 'feedmirror media sweep --force',
  });
  if (run.refusal) result.storageRefused = run.refusal;
  return {
    sweepKeep: (accountId) => {
      result.accounts++;
      return mediaSweepKeep(deps.db, accountId);
    },
    sweep: async (accountId, total, candidates) => {
      const r = await removeSweptMedia(deps, run, accountId, total, candidates);
      result.removedMedia += r.removedMedia;
      result.held += r.held;
      result.refused += r.refused;
      return { deleted: new Set(r.deleted), removedMedia: r.removedMedia };
    },
  };
}

// ---- the repair --------------------------------------------------------------------------------

const OBJECT_KINDS = new Set<ProblemKind>(['object-missing', 'object-size', 'object-type']);
const FEED_KINDS = new Set<ProblemKind>(['feed-missing', 'feed-invalid', 'feed-stale', 'object-foreign']);

async function repair(deps: VerifyDeps, opts: VerifyOptions, found: CheckResult): Promise<RepairAction[]> {
  const done: RepairAction[] = [];
  const failed = (accountId: string | undefined, key: string | undefined, what: string, err: unknown) =>
    done.push({
      kind: 'repair-failed',
      ...(accountId ? { accountId } : {}),
      ...(key ? { key } : {}),
      detail: `${what}: ${redactText(err instanceof Error ? err.message : String(err))}`,
    });

  // The marker first, while a wiped storage is still empty: claimed as a worker's start claims it
  // (a storage with nothing under media/, or one holding this deployment's feeds as recorded).
  if (found.ownership?.kind === 'storage-unclaimed') {
    try {
      const o = await claimStorage(deps);
      if (o.claimed)
        done.push({
          kind: 'claimed',
          key: DEPLOYMENT_MARKER_KEY,
          detail: `the deployment marker written again, since ${claimedBecause(o.claimed)}`,
        });
      else
        failed(
          undefined,
          DEPLOYMENT_MARKER_KEY,
          'could not write the deployment marker',
          new Error(`${ownershipNotice(o).line} -> ${ownershipNotice(o).fix}`),
        );
    } catch (err) {
      failed(undefined, DEPLOYMENT_MARKER_KEY, 'could not write the deployment marker', err);
    }
  }

  // Schedules: as connect and remove set them.
  const seen = new Set<string>();
  for (const d of found.schedules) {
    const id = `${d.kind === 'stray' ? 'stray' : 'set'}:${d.accountId}`;
    if (seen.has(id)) continue;
    seen.add(id);
    try {
      await deps.schedules!.repair(d);
      done.push({
        kind: d.kind === 'stray' ? 'unscheduled' : 'rescheduled',
        accountId: d.accountId,
        key: d.schedulerId,
        detail: d.kind === 'stray' ? 'its schedules stopped' : 'its schedules set again',
      });
    } catch (err) {
      failed(d.accountId, d.schedulerId, 'could not repair the schedule', err);
    }
  }

  const byAccount = new Map<string, Problem[]>();
  for (const p of found.problems) {
    if (!p.accountId) continue;
    if (!byAccount.has(p.accountId)) byAccount.set(p.accountId, []);
    byAccount.get(p.accountId)!.push(p);
  }
  let accountsDone = 0;
  let deletions: DeletionRun | undefined;
  for (const [accountId, problems] of byAccount) {
    const f = found.accounts.get(accountId);
    if (!f) continue;
    // 1. Copies whose objects are missing or damaged: copied again, as a sync's copy job does,
    //    from links renewed first (the stored ones are likely dead by now, R-LNK-3, R-MED-8).
    const slots = new Map<string, Set<string>>(); // mediaId -> slots
    for (const p of problems) {
      if (!OBJECT_KINDS.has(p.kind) || !p.key) continue;
      const copy = f.copies.find((c) => c.key === p.key || c.variants.some((v) => v.key === p.key));
      if (!copy) continue; // not a recorded copy: the republish below drops it from the feed
      if (!slots.has(copy.mediaId)) slots.set(copy.mediaId, new Set());
      slots.get(copy.mediaId)!.add(copy.slot);
    }
    let recopied = 0;
    for (const [mediaId, slotNames] of slots) {
      try {
        const stored = await getPost(deps.db, accountId, mediaId);
        if (!stored) continue; // pruned meanwhile: the republish drops it
        await renewPostLinks(deps, accountId, mediaId, stored.post);
        for (const slot of slotNames) {
          const r = await copySlot(deps, { accountId, mediaId, slot }, { force: true });
          if (r.outcome === 'copied' || r.outcome === 'reused') {
            recopied++;
            done.push({
              kind: 'recopied',
              accountId,
              key: r.image.key,
              detail: `post ${mediaId} ${slot} copied again`,
            });
          }
        }
      } catch (err) {
        failed(accountId, undefined, `could not copy post ${mediaId} again`, err);
      }
    }
    // 2. The feed: published again from the database, as the sync's publish job does.
    if (recopied > 0 || problems.some((p) => FEED_KINDS.has(p.kind) || OBJECT_KINDS.has(p.kind))) {
      try {
        if (f.demo) {
          await publishDemoFeedIfNone(deps, accountId);
          done.push({ kind: 'republished', accountId, key: feedKey(accountId), detail: 'the demo feed put back' });
        } else {
          // No listing was read: complete false, as `media rebuild` publishes. Rewritten even when
          // the publication row matches: the object in storage is what disagrees.
          const out = await publishAccountFeed(deps, accountId, { complete: false, rewrite: true });
          done.push({
            kind: 'republished',
            accountId,
            key: feedKey(accountId),
            detail: `feed ${out.outcome}${'postCount' in out ? ` (${out.postCount} posts)` : ''}`,
          });
        }
      } catch (err) {
        failed(accountId, feedKey(accountId), 'could not publish the feed again', err);
      }
    }
    // 3. Orphans past the grace period: the only thing verify ever deletes, through the deletion
    //    guard (R-DEL-1..4), each looked at again right before its delete.
    if (f.orphans.length > 0)
      try {
        deletions ??= await openDeletions(deps, {
          by: 'verify --repair',
          forceWith: 'feedmirror verify --repair --force',
          ...(opts.force ? { force: true } : {}),
        });
        done.push(
          ...(await deleteOrphans(deps, deletions, accountId, f.orphans, {
            total: f.counts.storedObjects,
            graceMs: opts.orphanGraceMs ?? DEFAULT_ORPHAN_GRACE_MS,
            now: () => deps.clock.now(),
            forceWith: `feedmirror verify --account ${accountId} --repair --force`,
          })),
        );
      } catch (err) {
        failed(accountId, undefined, 'could not delete the orphans', err);
      }
    opts.onProgress?.({
      accountsDone: ++accountsDone,
      accounts: byAccount.size,
      objects: found.counts.objects,
      phase: 'repair',
    });
  }
  // 4. Widgets, after the feeds they are built from were published again.
  if (deps.widgets && found.widgets.length > 0) done.push(...(await repairWidgets(deps.widgets, found.widgets)));
  // 5. Status documents: written again (PUBLISH_STATUS on), or deleted (off, or the account gone).
  if (deps.publishStatus !== undefined && found.status.length > 0)
    done.push(...(await repairStatus(deps, deps.publishStatus, found.status)));
  // 6. The widget script every embed loads.
  if (deps.widgets && found.widgetScript.length > 0) done.push(await repairWidgetScript(deps.widgets.storage));
  return done;
}
