import { createHash, randomBytes } from 'node:crypto';
import type { Db } from './db.ts';

/**
 * Invitations to connect an account: random (32 bytes), single use, expiring. Only a sha256 is
 * stored, so the table is useless to whoever reads it. An invitation is checked when a login
 * starts and taken (atomically, once) when its callback comes back; a login that fails after
 * that gives it back, so a declined approval does not burn the owner's link.
 */
export type InvitationState = 'ok' | 'unknown' | 'expired' | 'used';

export function hashInvitation(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Tokens we make are 43 base64url characters; anything else is not looked up. */
export const INVITATION_RE = /^[A-Za-z0-9_-]{43}$/;

/** The owner an invitation carries: the account it connects gets them (R-OWN-10). */
export interface InvitationOwner {
  name: string | null;
  email: string;
  language: string | null;
}

export async function createInvitation(
  db: Db,
  now: Date,
  ttlMs: number,
  createdBy: 'dashboard' | 'cli',
  owner?: InvitationOwner | null,
  /** The app the account will connect through (null: the default app). */
  app?: string | null,
): Promise<{ token: string; hash: string; expiresAt: Date }> {
  const token = randomBytes(32).toString('base64url');
  const expiresAt = new Date(now.getTime() + ttlMs);
  await db.query(
    `INSERT INTO invitations (token_hash, created_at, expires_at, created_by, owner_name, owner_email, owner_language, app_name)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [
      hashInvitation(token),
      now,
      expiresAt,
      createdBy,
      owner?.name ?? null,
      owner?.email ?? null,
      owner?.language ?? null,
      app ?? null,
    ],
  );
  return { token, hash: hashInvitation(token), expiresAt };
}

/** The app an invitation connects through (null: the default app). */
export async function invitationApp(db: Db, hash: string): Promise<string | null> {
  const { rows } = await db.query<{ app_name: string | null }>(
    'SELECT app_name FROM invitations WHERE token_hash = $1',
    [hash],
  );
  return rows[0]?.app_name ?? null;
}

/** How an invitation's email left: through SMTP_URL, or written to OUTBOX_DIR (none set: not sent). */
export type InvitationEmailVia = 'smtp' | 'outbox';

/** Record that the invitation (by hash) was emailed: to whom, when, how (the dashboard's list says so). */
export async function recordInvitationEmail(
  db: Db,
  hash: string,
  email: { to: string; at: Date; via: InvitationEmailVia },
): Promise<void> {
  await db.query('UPDATE invitations SET emailed_to = $2, emailed_at = $3, emailed_via = $4 WHERE token_hash = $1', [
    hash,
    email.to,
    email.at,
    email.via,
  ]);
}

/** An invitation as the dashboard lists it: never its token (only a digest is stored anyway). */
export interface ListedInvitation {
  createdAt: Date;
  createdBy: 'dashboard' | 'cli';
  expiresAt: Date;
  usedAt: Date | null;
  state: InvitationState;
  owner: InvitationOwner | null;
  emailed: { to: string; at: Date; via: InvitationEmailVia } | null;
}

/** The newest invitations (at most `limit`), newest first; housekeeping keeps 30 days of them. */
export async function listInvitations(db: Db, now: Date, limit = 20): Promise<ListedInvitation[]> {
  const { rows } = await db.query<{
    created_at: Date;
    created_by: 'dashboard' | 'cli';
    expires_at: Date;
    used_at: Date | null;
    owner_name: string | null;
    owner_email: string | null;
    owner_language: string | null;
    emailed_to: string | null;
    emailed_at: Date | null;
    emailed_via: InvitationEmailVia | null;
  }>(
    `SELECT created_at, created_by, expires_at, used_at, owner_name, owner_email, owner_language,
            emailed_to, emailed_at, emailed_via
       FROM invitations ORDER BY created_at DESC, token_hash LIMIT $1`,
    [limit],
  );
  return rows.map((r) => ({
    createdAt: r.created_at,
    createdBy: r.created_by,
    expiresAt: r.expires_at,
    usedAt: r.used_at,
    state: r.used_at ? 'used' : r.expires_at.getTime() > now.getTime() ? 'ok' : 'expired',
    owner: r.owner_email ? { name: r.owner_name, email: r.owner_email, language: r.owner_language } : null,
    emailed:
      r.emailed_to && r.emailed_at && r.emailed_via ? { to: r.emailed_to, at: r.emailed_at, via: r.emailed_via } : null,
  }));
}

/** The owner the invitation (by hash) carries, if any. */
export async function invitationOwner(db: Db, hash: string): Promise<InvitationOwner | null> {
  const { rows } = await db.query<{
    owner_name: string | null;
    owner_email: string | null;
    owner_language: string | null;
  }>('SELECT owner_name, owner_email, owner_language FROM invitations WHERE token_hash = $1', [hash]);
  const r = rows[0];
  return r?.owner_email ? { name: r.owner_name, email: r.owner_email, language: r.owner_language } : null;
}

/** Whether an invitation may start a login now (read only). */
export async function checkInvitation(db: Db, token: string, now: Date): Promise<InvitationState> {
  if (!INVITATION_RE.test(token)) return 'unknown';
  return stateOfHash(db, hashInvitation(token), now);
}

export async function stateOfHash(db: Db, hash: string, now: Date): Promise<InvitationState> {
  const { rows } = await db.query<{ expires_at: Date; used_at: Date | null }>(
    'SELECT expires_at, used_at FROM invitations WHERE token_hash = $1',
    [hash],
  );
  const row = rows[0];
  if (!row) return 'unknown';
  if (row.used_at) return 'used';
  return row.expires_at.getTime() > now.getTime() ? 'ok' : 'expired';
}

/** Take the invitation (by hash) once: of two callbacks exactly one gets 'ok'. */
export async function takeInvitation(db: Db, hash: string, now: Date): Promise<InvitationState> {
  const { rowCount } = await db.query(
    'UPDATE invitations SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2',
    [hash, now],
  );
  if (rowCount) return 'ok';
  return stateOfHash(db, hash, now);
}

/** Give a taken invitation back (the login it started failed before connecting anything). */
export async function releaseInvitation(db: Db, hash: string, takenAt: Date): Promise<void> {
  await db.query('UPDATE invitations SET used_at = NULL WHERE token_hash = $1 AND used_at = $2', [hash, takenAt]);
}

/** Delete invitations that expired or were used more than `keepMs` ago (default 30 days). */
export async function pruneInvitations(db: Db, now: Date, keepMs = 30 * 86_400_000): Promise<number> {
  const before = new Date(now.getTime() - keepMs);
  const { rowCount } = await db.query('DELETE FROM invitations WHERE expires_at < $1 OR used_at < $1', [before]);
  return rowCount ?? 0;
}
