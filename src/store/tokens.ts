import { redactText } from '../util/redact.ts';
import type { TokenCipher } from './crypto.ts';
import { withTransaction, type Db } from './db.ts';
import { recordTokenEvent } from './events.ts';
import type { ErrorKind } from '../util/error-kinds.ts';

/**
 * The tokens table. A token is encrypted before it reaches SQL and decrypted only by loadToken,
 * whose caller sends it to the platform and nowhere else (R-TOK-11).
 */

export interface StoredToken {
  accessToken: string;
  obtainedAt: Date;
  /** Absolute expiry (R-TOK-4). */
  expiresAt: Date;
  /** Pass it to replaceTokenIfCurrent: the write happens only if nobody replaced the token since. */
  generation: number;
}

/** A token's metadata: everything but the token, safe to show and log. */
export interface TokenInfo {
  accountId: string;
  keyId: string;
  obtainedAt: Date;
  expiresAt: Date;
  generation: number;
  lastRefreshAttemptAt: Date | null;
  lastRefreshError: string | null;
  refreshFailures: number;
}

export interface NewToken {
  accessToken: string;
  obtainedAt: Date;
  expiresAt: Date;
}

/**
 * Store a token from a connect (exchange) or an import: insert, or replace whatever was there,
 * bumping the generation so refreshes started against the old token cannot overwrite it.
 */
export async function saveToken(
  db: Db,
  cipher: TokenCipher,
  t: NewToken & { accountId: string },
  event: 'exchanged' | 'imported',
): Promise<{ generation: number }> {
  const sealed = cipher.encrypt(t.accessToken, t.accountId);
  return withTransaction(db, async (c) => {
    const { rows } = await c.query<{ generation: string }>(
      `INSERT INTO tokens (account_id, key_id, ciphertext, obtained_at, expires_at, generation, updated_at)
       VALUES ($1, $2, $3, $4, $5, 1, $4)
       ON CONFLICT (account_id) DO UPDATE SET
         key_id = EXCLUDED.key_id, ciphertext = EXCLUDED.ciphertext,
         obtained_at = EXCLUDED.obtained_at, expires_at = EXCLUDED.expires_at,
         generation = tokens.generation + 1,
         last_refresh_error = NULL, last_refresh_error_kind = NULL, refresh_failures = 0, updated_at = EXCLUDED.updated_at
       RETURNING generation`,
      [t.accountId, sealed.keyId, sealed.ciphertext, t.obtainedAt, t.expiresAt],
    );
    await recordTokenEvent(c, { accountId: t.accountId, kind: event, at: t.obtainedAt, expiresAt: t.expiresAt });
    return { generation: Number(rows[0]!.generation) };
  });
}

/** The token, decrypted, for a call to the platform; null when the account has none. */
export async function loadToken(db: Db, cipher: TokenCipher, accountId: string): Promise<StoredToken | null> {
  const { rows } = await db.query<SealedTokenRow>(`SELECT ${SEALED_TOKEN_COLUMNS} FROM tokens WHERE account_id = $1`, [
    accountId,
  ]);
  return rows[0] ? openToken(cipher, accountId, rows[0]) : null;
}

/** A token row as read for a call: still sealed (openToken decrypts it). */
export interface SealedTokenRow {
  key_id: string;
  ciphertext: Buffer;
  obtained_at: Date;
  expires_at: Date;
  generation: string;
}
export const SEALED_TOKEN_COLUMNS = 'key_id, ciphertext, obtained_at, expires_at, generation';

export function openToken(cipher: TokenCipher, accountId: string, r: SealedTokenRow): StoredToken {
  return {
    accessToken: cipher.decrypt({ keyId: r.key_id, ciphertext: r.ciphertext }, accountId),
    obtainedAt: r.obtained_at,
    expiresAt: r.expires_at,
    generation: Number(r.generation),
  };
}

/** Metadata only (no decryption, so no key needed): dashboards, sweeps, logs. */
export async function getTokenInfo(db: Db, accountId: string): Promise<TokenInfo | null> {
  const { rows } = await db.query<{
    account_id: string;
    key_id: string;
    obtained_at: Date;
    expires_at: Date;
    generation: string;
    last_refresh_attempt_at: Date | null;
    last_refresh_error: string | null;
    refresh_failures: number;
  }>(
    `SELECT account_id, key_id, obtained_at, expires_at, generation, last_refresh_attempt_at, last_refresh_error, refresh_failures
       FROM tokens WHERE account_id = $1`,
    [accountId],
  );
  const r = rows[0];
  if (!r) return null;
  return {
    accountId: r.account_id,
    keyId: r.key_id,
    obtainedAt: r.obtained_at,
    expiresAt: r.expires_at,
    generation: Number(r.generation),
    lastRefreshAttemptAt: r.last_refresh_attempt_at,
    lastRefreshError: r.last_refresh_error,
    refreshFailures: r.refresh_failures,
  };
}

/**
 * R-TOK-6: a successful refresh replaces the stored token and its expiry, even when the value
 * looks identical, in ONE transaction with its 'refreshed' event. Guarded: the row is written only
 * while its generation still equals expectedGeneration, so of two workers refreshing at once only
 * one writes, and a slow, older result never overwrites a newer token. Returns whether it wrote.
 */
export async function replaceTokenIfCurrent(
  db: Db,
  cipher: TokenCipher,
  accountId: string,
  expectedGeneration: number,
  grant: NewToken,
): Promise<boolean> {
  const sealed = cipher.encrypt(grant.accessToken, accountId);
  return withTransaction(db, async (c) => {
    const { rowCount } = await c.query(
      `UPDATE tokens SET key_id = $3, ciphertext = $4, obtained_at = $5, expires_at = $6,
              generation = generation + 1, last_refresh_attempt_at = $5,
              last_refresh_error = NULL, last_refresh_error_kind = NULL, refresh_failures = 0, updated_at = $5
        WHERE account_id = $1 AND generation = $2`,
      [accountId, expectedGeneration, sealed.keyId, sealed.ciphertext, grant.obtainedAt, grant.expiresAt],
    );
    if (rowCount !== 1) return false;
    await recordTokenEvent(c, { accountId, kind: 'refreshed', at: grant.obtainedAt, expiresAt: grant.expiresAt });
    return true;
  });
}

/**
 * R-TOK-7: a failed refresh never overwrites the stored token: only the attempt, the (redacted)
 * error and the failure count change; ciphertext and expiry are not in this statement at all.
 * Returns the failure count and the unchanged expiry, or null when the account has no token.
 */
export async function recordRefreshFailure(
  db: Db,
  accountId: string,
  at: Date,
  message: string,
  kind: ErrorKind = 'internal',
): Promise<{ refreshFailures: number; expiresAt: Date } | null> {
  const detail = redactText(message).slice(0, 2000);
  return withTransaction(db, async (c) => {
    const { rows } = await c.query<{ refresh_failures: number; expires_at: Date }>(
      `UPDATE tokens SET last_refresh_attempt_at = $2, last_refresh_error = $3, last_refresh_error_kind = $4, refresh_failures = refresh_failures + 1
        WHERE account_id = $1
        RETURNING refresh_failures, expires_at`,
      [accountId, at, detail, kind],
    );
    const r = rows[0];
    if (!r) return null;
    await recordTokenEvent(c, {
      accountId,
      kind: 'refresh_failed',
      at,
      expiresAt: r.expires_at,
      detail,
      errorKind: kind,
    });
    return { refreshFailures: r.refresh_failures, expiresAt: r.expires_at };
  });
}

/**
 * Re-encrypt every token not sealed with the current key, in one transaction (all or nothing).
 * The generation is left alone: the token itself is unchanged, so a refresh in flight must still
 * be allowed to write (rows are locked, so it simply waits for the rotation to commit).
 * Afterwards the old key can be removed from TOKEN_ENCRYPTION_KEY.
 */
export async function rotateKeys(db: Db, cipher: TokenCipher): Promise<{ rotated: number }> {
  return withTransaction(db, async (c) => {
    const { rows } = await c.query<{ account_id: string; key_id: string; ciphertext: Buffer }>(
      'SELECT account_id, key_id, ciphertext FROM tokens WHERE key_id <> $1 ORDER BY account_id FOR UPDATE',
      [cipher.currentKeyId],
    );
    for (const r of rows) {
      const plain = cipher.decrypt({ keyId: r.key_id, ciphertext: r.ciphertext }, r.account_id);
      const sealed = cipher.encrypt(plain, r.account_id);
      await c.query('UPDATE tokens SET key_id = $2, ciphertext = $3 WHERE account_id = $1', [
        r.account_id,
        sealed.keyId,
        sealed.ciphertext,
      ]);
    }
    return { rotated: rows.length };
  });
}

/** Every stored token's expiry (never the token): the server's feedmirror_token_days_left. */
export async function listTokenExpiries(db: Db): Promise<Array<{ accountId: string; expiresAt: Date }>> {
  const { rows } = await db.query<{ account_id: string; expires_at: Date }>(
    'SELECT account_id, expires_at FROM tokens',
  );
  return rows.map((r) => ({ accountId: r.account_id, expiresAt: r.expires_at }));
}
