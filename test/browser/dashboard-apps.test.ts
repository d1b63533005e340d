import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { addApp, recordAppFault, setAccountApp } from '../../src/store/apps.ts';
import type { Db } from '../../src/store/db.ts';
import { importSimAccount } from '../support/accounts.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import {
  launchChromium,
  logIn,
  startOperatorStack,
  submit,
  watchContext,
  type CspWatch,
  type OperatorStack,
} from '../support/operator-browser.ts';

/**
 * The platform apps in the operator's dashboard, clicked in Chromium against `feedmirror serve`:
 * the Apps page reached from the navigation (each app's id, its accounts, its last fault with
 * its time, never its secret), the app each account connects through on the accounts list and
 * the account's page, and an invitation sent through a chosen app.
 */
let stack: OperatorStack;
let db: Db;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const watch: CspWatch = { violations: [], skipCapture: [] };
let acme: { appId: string; appSecret: string };
let shopId: string;
let bakeryId: string;

beforeAll(async () => {
  stack = await startOperatorStack('dash-apps');
  db = await stack.ctx.migratedDb();
  const { sim } = stack;
  acme = sim.addApp();
  registerSecretForAudit(acme.appSecret);
  await addApp(db, stack.ctx.cipher, { name: 'acme', appId: acme.appId, appSecret: acme.appSecret }, new Date());
  const shop = sim.createAccount({ username: 'harbour.shop', posts: 2 });
  const bakery = sim.createAccount({ username: 'janes.bakery', posts: 2 });
  await importSimAccount(db, stack.ctx.cipher, sim, shop);
  await importSimAccount(db, stack.ctx.cipher, sim, bakery);
  await setAccountApp(db, bakery.id, 'acme');
  shopId = shop.id;
  bakeryId = bakery.id;
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  watchContext(context, watch);
  page = await context.newPage();
}, 90_000);

afterEach(() => {
  expect(watch.violations.splice(0)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

describe('the apps in the dashboard, clicked in Chromium', () => {
  it('the accounts list and the account page name each account’s app', async () => {
    await logIn(page, stack);
    expect(await page.locator(`tr[data-account-id="${shopId}"] [data-app]`).textContent()).toBe('app default');
    expect(await page.locator(`tr[data-account-id="${bakeryId}"] [data-app]`).textContent()).toBe('app acme');
    await page.locator(`tr[data-account-id="${bakeryId}"] a`, { hasText: '@janes.bakery' }).click();
    await page.waitForURL(`${stack.url}/dashboard/accounts/${bakeryId}`);
    expect(await page.locator('main [data-app]').getAttribute('data-app')).toBe('acme');
  });

  it('"Apps" in the navigation lists each app with its id, accounts and last fault, never a secret', async () => {
    const at = new Date('2026-11-20T08:30:00Z');
    await recordAppFault(
      db,
      'acme',
      { kind: 'app_secret_refused', message: 'the platform refuses the app secret (code 101)' },
      at,
    );
    await page.goto(`${stack.url}/dashboard`);
    await page.locator('header a', { hasText: 'Apps' }).click();
    await page.waitForURL(`${stack.url}/dashboard/apps`);
    expect(await page.locator('h1').textContent()).toBe('Apps');
    const rows = page.locator('table.apps tbody tr');
    expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-app')))).toEqual(['default', 'acme']);
    const def = page.locator('tr[data-app="default"]');
    expect(await def.locator('[data-app-id]').textContent()).toBe(stack.sim.appId);
    expect(await def.locator('[data-accounts]').textContent()).toBe('1');
    expect(await def.locator('[data-fault]').getAttribute('data-fault')).toBe('none');
    const row = page.locator('tr[data-app="acme"]');
    expect(await row.locator('[data-app-id]').textContent()).toBe(acme.appId);
    expect(await row.locator('[data-accounts]').textContent()).toBe('1');
    expect(await row.locator('[data-fault]').getAttribute('data-fault')).toBe('app_secret_refused');
    const text = (await row.textContent()) ?? '';
    expect(text).toContain('since 2026-11-20 08:30 UTC');
    expect(text).toContain('feedmirror apps set acme --secret-file');
    const html = await page.content();
    expect(html).not.toContain(acme.appSecret);
    expect(html).not.toContain(stack.sim.appSecret);
    // The health of the app's account names the app and the fix; the default app's account is untouched.
    await page.goto(`${stack.url}/dashboard/accounts/${bakeryId}`);
    const health = (await page.locator('#health').textContent()) ?? '';
    expect(health).toContain('the platform refuses the secret of app acme since 2026-11-20 08:30 UTC');
    expect(health).toContain('feedmirror apps set acme --secret-file FILE');
    await page.goto(`${stack.url}/dashboard`);
    expect(await page.locator(`tr[data-account-id="${shopId}"] td.health`).textContent()).not.toContain('acme');
  });

  it('"Invite an owner" offers the apps (the default first) and the invitation connects through the chosen one', async () => {
    await page.goto(`${stack.url}/dashboard`);
    const select = page.locator('form[action="/dashboard/invitations"] select[name=app]');
    expect(await select.locator('option').allTextContents()).toEqual(['default', 'acme']);
    expect(await select.inputValue()).toBe('default');
    await select.selectOption('acme');
    await page.fill('form[action="/dashboard/invitations"] input[name=owner_email]', 'acme.owner@example.com');
    await submit(page, page.locator('button', { hasText: 'Invite an owner' }));
    expect(await page.locator('h1').textContent()).toBe('Invitation created');
    expect(await page.locator('main [data-app]').getAttribute('data-app')).toBe('acme');
    const made = await db.query<{ owner_email: string | null; app_name: string | null }>(
      'SELECT owner_email, app_name FROM invitations',
    );
    expect(made.rows).toEqual([{ owner_email: 'acme.owner@example.com', app_name: 'acme' }]);
  });
});
