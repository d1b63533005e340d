import type { Db } from './db.ts';

/**
 * Deduplication of alert emails: one row per account, kind, threshold, token life and recipient
 * (the operator's copy and the owner's are claimed apart: one failing never re-sends the other).
 */

export type AlertKind = 'expiry' | 'reauth';
export type AlertRecipient = 'operator' | 'owner';

export interface AlertKey {
  accountId: string;
  kind: AlertKind;
  /** 14, 7, 3 or 1 for expiry alerts; 0 for reauth alerts. */
  thresholdDays: number;
  /** The expiry of the token the alert is about: a refreshed token starts afresh. */
  tokenExpiresAt: Date;
  /** Default 'operator'. */
  recipient?: AlertRecipient;
}

/**
 * Claim an alert. INSERT ... ON CONFLICT DO NOTHING RETURNING: true only for the first caller,
 * across processes, so an alert goes out once however many workers sweep.
 */
export async function recordAlertOnce(db: Db, a: AlertKey & { at: Date }): Promise<boolean> {
  const { rows } = await db.query(
    `INSERT INTO alerts_sent (account_id, kind, threshold_days, token_expires_at, sent_at, recipient)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT DO NOTHING
     RETURNING 1`,
    [a.accountId, a.kind, a.thresholdDays, a.tokenExpiresAt, a.at, a.recipient ?? 'operator'],
  );
  return rows.length === 1;
}

/** Release a claim whose email could not be sent, so the next sweep tries again. */
export async function forgetAlert(db: Db, a: AlertKey): Promise<void> {
  await db.query(
    `DELETE FROM alerts_sent
      WHERE account_id = $1 AND kind = $2 AND threshold_days = $3 AND token_expires_at = $4 AND recipient = $5`,
    [a.accountId, a.kind, a.thresholdDays, a.tokenExpiresAt, a.recipient ?? 'operator'],
  );
}

/** When the alert was claimed (sent), or null. */
export async function alertSentAt(db: Db, a: AlertKey): Promise<Date | null> {
  const { rows } = await db.query<{ sent_at: Date }>(
    `SELECT sent_at FROM alerts_sent
      WHERE account_id = $1 AND kind = $2 AND threshold_days = $3 AND token_expires_at = $4 AND recipient = $5`,
    [a.accountId, a.kind, a.thresholdDays, a.tokenExpiresAt, a.recipient ?? 'operator'],
  );
  return rows[0]?.sent_at ?? null;
}
