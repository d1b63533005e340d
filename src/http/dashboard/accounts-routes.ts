import type { Router } from 'express';
import { loadAccountHealth } from '../../accounts/health.ts';
import { listSyncRuns } from '../../store/accounts.ts';
import { listApps } from '../../store/apps.ts';
import { listCopyFailures } from '../../store/copy-failures.ts';
import { accountCopyTotals, listAccountDeliveries, listAccountEvents } from '../../store/health-facts.ts';
import { getRemovalHold } from '../../store/holds.ts';
import { listInvitations } from '../../store/invitations.ts';
import { latestReconnectLinks } from '../../store/owners.ts';
import { DASHBOARD_PATH } from '../auth/paths.ts';
import { accountNotFoundPage, accountPage } from './account-views.ts';
import { accountsPage, removeConfirmPage } from './accounts-views.ts';
import type { AsyncHandler, DashboardContext } from './context.ts';
import { loadAccountOverviews } from './data.ts';

/**
 * The accounts: the list (/dashboard), one account's page, and its removal (confirm page, then
 * the POST). The account's other actions are in account-actions-routes.ts and owner-routes.ts.
 */
export function registerAccountRoutes(guarded: Router, c: DashboardContext): void {
  guarded.get('/', c.wrap(accountsList(c)));
  guarded.get('/accounts/:id', c.wrap(accountView(c)));
  guarded.get('/accounts/:id/remove', c.wrap(removeConfirm(c)));
  guarded.post('/accounts/:id/remove', c.wrap(remove(c)));
}

function accountsList(c: DashboardContext): AsyncHandler {
  return async (req, res) => {
    const policy = c.healthPolicy();
    const [accounts, invitations, apps] = await Promise.all([
      loadAccountOverviews(c.deps.db, policy),
      listInvitations(c.deps.db, policy.now),
      listApps(c.deps.db),
    ]);
    c.pageHeaders(res);
    res.type('html').send(
      accountsPage(accounts, {
        ...c.layoutOf(req, res),
        warnings: c.storageWarnings(),
        invitations,
        apps: apps.map((a) => a.name),
      }),
    );
  };
}

function accountView(c: DashboardContext): AsyncHandler {
  const { db } = c.deps;
  return async (req, res) => {
    const account = await c.accountParam(req, res);
    if (!account) return;
    const policy = c.healthPolicy();
    const [[one], copies, failures, syncs, events, deliveries, removalHold, links] = await Promise.all([
      loadAccountHealth(db, policy, { accountId: account.id }),
      accountCopyTotals(db, account.id),
      listCopyFailures(db, account.id),
      listSyncRuns(db, account.id),
      listAccountEvents(db, account.id),
      listAccountDeliveries(db, account.id),
      getRemovalHold(db, account.id),
      latestReconnectLinks(db, policy.now, { accountId: account.id }),
    ]);
    c.pageHeaders(res);
    if (!one) {
      // Removed between the two reads.
      res
        .status(404)
        .type('html')
        .send(accountNotFoundPage(account.id, c.layoutOf(req, res)));
      return;
    }
    res.type('html').send(
      accountPage(
        {
          account,
          facts: one.facts,
          health: one.health,
          copies,
          failures,
          syncs,
          events,
          deliveries,
          removalHold,
          now: policy.now,
          ownerAlertsOn: c.deps.ownerAlertsOn ?? false,
          reconnectLink: links.get(account.id) ?? null,
          linksOffered: c.deps.ownerLinks !== undefined,
        },
        c.layoutOf(req, res),
      ),
    );
  };
}

function removeConfirm(c: DashboardContext): AsyncHandler {
  return async (req, res) => {
    const account = await c.accountParam(req, res);
    if (!account) return;
    c.pageHeaders(res);
    res.type('html').send(removeConfirmPage(account, c.layoutOf(req, res)));
  };
}

function remove(c: DashboardContext): AsyncHandler {
  return async (req, res) => {
    const account = await c.accountParam(req, res);
    if (!account) return;
    if ((req.body as Record<string, unknown>).confirm !== 'yes') {
      res.redirect(303, `${DASHBOARD_PATH}/accounts/${encodeURIComponent(account.id)}/remove`);
      return;
    }
    // The lifecycle stops the schedules first, then deletes the account (its history stays).
    await c.deps.lifecycle.apply(account.id, 'removed');
    c.deps.logger.info({ accountId: account.id }, 'dashboard: account removed');
    c.flashTo(res, {
      kind: 'ok',
      text: `@${account.username} was removed. Its published feed and copies stay in storage.`,
    });
  };
}
