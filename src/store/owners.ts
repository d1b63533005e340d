import { createHash, randomBytes } from 'node:crypto';
import type { Db } from './db.ts';

/**
 * Account owners and their reconnect links.
 *
 * The owner is a contact on the account row (name, email, language, whether they get alerts).
 * A reconnect link is random (32 bytes, base64url), bound to one account, expiring, single use;
 * only a sha256 of it is stored (R-OWN-11), like invitations and login states. Making a new link
 * for an account revokes the ones before it (R-OWN-12).
 */
export interface AccountOwner {
  name: string | null;
  email: string;
  /** Only 'en' is offered today; null = the deployment's language. */
  language: string | null;
  /** Whether this account's owner gets alerts (with OWNER_ALERTS on for the deployment). */
  alerts: boolean;
}

export interface OwnerPatch {
  name?: string | null;
  email?: string;
  language?: string | null;
  alerts?: boolean;
}

interface OwnerRow {
  owner_name: string | null;
  owner_email: string | null;
  owner_language: string | null;
  owner_alerts: boolean;
}

export function ownerOfRow(r: Partial<OwnerRow>): AccountOwner | null {
  if (!r.owner_email) return null;
  return {
    name: r.owner_name ?? null,
    email: r.owner_email,
    language: r.owner_language ?? null,
    alerts: r.owner_alerts ?? true,
  };
}

export async function getOwner(db: Db, accountId: string): Promise<AccountOwner | null> {
  const { rows } = await db.query<OwnerRow>(
    'SELECT owner_name, owner_email, owner_language, owner_alerts FROM accounts WHERE id = $1',
    [accountId],
  );
  return rows[0] ? ownerOfRow(rows[0]) : null;
}

/**
 * Change the owner's fields given (undefined leaves one as it is). Setting a new email without a
 * name clears the old name (it was someone else's). false when there is no such account.
 */
export async function setOwner(db: Db, accountId: string, patch: OwnerPatch, at: Date): Promise<boolean> {
  const newPerson = patch.email !== undefined && patch.name === undefined;
  const { rowCount } = await db.query(
    `UPDATE accounts SET
       owner_email = COALESCE($2, owner_email),
       owner_name = CASE WHEN $3 THEN $4 WHEN $7 AND owner_email IS DISTINCT FROM $2 THEN NULL ELSE owner_name END,
       owner_language = CASE WHEN $5 THEN $6 ELSE owner_language END,
       owner_alerts = COALESCE($8, owner_alerts),
       updated_at = $9
     WHERE id = $1`,
    [
      accountId,
      patch.email ?? null,
      patch.name !== undefined,
      patch.name ?? null,
      patch.language !== undefined,
      patch.language ?? null,
      newPerson,
      patch.alerts ?? null,
      at,
    ],
  );
  return (rowCount ?? 0) > 0;
}

/** Forget the owner (and revoke their links): alerts go to the operator only. */
export async function clearOwner(db: Db, accountId: string, at: Date): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE accounts SET owner_name = NULL, owner_email = NULL, owner_language = NULL, owner_alerts = true,
            updated_at = $2 WHERE id = $1`,
    [accountId, at],
  );
  await revokeReconnectLinks(db, accountId, at);
  return (rowCount ?? 0) > 0;
}

// ---------------------------------------------------------------------------------------------
// Reconnect links

export type ReconnectLinkState = 'ok' | 'unknown' | 'expired' | 'used' | 'revoked';
export type ReconnectReason = 'expiry' | 'reauth';
/** How a link reached the owner: emailed (an alert, or the operator's resend) or shown to the operator to copy. */
export type ReconnectDelivery = 'email' | 'copy';

/** Tokens we make are 43 base64url characters; anything else is not looked up. */
export const RECONNECT_TOKEN_RE = /^[A-Za-z0-9_-]{43}$/;

export function hashReconnectToken(token: string): string {
  return createHash('sha256').update(`reconnect:${token}`, 'utf8').digest('hex');
}

export interface ReconnectLink {
  hash: string;
  accountId: string;
  reason: ReconnectReason;
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
  revokedAt: Date | null;
}

interface LinkRow {
  token_hash: string;
  account_id: string;
  reason: ReconnectReason;
  created_at: Date;
  expires_at: Date;
  used_at: Date | null;
  revoked_at: Date | null;
}

const toLink = (r: LinkRow): ReconnectLink => ({
  hash: r.token_hash,
  accountId: r.account_id,
  reason: r.reason,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  usedAt: r.used_at,
  revokedAt: r.revoked_at,
});

export function linkState(link: ReconnectLink | null, now: Date): ReconnectLinkState {
  if (!link) return 'unknown';
  if (link.usedAt) return 'used';
  if (link.revokedAt) return 'revoked';
  return link.expiresAt.getTime() > now.getTime() ? 'ok' : 'expired';
}

/**
 * A new link for the account; every earlier link of the account that is still open is revoked
 * in the same transaction (R-OWN-12: the newest alert's link is the only one that works).
 */
export async function createReconnectLink(
  db: Db,
  input: { accountId: string; reason: ReconnectReason; now: Date; ttlMs: number; delivery?: ReconnectDelivery },
): Promise<{ token: string; expiresAt: Date }> {
  const token = randomBytes(32).toString('base64url');
  const expiresAt = new Date(input.now.getTime() + input.ttlMs);
  await db.query(
    `WITH revoked AS (
       UPDATE reconnect_links SET revoked_at = $4
        WHERE account_id = $2 AND used_at IS NULL AND revoked_at IS NULL)
     INSERT INTO reconnect_links (token_hash, account_id, reason, created_at, expires_at, delivery)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [hashReconnectToken(token), input.accountId, input.reason, input.now, expiresAt, input.delivery ?? 'email'],
  );
  return { token, expiresAt };
}

export async function getReconnectLinkByHash(db: Db, hash: string): Promise<ReconnectLink | null> {
  const { rows } = await db.query<LinkRow>('SELECT * FROM reconnect_links WHERE token_hash = $1', [hash]);
  return rows[0] ? toLink(rows[0]) : null;
}

/** The link a token names (null for a malformed or unknown one). */
export async function findReconnectLink(db: Db, token: string): Promise<ReconnectLink | null> {
  if (!RECONNECT_TOKEN_RE.test(token)) return null;
  return getReconnectLinkByHash(db, hashReconnectToken(token));
}

/** Take the link once (a login it started connected its account): of two callbacks one gets 'ok'. */
export async function takeReconnectLink(db: Db, hash: string, now: Date): Promise<ReconnectLinkState> {
  const { rowCount } = await db.query(
    `UPDATE reconnect_links SET used_at = $2
      WHERE token_hash = $1 AND used_at IS NULL AND revoked_at IS NULL AND expires_at > $2`,
    [hash, now],
  );
  if (rowCount) return 'ok';
  return linkState(await getReconnectLinkByHash(db, hash), now);
}

/** Give a taken link back: the login it started did not connect its account. */
export async function releaseReconnectLink(db: Db, hash: string, takenAt: Date): Promise<void> {
  await db.query('UPDATE reconnect_links SET used_at = NULL WHERE token_hash = $1 AND used_at = $2', [hash, takenAt]);
}

/** Revoke every open link of an account (its owner was cleared, or it reconnected another way). */
export async function revokeReconnectLinks(db: Db, accountId: string, at: Date): Promise<number> {
  const { rowCount } = await db.query(
    'UPDATE reconnect_links SET revoked_at = $2 WHERE account_id = $1 AND used_at IS NULL AND revoked_at IS NULL',
    [accountId, at],
  );
  return rowCount ?? 0;
}

/** Delete links that expired, were used or revoked more than `keepMs` ago (housekeeping). */
export async function pruneReconnectLinks(db: Db, now: Date, keepMs = 30 * 86_400_000): Promise<number> {
  const before = new Date(now.getTime() - keepMs);
  const { rowCount } = await db.query(
    'DELETE FROM reconnect_links WHERE expires_at < $1 OR used_at < $1 OR revoked_at < $1',
    [before],
  );
  return rowCount ?? 0;
}

/** The newest reconnect link of an account, as its page and the accounts list show it. */
export interface LatestReconnectLink {
  accountId: string;
  delivery: ReconnectDelivery;
  createdAt: Date;
  expiresAt: Date;
  state: ReconnectLinkState;
  /** When a link was last emailed to the owner (this one or an earlier one), or null. */
  lastEmailedAt: Date | null;
}

/**
 * The newest reconnect link of each account (or of one), with when a link was last emailed to its
 * owner: one query however many accounts. Of two made in the same instant, the newer is the one
 * not revoked (making it revoked the other).
 */
export async function latestReconnectLinks(
  db: Db,
  now: Date,
  opts: { accountId?: string } = {},
): Promise<Map<string, LatestReconnectLink>> {
  const { rows } = await db.query<LinkRow & { delivery: ReconnectDelivery; last_emailed_at: Date | null }>(
    `SELECT DISTINCT ON (account_id) *,
            max(created_at) FILTER (WHERE delivery = 'email') OVER (PARTITION BY account_id) AS last_emailed_at
       FROM reconnect_links
      WHERE $1::text IS NULL OR account_id = $1
      ORDER BY account_id, created_at DESC, revoked_at IS NULL DESC, token_hash`,
    [opts.accountId ?? null],
  );
  return new Map(
    rows.map((r) => {
      const link = toLink(r);
      return [
        link.accountId,
        {
          accountId: link.accountId,
          delivery: r.delivery,
          createdAt: link.createdAt,
          expiresAt: link.expiresAt,
          state: linkState(link, now),
          lastEmailedAt: r.last_emailed_at,
        },
      ];
    }),
  );
}
