import { createHash, randomBytes } from 'node:crypto';
import type { Db } from './db.ts';

/**
 * OAuth `state` values: random, single use, short-lived. Only a sha256 of each is stored, so the
 * table is useless to whoever reads it.
 */

export type LoginStateResult = 'ok' | 'unknown' | 'expired' | 'used';

function hashState(state: string): string {
  return createHash('sha256').update(state, 'utf8').digest('hex');
}

/** A new state (32 random bytes, base64url) valid for ttlMs from now. */
export async function createLoginState(
  db: Db,
  now: Date,
  ttlMs: number,
  opts: { invitationHash?: string | null; reconnectHash?: string | null; app?: string | null } = {},
): Promise<string> {
  const state = randomBytes(32).toString('base64url');
  await db.query(
    'INSERT INTO login_states (state_hash, created_at, expires_at, invitation_hash, reconnect_hash, app_name) VALUES ($1, $2, $3, $4, $5, $6)',
    [
      hashState(state),
      now,
      new Date(now.getTime() + ttlMs),
      opts.invitationHash ?? null,
      opts.reconnectHash ?? null,
      opts.app ?? null,
    ],
  );
  return state;
}

/**
 * Use a state once. The UPDATE ... WHERE used_at IS NULL is atomic, so of two callbacks carrying
 * the same state exactly one gets 'ok'. Also returns the invitation or reconnect link the login
 * started from, for a used or expired state too (a reloaded page can then say where to go next;
 * only 'ok' may ever connect anything).
 */
export async function takeLoginState(
  db: Db,
  state: string,
  now: Date,
): Promise<{
  result: LoginStateResult;
  invitationHash: string | null;
  reconnectHash: string | null;
  /** The app the login was started with (null: the default app). */
  app: string | null;
}> {
  const hash = hashState(state);
  const { rows } = await db.query<{
    invitation_hash: string | null;
    reconnect_hash: string | null;
    app_name: string | null;
  }>(
    `UPDATE login_states SET used_at = $2
      WHERE state_hash = $1 AND used_at IS NULL AND expires_at > $2
      RETURNING invitation_hash, reconnect_hash, app_name`,
    [hash, now],
  );
  if (rows[0])
    return {
      result: 'ok',
      invitationHash: rows[0].invitation_hash,
      reconnectHash: rows[0].reconnect_hash,
      app: rows[0].app_name,
    };
  const seen = await db.query<{ used_at: Date | null; invitation_hash: string | null; reconnect_hash: string | null }>(
    'SELECT used_at, invitation_hash, reconnect_hash FROM login_states WHERE state_hash = $1',
    [hash],
  );
  const row = seen.rows[0];
  return {
    result: !row ? 'unknown' : row.used_at ? 'used' : 'expired',
    invitationHash: row?.invitation_hash ?? null,
    reconnectHash: row?.reconnect_hash ?? null,
    app: null,
  };
}

export async function consumeLoginState(db: Db, state: string, now: Date): Promise<LoginStateResult> {
  return (await takeLoginState(db, state, now)).result;
}

/** Delete states that expired more than `keepMs` ago (default a day): housekeeping. */
export async function pruneLoginStates(db: Db, now: Date, keepMs = 24 * 3600_000): Promise<number> {
  const { rowCount } = await db.query('DELETE FROM login_states WHERE expires_at < $1', [
    new Date(now.getTime() - keepMs),
  ]);
  return rowCount ?? 0;
}
