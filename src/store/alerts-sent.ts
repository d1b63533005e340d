import type { Db } from './db.ts';

/** Deduplication of alert emails: one row per account, kind, threshold and token life. */

export type AlertKind = 'expiry' | 'reauth';

export interface AlertKey {
  accountId: string;
  kind: AlertKind;
  /** 14, 7, 3 or 1 for expiry alerts; 0 for reauth alerts. */
  thresholdDays: number;
  /** The expiry of the token the alert is about: a refreshed token starts afresh. */
  tokenExpiresAt: Date;
}

/**
 * Claim an alert. INSERT ... ON CONFLICT DO NOTHING RETURNING: true only for the first caller,
 * across processes, so an alert goes out once however many workers sweep.
 */
export async function recordAlertOnce(db: Db, a: AlertKey & { at: Date }): Promise<boolean> {
  const { rows } = await db.query(
    `INSERT INTO alerts_sent (account_id, kind, threshold_days, token_expires_at, sent_at)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT DO NOTHING
     RETURNING 1`,
    [a.accountId, a.kind, a.thresholdDays, a.tokenExpiresAt, a.at],
  );
  return rows.length === 1;
}

/** Release a claim whose email could not be sent, so the next sweep tries again. */
export async function forgetAlert(db: Db, a: AlertKey): Promise<void> {
  await db.query(
    'DELETE FROM alerts_sent WHERE account_id = $1 AND kind = $2 AND threshold_days = $3 AND token_expires_at = $4',
    [a.accountId, a.kind, a.thresholdDays, a.tokenExpiresAt],
  );
}
