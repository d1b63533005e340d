import type { ErrorKind } from '../util/error-kinds.ts';
import { redactText } from '../util/redact.ts';
import type { Db } from './db.ts';

/**
 * The media_copy_failures table (migrations/010_account_health.sql): one row per image slot whose
 * copy is failing. Each failed attempt updates it; saving the copy (saveMediaCopy) deletes it.
 * What an account's health counts as "copies failing", and what its page lists.
 */
export interface CopyFailure {
  accountId: string;
  mediaId: string;
  slot: string;
  errorKind: ErrorKind;
  /** Redacted. */
  error: string;
  attempts: number;
  /** The job used its last attempt (or the error cannot heal by retrying); the next sync tries again. */
  gaveUp: boolean;
  firstFailedAt: Date;
  lastFailedAt: Date;
}

interface Row {
  account_id: string;
  media_id: string;
  slot: string;
  error_kind: ErrorKind;
  error: string;
  attempts: number;
  gave_up: boolean;
  first_failed_at: Date;
  last_failed_at: Date;
}

const toFailure = (r: Row): CopyFailure => ({
  accountId: r.account_id,
  mediaId: r.media_id,
  slot: r.slot,
  errorKind: r.error_kind,
  error: r.error,
  attempts: r.attempts,
  gaveUp: r.gave_up,
  firstFailedAt: r.first_failed_at,
  lastFailedAt: r.last_failed_at,
});

/** Record one failed attempt to copy a slot (the error text is redacted here: it may quote a link). */
export async function recordCopyFailure(
  db: Db,
  f: {
    accountId: string;
    mediaId: string;
    slot: string;
    errorKind: ErrorKind;
    error: string;
    at: Date;
    gaveUp: boolean;
  },
): Promise<void> {
  // The account may have been removed meanwhile: the insert then adds nothing.
  await db.query(
    `INSERT INTO media_copy_failures (account_id, media_id, slot, error_kind, error, attempts, gave_up, first_failed_at, last_failed_at)
     SELECT $1, $2, $3, $4, $5, 1, $6, $7, $7 WHERE EXISTS (SELECT 1 FROM accounts WHERE id = $1)
     ON CONFLICT (account_id, media_id, slot) DO UPDATE SET
       error_kind = EXCLUDED.error_kind, error = EXCLUDED.error, attempts = media_copy_failures.attempts + 1,
       gave_up = EXCLUDED.gave_up, last_failed_at = EXCLUDED.last_failed_at`,
    [f.accountId, f.mediaId, f.slot, f.errorKind, redactText(f.error).slice(0, 500), f.gaveUp, f.at],
  );
}

/** Forget a slot's failures: its copy exists now, or its post is gone. */
export async function clearCopyFailure(db: Db, accountId: string, mediaId: string, slot: string): Promise<void> {
  await db.query('DELETE FROM media_copy_failures WHERE account_id = $1 AND media_id = $2 AND slot = $3', [
    accountId,
    mediaId,
    slot,
  ]);
}

/** The failing copies of one account's stored posts, most recent failure first. */
export async function listCopyFailures(db: Db, accountId: string, limit = 50): Promise<CopyFailure[]> {
  const { rows } = await db.query<Row>(
    `SELECT f.* FROM media_copy_failures f
       JOIN posts p ON p.account_id = f.account_id AND p.media_id = f.media_id
      WHERE f.account_id = $1
      ORDER BY f.last_failed_at DESC, f.media_id, f.slot LIMIT $2`,
    [accountId, limit],
  );
  return rows.map(toFailure);
}
