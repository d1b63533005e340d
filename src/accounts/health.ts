import { DAY, HOUR, MINUTE, daysLeft } from '../util/clock.ts';
import type { ErrorKind } from '../util/error-kinds.ts';
import { redactText } from '../util/redact.ts';
import { maskEmail } from './owner-contact.ts';
import type { Db } from '../store/db.ts';
import { versionAvailability } from '../platform/versions.ts';
import { DEFAULT_APP, type AppFaultKind } from '../store/apps.ts';
import { loadHealthFacts, type StoredHealthFacts } from '../store/health-facts.ts';
import { getRemovalHold, listRemovalHolds } from '../store/holds.ts';

/**
 * One health per account: a verdict (ok, warn, fail) and its reasons, computed from facts that
 * PostgreSQL holds (src/store/health-facts.ts gathers them for one account or all in a fixed
 * number of queries). Pure: the dashboard, `accounts list`, /metrics and `doctor` all call
 * accountHealth on the same facts, so they can never disagree.
 *
 *  - fail: the published feed is wrong or will go stale without someone acting (the owner must
 *    log in, copies gave up so posts are withheld, an image it points at is missing from storage,
 *    nothing synced for too long).
 *  - warn: degraded, and feedmirror retries on its own (a copy retrying, a rate limit, an
 *    incomplete listing, a token under 14 days, a failing webhook); look if it lasts.
 *  - ok: nothing to report. Never ok while a copy fails, a post is withheld or the last sync
 *    failed (R-HLT-2).
 * Only what the platform or the account's own data caused is recorded against an account: a
 * failure of this deployment (Redis, PostgreSQL or storage unreachable, a key that opens no token)
 * is not (src/util/error-kinds.ts localFailure), so it never turns an account's health.
 */
export const VERDICTS = ['ok', 'warn', 'fail'] as const;
export type Verdict = (typeof VERDICTS)[number];

/** Every reason's stable kind (README "Account health" says what each means and what to do). */
export const HEALTH_REASON_KINDS = [
  'reauth_required',
  'token_missing',
  'token_expired',
  'token_expiring',
  'token_refresh_failing',
  'never_synced',
  'sync_stale',
  'sync_failed',
  'sync_rate_limited',
  'sync_incomplete',
  'items_skipped',
  'copies_failing',
  'images_missing',
  'videos_over_cap',
  'posts_withheld',
  'feed_not_published',
  'removal_held',
  'webhooks_failing',
  'api_version_ending',
  'app_fault',
] as const;
export type HealthReasonKind = (typeof HEALTH_REASON_KINDS)[number];

export interface HealthReason {
  kind: HealthReasonKind;
  level: Exclude<Verdict, 'ok'>;
  /** One line for an operator: what is wrong and what to do. Redacted. */
  text: string;
}

export interface AccountHealth {
  verdict: Verdict;
  /** fail before warn; empty when ok. */
  reasons: HealthReason[];
}

/** One failing copy, the most recent of the account (shown as an example in the reason). */
export interface CopyFailureFact {
  mediaId: string;
  slot: string;
  errorKind: ErrorKind;
  error: string;
}

/** A copy whose object a published feed points at and storage lacks (the one found first). */
export interface MissingObjectFact {
  mediaId: string;
  slot: string;
  /** The storage key found missing: the original or one of its sizes. */
  key: string;
  /** What found it: 'verify'. */
  foundBy: string;
  foundAt: Date;
}

/** A webhook endpoint whose latest delivery of one of this account's events did not go through. */
export interface FailingEndpointFact {
  endpointId: string;
  /** failed: no retry left; retrying: an attempt failed and another is scheduled. */
  state: 'failed' | 'retrying';
  lastHttpStatus: number | null;
  lastError: string | null;
  lastAttemptAt: Date | null;
}

/** A listing that would remove more than half the feed, held until a second listing agrees (R-OWN-7). */
export interface RemovalHoldFact {
  since: Date;
  /** Posts it would remove. */
  removing: number;
  /** Posts in the published feed it would shrink. */
  publishedPosts: number;
}

/** What the health of one account is computed from. */
export interface HealthFacts {
  accountId: string;
  status: 'active' | 'reauth_required';
  statusReason: string | null;
  statusReasonKind: ErrorKind | null;
  createdAt: Date;
  token: {
    present: boolean;
    expiresAt: Date | null;
    refreshFailures: number;
    lastRefreshError: string | null;
    lastRefreshErrorKind: ErrorKind | null;
  };
  sync: {
    lastAt: Date | null;
    /** null before the first sync. */
    outcome: 'complete' | 'incomplete' | 'failed' | null;
    error: string | null;
    errorKind: ErrorKind | null;
    lastCompleteAt: Date | null;
    skippedItems: number;
  };
  copies: {
    /** Slots of stored posts whose copy is failing. */
    failing: number;
    /** Of those, the ones whose job gave up (the next sync tries again). */
    gaveUp: number;
    latest: CopyFailureFact | null;
    /** Stored posts not published: their cover has no copy yet. */
    waitingPosts: number;
    /** When the oldest of them was first read. */
    oldestWaitingSince: Date | null;
  };
  /**
   * Video files left platform links because of VIDEO_MAX_BYTES ('file') or
   * VIDEO_MAX_BYTES_PER_ACCOUNT ('account'), and the limits they met. Absent: none (callers
   * without video mirroring).
   */
  videosOverCap?: { file: number; account: number; fileLimit: number | null; accountLimit: number | null };
  /** Copies of stored posts whose objects are missing from storage, until they are copied again. */
  missingObjects: { count: number; first: MissingObjectFact | null };
  publication: { publishedAt: Date; postCount: number; demo: boolean } | null;
  webhooks: FailingEndpointFact[];
  /** Absent when the caller has no removal holds to report. */
  removalHold?: RemovalHoldFact | null;
  /** The owner's address (masked in the reasons, which doctor's line takes into logs), or null. */
  ownerEmail: string | null;
  /** The account's newest reconnect link (R-OWN-12: only the newest can work), or null. */
  reconnectLink: ReconnectLinkFact | null;
  /**
   * The app the account connects through (null or absent: the default app) and what the platform
   * last said against the app itself (a refused secret, a restriction), kept on the app's row.
   */
  app?: AppFact | null;
}

export interface AppFact {
  name: string;
  fault: { kind: AppFaultKind; message: string; at: Date } | null;
}

/** The newest reconnect link of an account: how it went out, when, until when, and whether spent. */
export interface ReconnectLinkFact {
  /** email: sent to the owner (an alert, or the operator's resend); copy: shown to the operator to pass on. */
  delivery: 'email' | 'copy';
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
  revokedAt: Date | null;
}

export interface HealthPolicy {
  now: Date;
  /** SYNC_INTERVAL_MINUTES, in ms: how fresh a feed is expected to be. */
  syncIntervalMs: number;
  /**
   * R-MED-13: the pinned API version (GRAPH_API_VERSION) and how many days before its end of
   * availability to warn (PLATFORM_VERSION_WARN_DAYS). Every account's data calls go through it,
   * so every account that syncs says so; absent, nothing is said.
   */
  apiVersion?: { version: string; warnDays: number };
}

/** R-TOK-9: the operator hears of a token under 14 days; under 3 the feed is days from stopping. */
export const TOKEN_WARN_DAYS = 14;
export const TOKEN_FAIL_DAYS = 3;
/** A post waiting this long for its images is withheld, not in transit: copies take seconds. */
export const WITHHELD_FAIL_MS = 15 * MINUTE;
/** Sync errors that feedmirror retries on its own: a warning until the feed goes stale. */
const SELF_HEALING: ReadonlySet<ErrorKind> = new Set(['rate_limit', 'network', 'platform', 'link_expired']);

/** How long without a complete listing before the account fails: two intervals and ten minutes. */
export function staleAfterMs(syncIntervalMs: number): number {
  return 2 * syncIntervalMs + 10 * MINUTE;
}

const at = (d: Date) => `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;

/** "3 min", "5 h", "2 days": how long ago, in the largest whole unit. */
export function ago(ms: number): string {
  if (ms < HOUR) return `${Math.max(0, Math.floor(ms / MINUTE))} min`;
  if (ms < 2 * DAY) return `${Math.floor(ms / HOUR)} h`;
  return `${Math.floor(ms / DAY)} days`;
}

/** Bytes as an operator reads a cap: "100 MiB", "2 GiB". */
const mib = (n: number) =>
  n >= 1024 ** 3 && n % 1024 ** 3 === 0 ? `${n / 1024 ** 3} GiB` : `${Math.round((n / 1024 ** 2) * 10) / 10} MiB`;
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
/**
 * Text from elsewhere (an error, a platform message) in a reason: redacted, one line, bounded, and
 * without backticks, which in a reason mark only the commands it names (reasonParts).
 */
const clip = (s: string, n = 200) => {
  const r = redactText(s).replace(/`/g, "'").replace(/\s+/g, ' ').trim();
  return r.length > n ? `${r.slice(0, n - 1)}…` : r;
};

/**
 * A reason's text in parts: plain words, and the commands it names (written between backticks,
 * as `accounts list` and doctor print them). The dashboard sets the commands as code instead of
 * showing backticks; a lone backtick (none is written) reads as plain text.
 */
export function reasonParts(text: string): Array<{ text: string; command: boolean }> {
  const pieces = text.split('`');
  const balanced = pieces.length % 2 === 1;
  const parts: Array<{ text: string; command: boolean }> = [];
  pieces.forEach((p, i) => {
    const command = i % 2 === 1 && (balanced || i < pieces.length - 1);
    if (p) parts.push({ text: p, command });
  });
  return parts;
}

/**
 * R-TOK-10, R-OWN-12: what is true of an account waiting for its owner: the owner was emailed a
 * reconnect link (when, until when), one was made for the operator to pass on, or none is out
 * (the last one expired, was used or revoked) and how to send one. Never advice to do what was
 * done already.
 */
function reauthText(f: HealthFacts, now: Date): string {
  const cause = f.statusReason ? ` (${clip(f.statusReason, 160)})` : '';
  const owner = f.ownerEmail ? `the owner (${maskEmail(f.ownerEmail)})` : 'the owner';
  const l = f.reconnectLink;
  const live = l !== null && !l.usedAt && !l.revokedAt;
  let next: string;
  if (live && l.expiresAt.getTime() > now.getTime())
    next =
      l.delivery === 'email'
        ? `${owner} was emailed a reconnect link on ${at(l.createdAt)}, valid until ${at(l.expiresAt)}`
        : `a reconnect link made on ${at(l.createdAt)} for you to pass on is valid until ${at(l.expiresAt)}`;
  else {
    const expired = live
      ? `the reconnect link ${l.delivery === 'email' ? `emailed to ${owner}` : 'made for you to pass on'} on ${at(l.createdAt)} expired on ${at(l.expiresAt)}; `
      : '';
    // Without a recorded owner nobody can be emailed: the CLI makes a link to copy.
    const cli = `feedmirror accounts reconnect-link ${f.accountId}${f.ownerEmail ? ' --send' : ''}`;
    next = `${expired}no link is out: send one (dashboard: the account's page; CLI: \`${cli}\`)`;
  }
  return `the owner must connect the account again${cause}; ${next}`;
}

/** The verdict and reasons of one account (R-HLT-1, R-HLT-2). */
export function accountHealth(f: HealthFacts, p: HealthPolicy): AccountHealth {
  const reasons: HealthReason[] = [];
  const add = (kind: HealthReasonKind, level: HealthReason['level'], text: string) =>
    reasons.push({ kind, level, text });
  const now = p.now.getTime();
  const active = f.status === 'active';

  // ---- token (R-TOK-9, R-TOK-10) ----
  if (!active) add('reauth_required', 'fail', reauthText(f, p.now));
  if (!f.token.present) add('token_missing', 'fail', 'no token is stored: connect the account again');
  else if (f.token.expiresAt) {
    const left = daysLeft(f.token.expiresAt, p.now);
    if (left < 0)
      add('token_expired', 'fail', `the token expired on ${at(f.token.expiresAt)}: the owner must connect again`);
    else if (left < TOKEN_WARN_DAYS)
      add(
        'token_expiring',
        left < TOKEN_FAIL_DAYS ? 'fail' : 'warn',
        `the token expires in ${plural(left, 'day')} (${at(f.token.expiresAt)}) and was not renewed: run \`feedmirror refresh ${f.accountId}\`, or ask the owner to connect again`,
      );
  }
  if (
    f.token.present &&
    f.token.refreshFailures > 0 &&
    f.token.lastRefreshError &&
    f.token.lastRefreshErrorKind !== 'token_too_young'
  )
    add(
      'token_refresh_failing',
      'warn',
      `the last ${plural(f.token.refreshFailures, 'token renewal')} failed${f.token.lastRefreshErrorKind ? ` (${f.token.lastRefreshErrorKind.replace(/_/g, ' ')})` : ''}: ${clip(f.token.lastRefreshError, 160)}`,
    );

  // ---- the app, when the cause is the app and not the account (one app per client) ----
  const appFault = appFaultText(f);
  if (appFault) add('app_fault', 'fail', appFault);

  // ---- last sync ----
  const syncs = active && f.token.present; // otherwise nothing syncs, by design (R-TOK-10)
  if (syncs) {
    const reference = f.sync.lastCompleteAt ?? f.createdAt;
    const stale = now - reference.getTime() > staleAfterMs(p.syncIntervalMs);
    if (stale)
      add(
        'sync_stale',
        'fail',
        f.sync.lastCompleteAt
          ? `no complete sync for ${ago(now - f.sync.lastCompleteAt.getTime())} (one is due every ${ago(p.syncIntervalMs)}): is \`feedmirror worker\` running?`
          : `never synced completely since it was connected ${ago(now - f.createdAt.getTime())} ago: is \`feedmirror worker\` running?`,
      );
    else if (!f.sync.lastAt) add('never_synced', 'warn', 'not synced yet: the first sync is queued');
  }
  if (f.sync.lastAt && f.sync.outcome !== 'complete' && f.sync.error) {
    const kind = f.sync.errorKind;
    const what = `${kind ? `${kind.replace(/_/g, ' ')}: ` : ''}${clip(f.sync.error, 160)}`;
    if (kind === 'rate_limit')
      add(
        'sync_rate_limited',
        'warn',
        `the last sync (${at(f.sync.lastAt)}) met a rate limit; it is retried after the wait`,
      );
    else if (f.sync.outcome === 'incomplete')
      add(
        'sync_incomplete',
        kind && !SELF_HEALING.has(kind) ? 'fail' : 'warn',
        `the last listing (${at(f.sync.lastAt)}) stopped early, nothing was removed: ${what}`,
      );
    else if (active)
      add(
        'sync_failed',
        kind && SELF_HEALING.has(kind) ? 'warn' : 'fail',
        `the last sync (${at(f.sync.lastAt)}) failed: ${what}`,
      );
  }
  if (f.sync.skippedItems > 0)
    add(
      'items_skipped',
      'warn',
      `the last sync skipped ${plural(f.sync.skippedItems, 'item')} the platform sent malformed; the account page lists them`,
    );

  // ---- copies ----
  if (f.copies.failing > 0) {
    const l = f.copies.latest;
    const example = l
      ? ` (latest: ${l.mediaId} ${l.slot}: ${l.errorKind.replace(/_/g, ' ')}: ${clip(l.error, 160)})`
      : '';
    add(
      'copies_failing',
      f.copies.gaveUp > 0 ? 'fail' : 'warn',
      f.copies.gaveUp > 0
        ? `${plural(f.copies.failing, 'image copy', 'image copies')} failing, ${f.copies.gaveUp} given up until the next sync${example}`
        : `${plural(f.copies.failing, 'image copy', 'image copies')} failed and ${f.copies.failing === 1 ? 'is' : 'are'} being retried${example}`,
    );
  }
  // R-HLT-4: a feed pointing at an object storage lacks shows a broken image on every site: fail,
  // until the copy is made again (the next sync, or `sync --wait` now; a rate limit only delays it).
  if (f.missingObjects.count > 0) {
    const n = f.missingObjects.count;
    const m = f.missingObjects.first;
    const first = m ? ` (first: post ${m.mediaId} ${m.slot}, ${m.key}, found by ${m.foundBy} ${at(m.foundAt)})` : '';
    add(
      'images_missing',
      'fail',
      `${plural(n, 'image')} the published feed points at ${n === 1 ? 'is' : 'are'} missing from storage, so sites show ${n === 1 ? 'a broken image' : 'broken images'}${first}: the next sync copies ${n === 1 ? 'it' : 'them'} again (\`feedmirror sync ${f.accountId} --wait\` does it now)`,
    );
  }
  // A video over a cap keeps its platform link (the feed works while the link lives, and the
  // visitor's browser asks the platform for it): a warning that says which cap, never silence.
  const oc = f.videosOverCap;
  if (oc && oc.file + oc.account > 0) {
    const parts = [
      oc.file > 0 ? `${plural(oc.file, 'video')} larger than VIDEO_MAX_BYTES (${mib(oc.fileLimit ?? 0)})` : '',
      oc.account > 0
        ? `${plural(oc.account, 'video')} past the account's VIDEO_MAX_BYTES_PER_ACCOUNT (${mib(oc.accountLimit ?? 0)})`
        : '',
    ].filter(Boolean);
    add(
      'videos_over_cap',
      'warn',
      `${parts.join(' and ')} not mirrored: ${oc.file + oc.account === 1 ? 'it plays' : 'they play'} from the platform's signed link${oc.file + oc.account === 1 ? '' : 's'}, so visitors' browsers ask the platform; raise the cap to mirror ${oc.file + oc.account === 1 ? 'it' : 'them'}`,
    );
  }
  if (f.copies.waitingPosts > 0) {
    const since = f.copies.oldestWaitingSince;
    const waited = since ? now - since.getTime() : 0;
    add(
      'posts_withheld',
      waited >= WITHHELD_FAIL_MS ? 'fail' : 'warn',
      `${plural(f.copies.waitingPosts, 'post')} stored but not published: ${f.copies.waitingPosts === 1 ? 'its' : 'their'} images are not copied yet${since ? ` (oldest waiting ${ago(waited)})` : ''}`,
    );
  }

  // ---- publication ----
  if (f.sync.lastCompleteAt && (!f.publication || f.publication.demo))
    add(
      'feed_not_published',
      'fail',
      `a complete listing was read (${at(f.sync.lastCompleteAt)}) but ${f.publication ? 'the published feed is still the demo feed' : 'no feed is published'}: check the publish-feed jobs (Queues) and storage`,
    );
  if (f.removalHold)
    add(
      'removal_held',
      'warn',
      `a listing would remove ${f.removalHold.removing} of the feed's ${f.removalHold.publishedPosts} posts: held since ${at(f.removalHold.since)} until a second complete listing an hour later agrees (R-OWN-7), or you confirm it (\`feedmirror feeds confirm-removal ${f.accountId}\` or the account page)`,
    );

  // ---- webhooks ----
  if (f.webhooks.length > 0) {
    const shown = f.webhooks
      .slice(0, 3)
      .map(
        (e) =>
          `${e.endpointId} ${e.state}${e.lastHttpStatus !== null ? ` (HTTP ${e.lastHttpStatus})` : e.lastError ? ` (${clip(e.lastError, 80)})` : ''}`,
      )
      .join(', ');
    add(
      'webhooks_failing',
      'warn',
      `${plural(f.webhooks.length, 'webhook endpoint')} did not take this account's last event: ${shown}`,
    );
  }

  // ---- the pinned API version (R-MED-13) ----
  if (syncs && p.apiVersion) {
    const v = versionAvailability(p.apiVersion.version, p.now, p.apiVersion.warnDays);
    if (v.level !== 'ok') add('api_version_ending', v.level, v.text);
  }

  reasons.sort((a, b) => (a.level === b.level ? 0 : a.level === 'fail' ? -1 : 1));
  const verdict: Verdict = reasons.some((r) => r.level === 'fail') ? 'fail' : reasons.length ? 'warn' : 'ok';
  return { verdict, reasons };
}

const APP_FAULT_KINDS: ReadonlySet<ErrorKind> = new Set<AppFaultKind>(['app_secret_refused', 'app_restricted']);

/**
 * The app's fault, naming the app and the fix. A named app's fault is on its row (recorded once,
 * cleared when the app works again); the default app has no row, so its fault is read from the
 * account's own last sync or renewal error.
 */
function appFaultText(f: HealthFacts): string | null {
  const name = f.app?.name ?? DEFAULT_APP;
  const ownKind = [f.sync.errorKind, f.token.lastRefreshErrorKind].find((k) => k !== null && APP_FAULT_KINDS.has(k));
  const fault: { kind: AppFaultKind; at: Date | null } | null =
    f.app?.fault ?? (name === DEFAULT_APP && ownKind ? { kind: ownKind as AppFaultKind, at: f.sync.lastAt } : null);
  if (!fault) return null;
  const since = fault.at ? ` since ${at(fault.at)}` : '';
  if (fault.kind === 'app_secret_refused')
    return name === DEFAULT_APP
      ? `the platform refuses the secret of the default app${since}: every account of the app stops syncing; set APP_SECRET to the app's current secret and restart feedmirror`
      : `the platform refuses the secret of app ${name}${since}: every account of the app stops syncing; give it the app's current secret with \`feedmirror apps set ${name} --secret-file FILE\``;
  return `the platform restricted app ${name}${since}: none of its accounts can be read; fix the app in the platform's developer settings (the other apps' accounts are not affected)`;
}

/** "ok", or "fail: <first reason>; <second reason> (+2 more)": one line for lists and logs. */
export function healthLine(h: AccountHealth, shown = 2): string {
  if (h.verdict === 'ok') return 'ok';
  const more = h.reasons.length > shown ? ` (+${h.reasons.length - shown} more)` : '';
  return `${h.verdict}: ${h.reasons
    .slice(0, shown)
    .map((r) => r.text)
    .join('; ')}${more}`;
}

/** Accounts counted by verdict (every verdict present, zero included). */
export function countByVerdict(list: ReadonlyArray<{ health: AccountHealth }>): Record<Verdict, number> {
  const out: Record<Verdict, number> = { ok: 0, warn: 0, fail: 0 };
  for (const a of list) out[a.health.verdict]++;
  return out;
}

/** Worst first: fail, then warn, then ok; more reasons first within a verdict. */
export function byConcern<T extends { health: AccountHealth }>(a: T, b: T): number {
  const rank = (v: Verdict) => VERDICTS.indexOf(v);
  return rank(b.health.verdict) - rank(a.health.verdict) || b.health.reasons.length - a.health.reasons.length;
}

export interface AccountWithHealth {
  facts: StoredHealthFacts & Pick<HealthFacts, 'removalHold'>;
  health: AccountHealth;
}

/**
 * The health of every account (ordered by username), or of one: the facts read in a fixed number
 * of queries (src/store/health-facts.ts), then accountHealth on each. What every surface calls.
 */
export async function loadAccountHealth(
  db: Db,
  policy: HealthPolicy,
  opts: { accountId?: string } = {},
): Promise<AccountWithHealth[]> {
  const [facts, holds] = await Promise.all([
    loadHealthFacts(db, opts),
    opts.accountId
      ? getRemovalHold(db, opts.accountId).then((h) => new Map(h ? [[h.accountId, h]] : []))
      : listRemovalHolds(db),
  ]);
  return facts.map((f) => {
    const hold = holds.get(f.accountId);
    const withHold = {
      ...f,
      removalHold: hold
        ? { since: hold.since, removing: hold.removing.length, publishedPosts: hold.publishedPosts }
        : null,
    };
    return { facts: withHold, health: accountHealth(withHold, policy) };
  });
}

/** The health of each account, by id (for lists that already hold the accounts). */
export async function healthById(db: Db, policy: HealthPolicy): Promise<Map<string, AccountHealth>> {
  return new Map((await loadAccountHealth(db, policy)).map((a) => [a.facts.accountId, a.health]));
}
