import type { ErrorKind } from '../util/error-kinds.ts';
import type { Db } from './db.ts';
import { unpackPost } from './post-pack.ts';
import type { AccountStatus } from './accounts.ts';
import type { ReconnectDelivery } from './owners.ts';
import type { AppFaultKind } from './apps.ts';

/**
 * What an account's health is computed from (src/accounts/health.ts), read for one account or
 * for all of them in the same six grouped queries, however many accounts there are: accounts
 * with their tokens, owners, apps (and their faults) and newest reconnect links, failing copies, copies missing from storage, posts withheld, publications,
 * and webhook endpoints whose latest delivery of the account's events did not go through.
 */
export interface StoredHealthFacts {
  accountId: string;
  username: string;
  status: AccountStatus;
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
    outcome: 'complete' | 'incomplete' | 'failed' | null;
    error: string | null;
    errorKind: ErrorKind | null;
    lastCompleteAt: Date | null;
    skippedItems: number;
  };
  copies: {
    failing: number;
    gaveUp: number;
    latest: { mediaId: string; slot: string; errorKind: ErrorKind; error: string } | null;
    waitingPosts: number;
    oldestWaitingSince: Date | null;
  };
  missingObjects: {
    count: number;
    first: { mediaId: string; slot: string; key: string; foundBy: string; foundAt: Date } | null;
  };
  /** Video files left platform links because of a cap (src/store/video-caps.ts), by cap. */
  videosOverCap?: { file: number; account: number; fileLimit: number | null; accountLimit: number | null };
  publication: { publishedAt: Date; postCount: number; demo: boolean } | null;
  webhooks: Array<{
    endpointId: string;
    state: 'failed' | 'retrying';
    lastHttpStatus: number | null;
    lastError: string | null;
    lastAttemptAt: Date | null;
  }>;
  /** The owner's address, or null when none is recorded. */
  ownerEmail: string | null;
  /** The account's newest reconnect link (R-OWN-12: the only one that can still work), or null. */
  reconnectLink: {
    delivery: ReconnectDelivery;
    createdAt: Date;
    expiresAt: Date;
    usedAt: Date | null;
    revokedAt: Date | null;
  } | null;
  /** The account's app (null: the default app, which has no row) and the fault recorded against it. */
  app?: { name: string; fault: { kind: AppFaultKind; message: string; at: Date } | null } | null;
}

interface AccountRow {
  id: string;
  username: string;
  status: AccountStatus;
  status_reason: string | null;
  status_reason_kind: ErrorKind | null;
  created_at: Date;
  last_sync_at: Date | null;
  last_sync_outcome: 'complete' | 'incomplete' | 'failed' | null;
  last_sync_error: string | null;
  last_sync_error_kind: ErrorKind | null;
  last_complete_sync_at: Date | null;
  skipped_items: number;
  has_token: boolean;
  expires_at: Date | null;
  refresh_failures: number | null;
  last_refresh_error: string | null;
  last_refresh_error_kind: ErrorKind | null;
  owner_email: string | null;
  link_delivery: ReconnectDelivery | null;
  link_created_at: Date | null;
  link_expires_at: Date | null;
  link_used_at: Date | null;
  link_revoked_at: Date | null;
  over_cap_file: string;
  over_cap_account: string;
  over_cap_file_limit: string | null;
  over_cap_account_limit: string | null;
  app_name: string | null;
  app_fault_kind: AppFaultKind | null;
  app_fault: string | null;
  app_fault_at: Date | null;
}

/** Health facts of every account (ordered by username), or of one (`accountId`): [] when it does not exist. */
export async function loadHealthFacts(db: Db, opts: { accountId?: string } = {}): Promise<StoredHealthFacts[]> {
  const one = opts.accountId ?? null;
  const [accounts, failures, missing, waiting, feeds, hooks] = await Promise.all([
    db.query<AccountRow>(
      `SELECT a.id, a.username, a.status, a.status_reason, a.status_reason_kind, a.created_at, a.last_sync_at,
              a.last_sync_outcome, a.last_sync_error, a.last_sync_error_kind, a.last_complete_sync_at, a.skipped_items,
              (t.account_id IS NOT NULL) AS has_token, t.expires_at, t.refresh_failures, t.last_refresh_error,
              t.last_refresh_error_kind, a.owner_email, l.delivery AS link_delivery, l.created_at AS link_created_at,
              l.expires_at AS link_expires_at, l.used_at AS link_used_at, l.revoked_at AS link_revoked_at,
              vc.over_cap_file, vc.over_cap_account, vc.over_cap_file_limit, vc.over_cap_account_limit,
              a.app_name, ap.fault_kind AS app_fault_kind, ap.fault AS app_fault, ap.fault_at AS app_fault_at
         FROM accounts a LEFT JOIN tokens t ON t.account_id = a.id
         -- The account's app and its recorded fault (the health names the app when it is the cause).
         LEFT JOIN apps ap ON ap.name = a.app_name
         -- The newest reconnect link, in this same query (ordered as latestReconnectLinks in owners.ts).
         LEFT JOIN LATERAL (
              SELECT r.delivery, r.created_at, r.expires_at, r.used_at, r.revoked_at
                FROM reconnect_links r WHERE r.account_id = a.id
               ORDER BY r.created_at DESC, r.revoked_at IS NULL DESC, r.token_hash LIMIT 1) l ON true
         -- Videos left platform links because of a cap (src/store/video-caps.ts), per cap, with
         -- the largest limit met as the one the reason names; in this query, not one more.
         LEFT JOIN LATERAL (
              SELECT count(*) FILTER (WHERE v.cap = 'file') AS over_cap_file,
                     count(*) FILTER (WHERE v.cap = 'account') AS over_cap_account,
                     max(v.limit_bytes) FILTER (WHERE v.cap = 'file') AS over_cap_file_limit,
                     max(v.limit_bytes) FILTER (WHERE v.cap = 'account') AS over_cap_account_limit
                FROM videos_over_cap v WHERE v.account_id = a.id) vc ON true
        WHERE ($1::text IS NULL OR a.id = $1)
        ORDER BY a.username, a.id`,
      [one],
    ),
    // Failures of stored posts only: a pruned post's failure no longer matters. The latest one
    // per account is kept as the example the reason quotes.
    db.query<{
      account_id: string;
      failing: string;
      gave_up: string;
      media_id: string;
      slot: string;
      error_kind: ErrorKind;
      error: string;
    }>(
      `SELECT DISTINCT ON (f.account_id) f.account_id, count(*) OVER w AS failing,
              count(*) FILTER (WHERE f.gave_up) OVER w AS gave_up, f.media_id, f.slot, f.error_kind, f.error
         FROM media_copy_failures f JOIN posts p ON p.account_id = f.account_id AND p.media_id = f.media_id
        WHERE ($1::text IS NULL OR f.account_id = $1)
       WINDOW w AS (PARTITION BY f.account_id)
        ORDER BY f.account_id, f.last_failed_at DESC, f.media_id, f.slot`,
      [one],
    ),
    // Copies of stored posts whose objects storage lacks (src/store/missing-copies.ts), with the
    // one found first as the example the reason quotes. Normally none: the table holds only
    // what verify found and no copy has put back yet.
    db.query<{
      account_id: string;
      n: string;
      media_id: string;
      slot: string;
      key: string;
      found_by: string;
      found_at: Date;
    }>(
      `SELECT DISTINCT ON (m.account_id) m.account_id, count(*) OVER (PARTITION BY m.account_id) AS n,
              m.media_id, m.slot, m.key, m.found_by, m.found_at
         FROM missing_copies m JOIN posts p ON p.account_id = m.account_id AND p.media_id = m.media_id
        WHERE ($1::text IS NULL OR m.account_id = $1)
        ORDER BY m.account_id, m.found_at, m.media_id, m.slot`,
      [one],
    ),
    // Withheld: a stored post with a cover whose cover has no copy is left out of the published
    // feed (src/feeds/publish.ts rewritePost); a copy of an older file still counts as a copy.
    // Most posts keep only their packed raw item (migration 018), so whether one has a cover is
    // read in code, for the few rows without a cover copy (withheldPosts below).
    withheldPosts(db, one),
    db.query<{ account_id: string; published_at: Date; post_count: number; demo: boolean }>(
      `SELECT account_id, published_at, post_count, demo FROM feed_publications WHERE ($1::text IS NULL OR account_id = $1)`,
      [one],
    ),
    // Per account and endpoint, the latest delivery of the account's events: failed (no retry
    // left) or pending after a failed attempt (retrying) means the endpoint is not taking them.
    db.query<{
      account_id: string;
      endpoint_id: string;
      status: string;
      last_http_status: number | null;
      last_error: string | null;
      last_attempt_at: Date | null;
    }>(
      `SELECT * FROM (
         SELECT DISTINCT ON (d.account_id, d.endpoint_id) d.account_id, d.endpoint_id, d.status, d.attempts,
                d.last_http_status, d.last_error, d.last_attempt_at
           FROM webhook_deliveries d
          WHERE d.account_id IS NOT NULL AND ($1::text IS NULL OR d.account_id = $1)
          ORDER BY d.account_id, d.endpoint_id, d.id DESC) latest
        WHERE status = 'failed' OR (status = 'pending' AND attempts > 0)
        ORDER BY account_id, endpoint_id`,
      [one],
    ),
  ]);
  const failingBy = new Map(failures.rows.map((r) => [r.account_id, r]));
  const missingBy = new Map(missing.rows.map((r) => [r.account_id, r]));
  const waitingBy = new Map(waiting.rows.map((r) => [r.account_id, r]));
  const feedBy = new Map(feeds.rows.map((r) => [r.account_id, r]));
  const hooksBy = new Map<string, StoredHealthFacts['webhooks']>();
  for (const r of hooks.rows) {
    const list = hooksBy.get(r.account_id) ?? [];
    list.push({
      endpointId: r.endpoint_id,
      state: r.status === 'failed' ? 'failed' : 'retrying',
      lastHttpStatus: r.last_http_status,
      lastError: r.last_error,
      lastAttemptAt: r.last_attempt_at,
    });
    hooksBy.set(r.account_id, list);
  }
  return accounts.rows.map((a) => {
    const f = failingBy.get(a.id);
    const w = waitingBy.get(a.id);
    const m = missingBy.get(a.id);
    const feed = feedBy.get(a.id);
    return {
      accountId: a.id,
      username: a.username,
      status: a.status,
      statusReason: a.status_reason,
      statusReasonKind: a.status_reason_kind,
      createdAt: a.created_at,
      token: {
        present: a.has_token,
        expiresAt: a.expires_at,
        refreshFailures: a.refresh_failures ?? 0,
        lastRefreshError: a.last_refresh_error,
        lastRefreshErrorKind: a.last_refresh_error_kind,
      },
      sync: {
        lastAt: a.last_sync_at,
        outcome: a.last_sync_outcome,
        error: a.last_sync_error,
        errorKind: a.last_sync_error_kind,
        lastCompleteAt: a.last_complete_sync_at,
        skippedItems: a.skipped_items,
      },
      copies: {
        failing: f ? Number(f.failing) : 0,
        gaveUp: f ? Number(f.gave_up) : 0,
        latest: f ? { mediaId: f.media_id, slot: f.slot, errorKind: f.error_kind, error: f.error } : null,
        waitingPosts: w ? Number(w.n) : 0,
        oldestWaitingSince: w?.oldest ?? null,
      },
      missingObjects: {
        count: m ? Number(m.n) : 0,
        first: m ? { mediaId: m.media_id, slot: m.slot, key: m.key, foundBy: m.found_by, foundAt: m.found_at } : null,
      },
      videosOverCap: {
        file: Number(a.over_cap_file),
        account: Number(a.over_cap_account),
        fileLimit: a.over_cap_file_limit === null ? null : Number(a.over_cap_file_limit),
        accountLimit: a.over_cap_account_limit === null ? null : Number(a.over_cap_account_limit),
      },
      publication: feed ? { publishedAt: feed.published_at, postCount: feed.post_count, demo: feed.demo } : null,
      webhooks: hooksBy.get(a.id) ?? [],
      ownerEmail: a.owner_email,
      reconnectLink:
        a.link_delivery && a.link_created_at && a.link_expires_at
          ? {
              delivery: a.link_delivery,
              createdAt: a.link_created_at,
              expiresAt: a.link_expires_at,
              usedAt: a.link_used_at,
              revokedAt: a.link_revoked_at,
            }
          : null,
      app: a.app_name
        ? {
            name: a.app_name,
            fault:
              a.app_fault_kind && a.app_fault_at
                ? { kind: a.app_fault_kind, message: a.app_fault ?? '', at: a.app_fault_at }
                : null,
          }
        : null,
    };
  });
}

/** One delivery of an account's event, with the endpoint it went to (the account page). */
export interface AccountDelivery {
  id: string;
  endpointId: string;
  endpointUrl: string;
  eventType: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  lastHttpStatus: number | null;
  lastError: string | null;
  createdAt: Date;
  lastAttemptAt: Date | null;
  deliveredAt: Date | null;
}

/** The latest deliveries of one account's events, newest first. */
export async function listAccountDeliveries(db: Db, accountId: string, limit = 20): Promise<AccountDelivery[]> {
  const { rows } = await db.query<{
    id: string;
    endpoint_id: string;
    url: string;
    event_type: string;
    status: AccountDelivery['status'];
    attempts: number;
    last_http_status: number | null;
    last_error: string | null;
    created_at: Date;
    last_attempt_at: Date | null;
    delivered_at: Date | null;
  }>(
    `SELECT d.id, d.endpoint_id, e.url, d.event_type, d.status, d.attempts, d.last_http_status, d.last_error,
            d.created_at, d.last_attempt_at, d.delivered_at
       FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
      WHERE d.account_id = $1 ORDER BY d.id DESC LIMIT $2`,
    [accountId, limit],
  );
  return rows.map((r) => ({
    id: String(r.id),
    endpointId: r.endpoint_id,
    endpointUrl: r.url,
    eventType: r.event_type,
    status: r.status,
    attempts: r.attempts,
    lastHttpStatus: r.last_http_status,
    lastError: r.last_error,
    createdAt: r.created_at,
    lastAttemptAt: r.last_attempt_at,
    deliveredAt: r.delivered_at,
  }));
}

/** An account's recent token and lifecycle events (token_events), newest first. */
export async function listAccountEvents(
  db: Db,
  accountId: string,
  limit = 20,
): Promise<
  Array<{ kind: string; at: Date; detail: string | null; errorKind: ErrorKind | null; expiresAt: Date | null }>
> {
  const { rows } = await db.query<{
    kind: string;
    at: Date;
    detail: string | null;
    error_kind: ErrorKind | null;
    expires_at: Date | null;
  }>(
    'SELECT kind, at, detail, error_kind, expires_at FROM token_events WHERE account_id = $1 ORDER BY id DESC LIMIT $2',
    [accountId, limit],
  );
  return rows.map((r) => ({
    kind: r.kind,
    at: r.at,
    detail: r.detail,
    errorKind: r.error_kind,
    expiresAt: r.expires_at,
  }));
}

/** One account's copies: how many images, and their bytes (originals). */
export async function accountCopyTotals(db: Db, accountId: string): Promise<{ n: number; bytes: number }> {
  const { rows } = await db.query<{ n: string; bytes: string }>(
    'SELECT count(*) AS n, coalesce(sum(bytes), 0) AS bytes FROM media_copies WHERE account_id = $1',
    [accountId],
  );
  return { n: Number(rows[0]?.n ?? 0), bytes: Number(rows[0]?.bytes ?? 0) };
}

/**
 * Per account, the stored posts that have a cover (thumbnailUrl) and no cover copy: how many, and
 * since when the oldest was first seen. SQL picks the rows without a cover copy (normally none, or
 * a new post's until its copy is made); each is unpacked here, as the feed reads it.
 */
async function withheldPosts(
  db: Db,
  one: string | null,
): Promise<{ rows: Array<{ account_id: string; n: string; oldest: Date }> }> {
  const { rows } = await db.query<{ account_id: string; post: unknown; raw: Buffer | null; first_seen_at: Date }>(
    `SELECT p.account_id, p.post, p.raw, p.first_seen_at
       FROM posts p
      WHERE ($1::text IS NULL OR p.account_id = $1)
        AND NOT EXISTS (SELECT 1 FROM media_copies c
                         WHERE c.account_id = p.account_id AND c.media_id = p.media_id AND c.slot = 'cover')`,
    [one],
  );
  const by = new Map<string, { account_id: string; n: string; oldest: Date }>();
  for (const r of rows) {
    let cover: unknown;
    try {
      cover = (unpackPost(r) as { thumbnailUrl?: unknown } | null)?.thumbnailUrl;
    } catch {
      cover = undefined; // an unreadable row is the feed's problem to report (listPosts), not a withheld post
    }
    if (cover === null || cover === undefined) continue;
    const seen = by.get(r.account_id);
    if (!seen) by.set(r.account_id, { account_id: r.account_id, n: '1', oldest: r.first_seen_at });
    else {
      seen.n = String(Number(seen.n) + 1);
      if (r.first_seen_at < seen.oldest) seen.oldest = r.first_seen_at;
    }
  }
  return { rows: [...by.values()] };
}
