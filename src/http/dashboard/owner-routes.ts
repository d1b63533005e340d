import type { Router } from 'express';
import { firstIssue, ownerInputSchema } from '../../accounts/owner-contact.ts';
import { emailOwnerLink, makeOwnerLink, OwnerLinkRefused } from '../../alerts/owner-links.ts';
import { clearOwner, setOwner } from '../../store/owners.ts';
import { DASHBOARD_PATH } from '../auth/paths.ts';
import { reconnectLinkPage } from './account-views.ts';
import type { AsyncHandler, DashboardContext } from './context.ts';

/**
 * An account's owner, from its page: set or clear them (R-OWN-10), and a new reconnect link
 * for an account waiting for them (R-OWN-12: the earlier ones stop working), emailed or shown
 * once to copy.
 */
export function registerOwnerRoutes(guarded: Router, c: DashboardContext): void {
  guarded.post('/accounts/:id/owner', c.wrap(saveOwner(c)));
  guarded.post('/accounts/:id/owner/clear', c.wrap(clearOwnerOf(c)));
  guarded.post('/accounts/:id/reconnect-link', c.wrap(newReconnectLink(c)));
}

const accountPath = (id: string, section: string) => `${DASHBOARD_PATH}/accounts/${encodeURIComponent(id)}#${section}`;

/** R-OWN-10: the owner of an account, set from its page (CSRF-checked like every POST). */
function saveOwner(c: DashboardContext): AsyncHandler {
  const { db, clock, logger } = c.deps;
  return async (req, res) => {
    const account = await c.accountParam(req, res);
    if (!account) return;
    const body = req.body as Record<string, unknown>;
    const to = accountPath(account.id, 'owner');
    const name = typeof body.owner_name === 'string' ? body.owner_name.trim() : '';
    const parsed = ownerInputSchema.safeParse({
      email: typeof body.owner_email === 'string' ? body.owner_email : '',
      ...(name ? { name } : {}),
    });
    if (!parsed.success) {
      c.flashTo(res, { kind: 'error', text: `Owner not saved: ${firstIssue(parsed.error)}.` }, to);
      return;
    }
    await setOwner(
      db,
      account.id,
      { email: parsed.data.email, name: parsed.data.name ?? null, alerts: body.owner_alerts === 'on' },
      clock.now(),
    );
    logger.info({ accountId: account.id }, 'dashboard: account owner saved');
    c.flashTo(res, { kind: 'ok', text: `The owner of @${account.username} is saved.` }, to);
  };
}

function clearOwnerOf(c: DashboardContext): AsyncHandler {
  const { db, clock, logger } = c.deps;
  return async (req, res) => {
    const account = await c.accountParam(req, res);
    if (!account) return;
    await clearOwner(db, account.id, clock.now());
    logger.info({ accountId: account.id }, 'dashboard: account owner cleared');
    c.flashTo(
      res,
      { kind: 'ok', text: `@${account.username} has no owner recorded now: alerts go to you only.` },
      accountPath(account.id, 'owner'),
    );
  };
}

/** A new reconnect link: emailed to the owner like the alert's, or shown once to copy. */
function newReconnectLink(c: DashboardContext): AsyncHandler {
  const { ownerLinks } = c.deps;
  return async (req, res) => {
    const account = await c.accountParam(req, res);
    if (!account) return;
    const to = accountPath(account.id, 'reconnect');
    if (!ownerLinks) {
      c.flashTo(res, { kind: 'error', text: 'This server makes no reconnect links.' }, to);
      return;
    }
    const send = (req.body as Record<string, unknown>).send;
    if (send !== 'email' && send !== 'copy') {
      c.flashTo(res, { kind: 'error', text: 'No link sent: the form names neither email nor copy.' }, to);
      return;
    }
    try {
      if (send === 'email') {
        const sent = await emailOwnerLink(ownerLinks, account.id);
        c.flashTo(
          res,
          {
            kind: 'ok',
            text: `A new reconnect link was ${sent.delivered === 'outbox' ? 'written to the outbox (OUTBOX_DIR; no SMTP_URL) for' : 'emailed to'} ${sent.to}; it works until ${sent.expiresAt.toISOString().slice(0, 16).replace('T', ' ')} UTC. Earlier links no longer work.`,
          },
          to,
        );
        return;
      }
      const link = await makeOwnerLink(ownerLinks, account.id);
      c.pageHeaders(res);
      res.type('html').send(reconnectLinkPage(account, link, c.layoutOf(req, res)));
    } catch (err) {
      if (!(err instanceof OwnerLinkRefused)) throw err;
      c.flashTo(res, { kind: 'error', text: `No link sent: ${err.message}.` }, to);
    }
  };
}
