import type { Router } from 'express';
import { firstIssue, ownerInputSchema } from '../../accounts/owner-contact.ts';
import type { InvitationEmailOutcome } from '../../alerts/invitation-email.ts';
import { APP_NAME_RE, DEFAULT_APP, getApp } from '../../store/apps.ts';
import type { InvitationOwner } from '../../store/invitations.ts';
import type { AsyncHandler, DashboardContext } from './context.ts';
import { invitationPage } from './invitations-views.ts';
import type { Flash } from './layout.ts';

/**
 * Connecting accounts from the dashboard: the operator's own login (no invitation needed: the
 * operator is logged in), and invitations for owners (R-OWN-10: with the owner's contact,
 * optionally emailed to them).
 */
export function registerInvitationRoutes(guarded: Router, c: DashboardContext): void {
  guarded.get('/connect', c.wrap(connectNow(c)));
  guarded.post('/invitations', c.wrap(invite(c)));
}

const INVITATION_TTLS: Record<string, number> = { '1d': 86_400_000, '7d': 7 * 86_400_000, '30d': 30 * 86_400_000 };
const NO_CONNECT = 'Connecting needs APP_ID and APP_SECRET.\n';

function connectNow(c: DashboardContext): AsyncHandler {
  return async (_req, res) => {
    if (!c.deps.connect) {
      res.status(404).type('text/plain').send(NO_CONNECT);
      return;
    }
    res.set('Cache-Control', 'no-store').redirect(302, await c.deps.connect.start());
  };
}

function invite(c: DashboardContext): AsyncHandler {
  const { connect, logger } = c.deps;
  return async (req, res) => {
    if (!connect) {
      res.status(404).type('text/plain').send(NO_CONNECT);
      return;
    }
    const body = req.body as Record<string, unknown>;
    const ttl = INVITATION_TTLS[typeof body.expires === 'string' ? body.expires : '7d'] ?? INVITATION_TTLS['7d']!;
    // R-OWN-10: an invitation may carry the owner of the account it connects.
    const email = typeof body.owner_email === 'string' ? body.owner_email.trim() : '';
    const name = typeof body.owner_name === 'string' ? body.owner_name.trim() : '';
    const send = body.send === 'email';
    let owner: InvitationOwner | null = null;
    if (email !== '' || name !== '') {
      const parsed = ownerInputSchema.safeParse({ email, ...(name ? { name } : {}) });
      if (!parsed.success) {
        c.flashTo(res, { kind: 'error', text: `Invitation not created: ${firstIssue(parsed.error)}.` });
        return;
      }
      owner = { email: parsed.data.email, name: parsed.data.name ?? null, language: null };
    }
    if (send && !owner) {
      c.flashTo(res, { kind: 'error', text: "Invitation not created: emailing it needs the owner's email." });
      return;
    }
    // The app the account will connect through (Standard Access: one app per client).
    const app = await chosenApp(c, body.app);
    if (app === undefined) {
      c.flashTo(res, { kind: 'error', text: 'Invitation not created: no such app (see Apps).' });
      return;
    }
    const inv = await connect.invite(ttl, owner, { send, app });
    logger.info(
      { expiresAt: inv.expiresAt.toISOString(), emailed: inv.email?.emailed ?? false, app: app ?? DEFAULT_APP },
      'dashboard: invitation created',
    );
    c.pageHeaders(res);
    res
      .type('html')
      .send(
        invitationPage(
          { ...inv, app: app ?? DEFAULT_APP },
          { ...c.layoutOf(req, res), flash: invitationFlash(inv.email, inv.expiresAt) },
        ),
      );
  };
}

/** The app named by the form: null for the default app (or none chosen), undefined for an unknown one. */
async function chosenApp(c: DashboardContext, field: unknown): Promise<string | null | undefined> {
  const name = typeof field === 'string' ? field.trim() : '';
  if (name === '' || name === DEFAULT_APP) return null;
  if (!APP_NAME_RE.test(name)) return undefined;
  return (await getApp(c.deps.db, name)) ? name : undefined;
}

/** What the invitation page says first about its email: sent, or why not (the link is below to copy). */
function invitationFlash(email: InvitationEmailOutcome | null, expiresAt: Date): Flash | undefined {
  if (!email) return undefined;
  if (email.emailed)
    return {
      kind: 'ok',
      text: `Invitation emailed to ${email.to}; it works once, until ${expiresAt.toISOString().slice(0, 16).replace('T', ' ')} UTC.`,
    };
  return {
    kind: 'error',
    text:
      email.via === 'outbox'
        ? `Not emailed: SMTP_URL is not set, so the email was only written to the outbox (OUTBOX_DIR). Copy the link below and send it to ${email.to}.`
        : `Not emailed: ${email.error}. Copy the link below and send it to ${email.to}.`,
  };
}
