/**
 * Alerts to an account's owner (R-OWN-11): with OWNER_ALERTS on, an owner recorded on the account
 * and their alerts not turned off there, each operator alert of the expiry ladder and the reauth
 * alert also goes to the owner, with a one-time reconnect link bound to the account
 * (`PUBLIC_URL/reconnect/<token>`, the owner status page). The owner's copy is claimed in
 * alerts_sent under its own recipient, so neither recipient is emailed twice for one threshold
 * and token life, across restarts and however many workers sweep.
 *
 * The emails are the templates' (src/alerts/templates.ts renderEmail): 'owner-expiry' and
 * 'owner-reauth' get { username, reconnectUrl, linkExpiresAt, expiresAt + daysLeft | cause, brand };
 * the operator's copy gets ownerNotified: { maskedEmail, at } from ownerNotified() below.
 */
import type { Db } from '../store/db.ts';
import type { Logger } from '../util/logger.ts';
import { redactText } from '../util/redact.ts';
import { maskEmail } from '../accounts/owner-contact.ts';
import { forgetAlert, recordAlertOnce, alertSentAt, type AlertKey } from '../store/alerts-sent.ts';
import { getOwner, createReconnectLink, revokeReconnectLinks, type AccountOwner } from '../store/owners.ts';
import type { EventSink } from '../webhooks/events.ts';
import type { Mailer } from './mailer.ts';
import type { OwnerNotified, RenderedEmail as Email } from './templates.ts';
import type { ErrorKind } from '../util/error-kinds.ts';

export interface OwnerAlertSettings {
  /** OWNER_ALERTS. */
  enabled: boolean;
  /** RECONNECT_LINK_TTL in ms. */
  linkTtlMs: number;
}

/** The reconnect link in an owner's email: the owner status page. */
export function reconnectUrl(publicUrl: string, token: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/reconnect/${token}`;
}

/** What the operator's copy says about the owner. */
export type OwnerOutcome =
  { told: true; email: string; at: Date; now: boolean } | { told: false; email: string; error: string };

/** What the operator's copy says about the owner (R-OWN-11): told, when, the address masked. */
export function ownerNotified(o: OwnerOutcome | null): OwnerNotified | undefined {
  return o?.told ? { maskedEmail: maskEmail(o.email), at: o.at } : undefined;
}

/** Why the connection stopped, in words for someone who is not technical. */
export function ownerCause(kind: ErrorKind | null): string {
  switch (kind) {
    case 'password_changed':
      return "the account's password was changed";
    case 'token_expired':
      return 'the connection reached the end of its validity';
    case 'app_removed':
      return "the website's app was removed from the account's settings";
    case 'checkpoint':
      return 'the platform asks you to confirm something in the app first (a security check)';
    case 'missing_permission':
      return 'the permission to read your posts was not granted';
    default:
      return 'the platform no longer accepts the connection';
  }
}

/** The owner's link as the templates get it. */
export interface OwnerLinkVars {
  reconnectUrl: string;
  linkExpiresAt: Date;
}

export interface OwnerAlertDeps {
  db: Db;
  mailer: Pick<Mailer, 'send'>;
  logger: Logger;
  publicUrl: string;
  events: EventSink;
  owners?: OwnerAlertSettings;
}

/** Whether this account's owner gets alerts now: deployment on, owner known, theirs not off. */
export async function ownerToAlert(deps: OwnerAlertDeps, accountId: string): Promise<AccountOwner | null> {
  if (!deps.owners?.enabled) return null;
  const owner = await getOwner(deps.db, accountId);
  return owner && owner.alerts ? owner : null;
}

/**
 * The owner's copy of one alert, once per key: claim (recipient 'owner'), make the link (the
 * older links of the account are revoked), send, then the account.owner_notified event. A failed
 * send releases the claim and revokes the link nobody received (the next sweep retries). When
 * the owner's copy went out before (an earlier sweep, another worker), says when.
 */
export async function notifyOwner(
  deps: OwnerAlertDeps,
  key: AlertKey,
  account: { id: string; username: string },
  build: (input: OwnerLinkVars) => Email,
  now: Date,
): Promise<OwnerOutcome | null> {
  const owner = await ownerToAlert(deps, account.id);
  if (!owner) return null;
  const ownerKey: AlertKey = { ...key, recipient: 'owner' };
  if (!(await recordAlertOnce(deps.db, { ...ownerKey, at: now }))) {
    const at = await alertSentAt(deps.db, ownerKey);
    return at ? { told: true, email: owner.email, at, now: false } : null;
  }
  const link = await createReconnectLink(deps.db, {
    accountId: account.id,
    reason: key.kind,
    now,
    ttlMs: deps.owners!.linkTtlMs,
  });
  const email = build({ reconnectUrl: reconnectUrl(deps.publicUrl, link.token), linkExpiresAt: link.expiresAt });
  try {
    await deps.mailer.send({ ...email, to: owner.email });
  } catch (err) {
    await forgetAlert(deps.db, ownerKey);
    await revokeReconnectLinks(deps.db, account.id, now);
    const error = redactText((err as Error).message);
    deps.logger.warn(
      { accountId: account.id, to: maskEmail(owner.email), kind: key.kind, thresholdDays: key.thresholdDays, error },
      'owner alert email failed; the next sweep retries',
    );
    return { told: false, email: owner.email, error: 'the mail server refused or did not answer' };
  }
  deps.logger.info(
    {
      accountId: account.id,
      username: account.username,
      to: maskEmail(owner.email),
      kind: key.kind,
      thresholdDays: key.thresholdDays,
      linkExpiresAt: link.expiresAt.toISOString(),
    },
    'owner alert sent',
  );
  // R-OWN-14: a site's backend learns the owner was asked (never the address nor the link).
  await deps.events.emit({
    type: 'account.owner_notified',
    data: {
      accountId: account.id,
      username: account.username,
      alert: key.kind,
      thresholdDays: key.thresholdDays,
      linkExpiresAt: link.expiresAt.toISOString(),
    },
  });
  return { told: true, email: owner.email, at: now, now: true };
}
