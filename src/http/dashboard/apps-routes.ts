import type { Router } from 'express';
import { accountsPerApp, DEFAULT_APP, listApps } from '../../store/apps.ts';
import type { AsyncHandler, DashboardContext } from './context.ts';
import { appsPage, type ListedApp } from './apps-views.ts';

/**
 * The platform apps (Standard Access: one app per client): each with its app id, how many
 * accounts it connects, and the fault the platform last said against it. Adding an app or
 * giving it a new secret stays with `feedmirror apps` (the secret is read from standard input,
 * never typed into a page); this page never shows a secret.
 */
export function registerAppRoutes(guarded: Router, c: DashboardContext): void {
  guarded.get('/apps', c.wrap(appsList(c)));
}

/** The default app (APP_ID/APP_SECRET, no row) first, then the added apps by name. */
export async function loadApps(c: DashboardContext): Promise<ListedApp[]> {
  const [apps, counts] = await Promise.all([listApps(c.deps.db), accountsPerApp(c.deps.db)]);
  const defaultApp: ListedApp[] =
    c.deps.defaultAppId !== undefined || (counts.get(DEFAULT_APP) ?? 0) > 0
      ? [{ name: DEFAULT_APP, appId: c.deps.defaultAppId ?? null, accounts: counts.get(DEFAULT_APP) ?? 0, fault: null }]
      : [];
  return [
    ...defaultApp,
    ...apps.map((a) => ({ name: a.name, appId: a.appId, accounts: counts.get(a.name) ?? 0, fault: a.fault })),
  ];
}

function appsList(c: DashboardContext): AsyncHandler {
  return async (req, res) => {
    const apps = await loadApps(c);
    c.pageHeaders(res);
    res.type('html').send(appsPage(apps, c.layoutOf(req, res)));
  };
}
