import { DEFAULT_APP, type StoredApp } from '../../store/apps.ts';
import { html, join } from '../../util/html.ts';
import { layout, when, type LayoutOptions } from './layout.ts';

/** One app as the apps page lists it: never its secret. */
export interface ListedApp {
  name: string;
  /** The platform's app id; null for the default app when APP_ID is not set. */
  appId: string | null;
  accounts: number;
  fault: StoredApp['fault'];
}

const FAULT_WORDS: Record<NonNullable<StoredApp['fault']>['kind'], string> = {
  app_secret_refused: 'the platform refuses its secret',
  app_restricted: 'the platform restricted the app',
};

/** What to do about an app's fault (the same fix `feedmirror apps show` gives). */
const FAULT_FIX: Record<NonNullable<StoredApp['fault']>['kind'], (name: string) => string> = {
  app_secret_refused: (name) => `give it its current secret: feedmirror apps set ${name} --secret-file FILE`,
  app_restricted: () => "fix the app in the platform's developer settings; the other apps' accounts are not affected",
};

function faultCell(a: ListedApp) {
  if (!a.fault) return html`<span class="ok" data-fault="none">none</span>`;
  return html`<span class="bad" data-fault="${a.fault.kind}">${FAULT_WORDS[a.fault.kind]}</span><br><small>since ${when(a.fault.at)}</small><br><small>${a.fault.message}</small><br><small>Fix: ${FAULT_FIX[a.fault.kind](a.name)}</small>`;
}

export function appsPage(apps: ListedApp[], o: LayoutOptions): string {
  const rows = apps.map(
    (a) =>
      html`<tr data-app="${a.name}"><td><strong>${a.name}</strong>${a.name === DEFAULT_APP ? html`<br><small class="muted">APP_ID / APP_SECRET</small>` : ''}</td><td data-app-id="${a.appId ?? ''}">${a.appId ?? html`<span class="muted">APP_ID not set</span>`}</td><td class="num" data-accounts="${a.accounts}">${a.accounts}</td><td>${faultCell(a)}</td></tr>`,
  );
  const table = apps.length
    ? html`<table class="apps"><thead><tr><th>App</th><th>App id</th><th>Accounts</th><th>Last fault</th></tr></thead><tbody>${join(rows, '\n')}</tbody></table>`
    : html`<p>No app yet: set APP_ID and APP_SECRET, or add one with <code>feedmirror apps add</code>.</p>`;
  const body = html`<h1>Apps</h1>
<p class="muted">Each client's accounts connect through their own platform app (Standard Access). Add an app, or give one a new secret, with <code>feedmirror apps add|set</code>: the secret is read from standard input and never shown here.</p>
${table}`;
  return layout('Apps', body, o);
}
