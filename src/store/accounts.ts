import { daysLeft } from '../util/clock.ts';
import type { ErrorKind } from '../util/error-kinds.ts';
import { redactText } from '../util/redact.ts';
import { withTransaction, type Db } from './db.ts';
import { recordTokenEvent } from './events.ts';
import { ownerOfRow, type AccountOwner } from './owners.ts';

export const ACCOUNT_STATUSES = ['active', 'reauth_required'] as const;
export type AccountStatus = (typeof ACCOUNT_STATUSES)[number];

export interface Account {
  /** The platform's user id. */
  id: string;
  username: string;
  displayName: string | null;
  avatarUrl: string | null;
  accountType: string | null;
  status: AccountStatus;
  statusReason: string | null;
  statusReasonKind: ErrorKind | null;
  /** Optional media fields this account refuses (R-MED-4). */
  refusedFields: string[];
  createdAt: Date;
  updatedAt: Date;
  lastSyncAt: Date | null;
  /** Why the last sync failed or stopped early (redacted); null when it succeeded. */
  lastSyncError: string | null;
  lastSyncErrorKind: ErrorKind | null;
  /** Items the last sync could not use and left out (the rest was published). */
  skippedItems: number;
  /** The last reasons, at most SKIPPED_REASONS_KEPT. */
  skippedReasons: SkippedItem[];
  /** How the last sync ended; null before the first. */
  lastSyncOutcome: SyncOutcomeRecorded | null;
  /** When a listing last read to its end: what the published feed is as fresh as. */
  lastCompleteSyncAt: Date | null;
  /** Who is told when the connection needs them; null: no owner known (alerts go to the operator). */
  owner: AccountOwner | null;
  /** The platform app it is connected through (feedmirror's name); null: the default app (APP_ID). */
  app?: string | null;
}

/** An item a sync left out, and why (a malformed id, no timestamp, an unknown type...). */
export interface SkippedItem {
  id: string;
  reason: string;
}
export const SKIPPED_REASONS_KEPT = 20;

/** An account with its token's expiry (never the token). */
export interface AccountWithExpiry extends Account {
  hasToken: boolean;
  expiresAt: Date | null;
  obtainedAt: Date | null;
  /** Whole days left at the given now (floor), negative once expired; null without a token. */
  daysLeft: number | null;
  refreshFailures: number;
  lastRefreshError: string | null;
  lastRefreshErrorKind: ErrorKind | null;
  lastRefreshAttemptAt: Date | null;
}

export interface AccountProfile {
  id: string;
  username: string;
  displayName?: string | null;
  avatarUrl?: string | null;
  accountType?: string | null;
}

export interface AccountRow {
  id: string;
  username: string;
  display_name: string | null;
  avatar_url: string | null;
  account_type: string | null;
  status: AccountStatus;
  status_reason: string | null;
  status_reason_kind: ErrorKind | null;
  refused_fields: string[];
  created_at: Date;
  updated_at: Date;
  last_sync_at: Date | null;
  last_sync_error: string | null;
  last_sync_error_kind: ErrorKind | null;
  skipped_items: number;
  skipped_reasons: SkippedItem[];
  last_sync_outcome: SyncOutcomeRecorded | null;
  last_complete_sync_at: Date | null;
  owner_name?: string | null;
  owner_email?: string | null;
  owner_language?: string | null;
  owner_alerts?: boolean;
  app_name?: string | null;
}

export function toAccount(r: AccountRow): Account {
  return {
    id: r.id,
    username: r.username,
    displayName: r.display_name,
    avatarUrl: r.avatar_url,
    accountType: r.account_type,
    status: r.status,
    statusReason: r.status_reason,
    statusReasonKind: r.status_reason_kind,
    refusedFields: r.refused_fields,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    lastSyncAt: r.last_sync_at,
    lastSyncError: r.last_sync_error,
    lastSyncErrorKind: r.last_sync_error_kind,
    skippedItems: r.skipped_items,
    skippedReasons: r.skipped_reasons,
    lastSyncOutcome: r.last_sync_outcome ?? null,
    lastCompleteSyncAt: r.last_complete_sync_at ?? null,
    owner: ownerOfRow(r),
    app: r.app_name ?? null,
  };
}

/**
 * Create or update an account from its profile (R-OWN-5). A reconnect keeps status and history;
 * fields not given (undefined) are left as they are, null clears them.
 */
export async function upsertAccount(db: Db, p: AccountProfile, at: Date): Promise<Account> {
  const { rows } = await db.query<AccountRow>(
    `INSERT INTO accounts (id, username, display_name, avatar_url, account_type, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $6)
     ON CONFLICT (id) DO UPDATE SET
       username = EXCLUDED.username,
       display_name = CASE WHEN $7 THEN EXCLUDED.display_name ELSE accounts.display_name END,
       avatar_url   = CASE WHEN $8 THEN EXCLUDED.avatar_url   ELSE accounts.avatar_url END,
       account_type = CASE WHEN $9 THEN EXCLUDED.account_type ELSE accounts.account_type END,
       updated_at = EXCLUDED.updated_at
     RETURNING *`,
    [
      p.id,
      p.username,
      p.displayName ?? null,
      p.avatarUrl ?? null,
      p.accountType ?? null,
      at,
      p.displayName !== undefined,
      p.avatarUrl !== undefined,
      p.accountType !== undefined,
    ],
  );
  return toAccount(rows[0]!);
}

export async function getAccount(db: Db, id: string): Promise<Account | null> {
  const { rows } = await db.query<AccountRow>('SELECT * FROM accounts WHERE id = $1', [id]);
  return rows[0] ? toAccount(rows[0]) : null;
}

/** Which of these ids are accounts (verify: a status document whose account is gone; a widget's sources). */
export async function existingAccountIds(db: Db, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await db.query<{ id: string }>('SELECT id FROM accounts WHERE id = ANY($1::text[])', [ids]);
  return new Set(rows.map((r) => r.id));
}

/**
 * Ids of the accounts that are scheduled: active, with a token. Ids only: the worker's start and
 * the reconciler need nothing else, and every account's full row (with its last errors and
 * skipped items) held at once would set the worker's memory peak.
 */
export async function listScheduledAccountIds(db: Db): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT a.id FROM accounts a JOIN tokens t ON t.account_id = a.id WHERE a.status = 'active' ORDER BY a.id`,
  );
  return rows.map((r) => r.id);
}

type AccountWithExpiryRow = AccountRow & {
  expires_at: Date | null;
  obtained_at: Date | null;
  refresh_failures: number | null;
  last_refresh_error: string | null;
  last_refresh_error_kind: ErrorKind | null;
  last_refresh_attempt_at: Date | null;
  has_token: boolean;
};

export interface AccountFilter {
  status?: AccountStatus;
  /** Only accounts holding a token (the expiry sweep's). */
  withTokenOnly?: boolean;
}

const WITH_EXPIRY = (opts: AccountFilter): string =>
  `SELECT a.*, t.expires_at, t.obtained_at, t.refresh_failures, t.last_refresh_error, t.last_refresh_error_kind,
          t.last_refresh_attempt_at, (t.account_id IS NOT NULL) AS has_token
     FROM accounts a ${opts.withTokenOnly ? 'JOIN' : 'LEFT JOIN'} tokens t ON t.account_id = a.id
    WHERE ($1::text IS NULL OR a.status = $1)`;

function withExpiry(r: AccountWithExpiryRow, now: Date): AccountWithExpiry {
  return {
    ...toAccount(r),
    hasToken: r.has_token,
    expiresAt: r.expires_at,
    obtainedAt: r.obtained_at,
    daysLeft: r.expires_at ? daysLeft(r.expires_at, now) : null,
    refreshFailures: r.refresh_failures ?? 0,
    lastRefreshError: r.last_refresh_error,
    lastRefreshErrorKind: r.last_refresh_error_kind,
    lastRefreshAttemptAt: r.last_refresh_attempt_at,
  };
}

/**
 * Every account (ordered by username) with its token's expiry and days left at `now`, in one
 * array: for what shows them all (the dashboard, `accounts list`). A job that visits every account
 * uses eachAccount instead.
 */
export async function listAccounts(db: Db, now: Date, opts: AccountFilter = {}): Promise<AccountWithExpiry[]> {
  const { rows } = await db.query<AccountWithExpiryRow>(`${WITH_EXPIRY(opts)} ORDER BY a.username, a.id`, [
    opts.status ?? null,
  ]);
  return rows.map((r) => withExpiry(r, now));
}

/** How many accounts there are (what a run over eachAccount reports its progress against). */
export async function countAccounts(db: Db): Promise<number> {
  const { rows } = await db.query<{ n: string }>('SELECT count(*) AS n FROM accounts');
  return Number(rows[0]!.n);
}

/** Accounts read per query by eachAccount. */
export const ACCOUNT_PAGE = 500;

/**
 * Every account as listAccounts gives it, a page at a time in id order (keyset: an account added
 * or removed meanwhile neither repeats nor hides another). The daily sweeps visit every account
 * through this: every row read at once would be held in the worker's heap for the length of the
 * sweep, growing with the number of accounts (docs/capacity.md); a page's stays small.
 */
export async function* eachAccount(
  db: Db,
  now: Date,
  opts: AccountFilter & { pageSize?: number; keyOrder?: boolean } = {},
): AsyncGenerator<AccountWithExpiry> {
  const pageSize = opts.pageSize ?? ACCOUNT_PAGE;
  // keyOrder: in the order a bucket lists their objects (`media/<id>/`, byte order: COLLATE "C"
  // of the id with its slash; migrations/026_key_order_indexes.sql), for a merge with a listing.
  const order = opts.keyOrder ? `(a.id || '/') COLLATE "C"` : 'a.id';
  let after = '';
  for (;;) {
    const { rows } = await db.query<AccountWithExpiryRow>(
      `${WITH_EXPIRY(opts)} AND ${order} > $2 ORDER BY ${order} LIMIT $3`,
      [opts.status ?? null, after, pageSize],
    );
    for (const r of rows) yield withExpiry(r, now);
    if (rows.length < pageSize) return;
    after = opts.keyOrder ? `${rows[rows.length - 1]!.id}/` : rows[rows.length - 1]!.id;
  }
}

/**
 * Set an account's status. With `from`, only an account currently in that status changes, so of
 * two processes making the same transition exactly one gets true (and records the event).
 * Setting 'reauth_required' records a 'reauth_required' event unless `event` says otherwise.
 */
export async function setAccountStatus(
  db: Db,
  id: string,
  status: AccountStatus,
  reason: string | null,
  opts: { at: Date; from?: AccountStatus; event?: 'reauth_required' | 'expired' | null; reasonKind?: ErrorKind | null },
): Promise<boolean> {
  return withTransaction(db, async (c) => {
    const kind = reason == null ? null : (opts.reasonKind ?? null);
    const { rows } = await c.query<{ expires_at: Date | null }>(
      `UPDATE accounts a SET status = $2, status_reason = $3, status_reason_kind = $6, updated_at = $4
        WHERE a.id = $1 AND ($5::text IS NULL OR a.status = $5)
        RETURNING (SELECT expires_at FROM tokens WHERE account_id = a.id)`,
      [id, status, reason == null ? null : redactText(reason), opts.at, opts.from ?? null, kind],
    );
    if (rows.length === 0) return false;
    const event = opts.event === undefined ? (status === 'reauth_required' ? 'reauth_required' : null) : opts.event;
    if (event)
      await recordTokenEvent(c, {
        accountId: id,
        kind: event,
        at: opts.at,
        expiresAt: rows[0]!.expires_at,
        detail: reason,
        errorKind: kind,
      });
    return true;
  });
}

export async function setRefusedFields(db: Db, id: string, fields: readonly string[], at: Date): Promise<void> {
  await db.query('UPDATE accounts SET refused_fields = $2, updated_at = $3 WHERE id = $1', [
    id,
    [...new Set(fields)].sort(),
    at,
  ]);
}

/** How a sync run ended, as the account shows it. */
export interface SyncRecord {
  /** Why it failed or stopped early (redacted here); absent or null on success. */
  error?: string | null;
  errorKind?: ErrorKind | null;
  /** Items it left out; undefined keeps what the last run recorded (a run that read nothing). */
  skipped?: readonly SkippedItem[];
  /**
   * complete: the listing reached its end; incomplete: it stopped early (nothing pruned); failed:
   * nothing was read. Default: complete without an error, failed with one.
   */
  outcome?: SyncOutcomeRecorded;
  /** Posts the listing held (its page's "last syncs"); absent when nothing was read. */
  posts?: number;
  /**
   * The listing reached its end with this many items: the base of the next listings' bound, and
   * any pause after runaway listings is over (R-NET-6). Written in the same statement as the rest
   * of the record, not in one of its own (src/store/listing-guard.ts).
   */
  completeListingItems?: number;
}
export type SyncOutcomeRecorded = 'complete' | 'incomplete' | 'failed';

/** How many sync runs each account's history keeps. */
export const SYNC_RUNS_KEPT = 20;

export interface SyncRun {
  at: Date;
  outcome: SyncOutcomeRecorded;
  errorKind: ErrorKind | null;
  error: string | null;
  posts: number | null;
  skipped: number | null;
}

/** An account's last sync runs, newest first. */
export async function listSyncRuns(db: Db, id: string, limit = SYNC_RUNS_KEPT): Promise<SyncRun[]> {
  const { rows } = await db.query<{
    at: Date;
    outcome: SyncOutcomeRecorded;
    error_kind: ErrorKind | null;
    error: string | null;
    posts: number | null;
    skipped: number | null;
  }>(
    'SELECT at, outcome, error_kind, error, posts, skipped FROM sync_runs WHERE account_id = $1 ORDER BY id DESC LIMIT $2',
    [id, limit],
  );
  return rows.map((r) => ({
    at: r.at,
    outcome: r.outcome,
    errorKind: r.error_kind,
    error: r.error,
    posts: r.posts,
    skipped: r.skipped,
  }));
}

/** Record a sync run: its time, its error and kind (or null on success), the items it skipped. */
export async function markSynced(db: Db, id: string, at: Date, record: SyncRecord = {}): Promise<void> {
  const error = record.error ? redactText(record.error).slice(0, 2000) : null;
  const skipped = record.skipped
    ?.slice(-SKIPPED_REASONS_KEPT)
    .map((s) => ({ id: s.id.slice(0, 128), reason: redactText(s.reason).slice(0, 300) }));
  const outcome = record.outcome ?? (error ? 'failed' : 'complete');
  // One statement: the account's last sync, a row in its history (sync_runs), and the history
  // cut to its latest SYNC_RUNS_KEPT (the DELETE does not see the row inserted beside it).
  await db.query(
    `WITH updated AS (
       UPDATE accounts SET last_sync_at = $2, last_sync_error = $3, last_sync_error_kind = $4,
              skipped_items = COALESCE($5, skipped_items), skipped_reasons = COALESCE($6::jsonb, skipped_reasons),
              last_sync_outcome = $7, last_complete_sync_at = CASE WHEN $7 = 'complete' THEN $2 ELSE last_complete_sync_at END,
              listing_items_last_complete = COALESCE($9::int, listing_items_last_complete),
              listing_runaways = CASE WHEN $9::int IS NULL THEN listing_runaways ELSE 0 END,
              listing_paused_until = CASE WHEN $9::int IS NULL THEN listing_paused_until END
        WHERE id = $1 RETURNING id),
     logged AS (
       INSERT INTO sync_runs (account_id, at, outcome, error_kind, error, posts, skipped)
       SELECT id, $2, $7, $4, left($3, 500), $8, $5 FROM updated)
     DELETE FROM sync_runs WHERE account_id = $1
        AND id <= (SELECT id FROM sync_runs WHERE account_id = $1 ORDER BY id DESC OFFSET ${SYNC_RUNS_KEPT - 1} LIMIT 1)`,
    [
      id,
      at,
      error,
      error ? (record.errorKind ?? 'internal') : null,
      record.skipped ? record.skipped.length : null,
      skipped ? JSON.stringify(skipped) : null,
      outcome,
      record.posts ?? null,
      record.completeListingItems ?? null,
    ],
  );
}

/** Delete the account; its token and alert records go with it (cascade), its history stays. */
export async function removeAccount(db: Db, id: string, at: Date): Promise<boolean> {
  return withTransaction(db, async (c) => {
    const { rows } = await c.query<{ expires_at: Date | null }>(
      `DELETE FROM accounts a WHERE a.id = $1 RETURNING (SELECT expires_at FROM tokens WHERE account_id = a.id)`,
      [id],
    );
    if (rows.length === 0) return false;
    await recordTokenEvent(c, { accountId: id, kind: 'removed', at, expiresAt: rows[0]!.expires_at });
    return true;
  });
}
