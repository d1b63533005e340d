/**
 * An invitation to connect, emailed to the owner it carries (R-OWN-10) by feedmirror itself: the
 * `owner-invitation` template (BRAND_*, EMAIL_TEMPLATES_DIR) through the alerts' mailer, so SMTP
 * when SMTP_URL is set and otherwise an .eml file in OUTBOX_DIR, which reaches nobody: that is
 * said as "not emailed", with the link left for the operator to send. The email carries the
 * invitation link, until when it works and whom it is for; nothing else (no token, no secret:
 * the mailer's guard still redacts all but the declared link, R-TOK-11). The invitation row
 * records to whom, when and how it left, and the dashboard's list of invitations says so.
 */
import { maskEmail } from '../accounts/owner-contact.ts';
import type { Db } from '../store/db.ts';
import { recordInvitationEmail, type InvitationOwner } from '../store/invitations.ts';
import type { Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import { redactText } from '../util/redact.ts';
import type { Mailer } from './mailer.ts';
import { renderEmail, type Brand, type EmailTemplates } from './templates.ts';

export interface InvitationEmailDeps {
  db: Db;
  mailer: Pick<Mailer, 'send'>;
  clock: Clock;
  logger: Logger;
  emailTemplates?: EmailTemplates | undefined;
  brand?: Brand | undefined;
}

/** The invitation to email: its row (by digest), its link (made by the caller) and its owner. */
export interface InvitationToEmail {
  hash: string;
  url: string;
  expiresAt: Date;
  owner: Pick<InvitationOwner, 'email' | 'name'>;
}

/** What happened to the email: sent through SMTP, written to the outbox (not sent), or failed. */
export type InvitationEmailOutcome =
  | { emailed: true; to: string; at: Date; via: 'smtp' }
  | { emailed: false; to: string; at: Date; via: 'outbox'; path: string | null }
  | { emailed: false; to: string; via: null; error: string };

/** Email the invitation to its owner now, and record it on the invitation. Never throws for a mail failure. */
export async function emailInvitation(
  deps: InvitationEmailDeps,
  inv: InvitationToEmail,
): Promise<InvitationEmailOutcome> {
  const to = inv.owner.email;
  const email = renderEmail(
    'owner-invitation',
    {
      connectUrl: inv.url,
      linkExpiresAt: inv.expiresAt,
      ownerName: inv.owner.name ?? undefined,
      ownerEmail: to,
      brand: deps.brand,
    },
    deps.emailTemplates,
  );
  let sent: { delivered: 'smtp' | 'outbox'; path?: string };
  try {
    // The link is the email's purpose: the mailer's guard keeps it whole (its `?invite=` too).
    sent = await deps.mailer.send({ ...email, to, links: [inv.url] });
  } catch (err) {
    const error = redactText((err as Error).message).slice(0, 200);
    deps.logger.warn({ to: maskEmail(to), error }, 'invitation email failed; the link is left to send by hand');
    return { emailed: false, to, via: null, error };
  }
  const at = deps.clock.now();
  await recordInvitationEmail(deps.db, inv.hash, { to, at, via: sent.delivered });
  deps.logger.info(
    { to: maskEmail(to), via: sent.delivered, invitationExpiresAt: inv.expiresAt.toISOString() },
    sent.delivered === 'smtp'
      ? 'invitation emailed to the owner'
      : 'invitation email written to the outbox (no SMTP_URL set): not sent',
  );
  return sent.delivered === 'smtp'
    ? { emailed: true, to, at, via: 'smtp' }
    : { emailed: false, to, at, via: 'outbox', path: sent.path ?? null };
}
