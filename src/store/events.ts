import { redactText } from '../util/redact.ts';
import type { Db } from './db.ts';
import type { ErrorKind } from '../util/error-kinds.ts';

/** What happened to an account's token, for the dashboard and for audits. */
export const TOKEN_EVENT_KINDS = [
  'exchanged',
  'refreshed',
  'refresh_failed',
  'expired',
  'reauth_required',
  'imported',
  'removed',
] as const;
export type TokenEventKind = (typeof TOKEN_EVENT_KINDS)[number];

export interface TokenEvent {
  id: number;
  accountId: string;
  kind: TokenEventKind;
  /** The token's expiry at the time: logged instead of the token (R-TOK-11). */
  expiresAt: Date | null;
  detail: string | null;
  at: Date;
}

export async function recordTokenEvent(
  db: Db,
  e: {
    accountId: string;
    kind: TokenEventKind;
    at: Date;
    expiresAt?: Date | null;
    detail?: string | null;
    errorKind?: ErrorKind | null;
  },
): Promise<void> {
  // The detail may quote a platform error message: scrub it, a token must never be stored here.
  await db.query(
    'INSERT INTO token_events (account_id, kind, expires_at, detail, at, error_kind) VALUES ($1, $2, $3, $4, $5, $6)',
    [
      e.accountId,
      e.kind,
      e.expiresAt ?? null,
      e.detail == null ? null : redactText(e.detail).slice(0, 2000),
      e.at,
      e.errorKind ?? null,
    ],
  );
}

/** Delete events older than `before` (daily housekeeping); returns how many went. */
export async function pruneEvents(db: Db, before: Date): Promise<number> {
  const { rowCount } = await db.query('DELETE FROM token_events WHERE at < $1', [before]);
  return rowCount ?? 0;
}
