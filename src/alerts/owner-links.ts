/**
 * A new reconnect link for an account whose owner must log in again, made by the operator on the
 * account's page: emailed to the owner with the reauth alert's own template, or shown to the
 * operator once to pass on another way. Either revokes the account's earlier links (R-OWN-12), so
 * the newest link is the only one that works. An emailed link is an owner alert like the sweep's:
 * the account.owner_notified event follows (R-OWN-14).
 */
import { maskEmail } from '../accounts/owner-contact.ts';
import { getAccount } from '../store/accounts.ts';
import type { Db } from '../store/db.ts';
import { createReconnectLink, getOwner, revokeReconnectLinks } from '../store/owners.ts';
import type { Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import { redactText } from '../util/redact.ts';
import type { EventSink } from '../webhooks/events.ts';
import type { Mailer } from './mailer.ts';
import { ownerCause, reconnectUrl } from './owner.ts';
import { renderEmail, type Brand, type EmailTemplates } from './templates.ts';

export interface OwnerLinkDeps {
  db: Db;
  mailer: Pick<Mailer, 'send'>;
  clock: Clock;
  logger: Logger;
  /** PUBLIC_URL: the link is PUBLIC_URL/reconnect/<token>, the owner status page. */
  publicUrl: string;
  events: EventSink;
  /** RECONNECT_LINK_TTL in ms. */
  linkTtlMs: number;
  emailTemplates?: EmailTemplates | undefined;
  brand?: Brand | undefined;
}

/** Why no link was made: the account is gone, needs no owner login, or has no owner to email. */
export class OwnerLinkRefused extends Error {
  override readonly name = 'OwnerLinkRefused';
}

/** The account a link is made for: it must be waiting for its owner (reauth_required). */
async function accountNeedingOwner(deps: OwnerLinkDeps, accountId: string) {
  const account = await getAccount(deps.db, accountId);
  if (!account) throw new OwnerLinkRefused('no such account any more');
  if (account.status !== 'reauth_required')
    throw new OwnerLinkRefused(`@${account.username} is connected: no owner login is needed`);
  return account;
}

/** A new link shown to the operator (only now: only its digest is stored). */
export async function makeOwnerLink(
  deps: OwnerLinkDeps,
  accountId: string,
): Promise<{ url: string; expiresAt: Date; username: string }> {
  const account = await accountNeedingOwner(deps, accountId);
  const link = await createReconnectLink(deps.db, {
    accountId,
    reason: 'reauth',
    now: deps.clock.now(),
    ttlMs: deps.linkTtlMs,
    delivery: 'copy',
  });
  deps.logger.info(
    { accountId, linkExpiresAt: link.expiresAt.toISOString() },
    'dashboard: reconnect link made to copy',
  );
  return { url: reconnectUrl(deps.publicUrl, link.token), expiresAt: link.expiresAt, username: account.username };
}

/**
 * A new link emailed to the account's owner now. A failed send revokes the link nobody received
 * (the earlier ones were revoked when it was made) and throws, saying so.
 */
export async function emailOwnerLink(
  deps: OwnerLinkDeps,
  accountId: string,
): Promise<{ to: string; expiresAt: Date; username: string; delivered: 'smtp' | 'outbox' }> {
  const account = await accountNeedingOwner(deps, accountId);
  const owner = await getOwner(deps.db, accountId);
  if (!owner) throw new OwnerLinkRefused(`@${account.username} has no owner recorded: set one, or make a link to copy`);
  const now = deps.clock.now();
  const link = await createReconnectLink(deps.db, {
    accountId,
    reason: 'reauth',
    now,
    ttlMs: deps.linkTtlMs,
    delivery: 'email',
  });
  const email = renderEmail(
    'owner-reauth',
    {
      username: account.username,
      cause: ownerCause(account.statusReasonKind ?? null),
      reconnectUrl: reconnectUrl(deps.publicUrl, link.token),
      linkExpiresAt: link.expiresAt,
      brand: deps.brand,
    },
    deps.emailTemplates,
  );
  let delivered: 'smtp' | 'outbox';
  try {
    ({ delivered } = await deps.mailer.send({ ...email, to: owner.email }));
  } catch (err) {
    await revokeReconnectLinks(deps.db, accountId, now);
    const error = redactText((err as Error).message).slice(0, 200);
    deps.logger.warn({ accountId, to: maskEmail(owner.email), error }, 'dashboard: reconnect link email failed');
    throw new OwnerLinkRefused(
      `the email to ${owner.email} could not be sent (${error}), so no link works now: try again, or make a link to copy`,
    );
  }
  deps.logger.info(
    { accountId, to: maskEmail(owner.email), linkExpiresAt: link.expiresAt.toISOString() },
    'dashboard: reconnect link emailed to the owner',
  );
  // R-OWN-14: never the address nor the link.
  await deps.events.emit({
    type: 'account.owner_notified',
    data: {
      accountId,
      username: account.username,
      alert: 'reauth',
      thresholdDays: 0,
      linkExpiresAt: link.expiresAt.toISOString(),
    },
  });
  return { to: owner.email, expiresAt: link.expiresAt, username: account.username, delivered };
}
