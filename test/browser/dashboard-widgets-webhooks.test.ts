import { mkdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runSyncNow } from '../../src/feeds/sync.ts';
import type { SimAccount } from '../../src/simulator/types.ts';
import type { WidgetDocument } from '../../src/schema/widget-document.ts';
import { importSimAccount } from '../support/accounts.ts';
import {
  buttonLooks,
  flash,
  launchChromium,
  logIn,
  startOperatorStack,
  submit,
  watchContext,
  type CspWatch,
  type OperatorStack,
} from '../support/operator-browser.ts';

/**
 * Widgets and webhooks on the dashboard, clicked in Chromium against `feedmirror serve` as it
 * runs (test/support/operator-browser.ts): a widget created, its preview rendered by the widget
 * script, its options set, a post hidden and shown again, its snippet copied, the widget deleted;
 * a webhook endpoint added (its secret shown once), its secret rotated, the endpoint removed. No
 * page may log a CSP violation; every form's POST and redirects are allowed by its form-action.
 */
let stack: OperatorStack;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let receiver: Server;
let hookUrl = '';
// The secret pages show a signing secret once: their bodies stay out of the audit's captures.
const watch: CspWatch = { violations: [], skipCapture: [/\/dashboard\/webhooks(\/wh_[a-z0-9]+\/rotate)?$/] };
let shop: SimAccount;
let bakery: SimAccount;
const SCREENSHOTS = path.resolve('test-artifacts/screenshots');

const publicDocument = async (id: string) => {
  const res = await fetch(`${stack.url}/widgets/${id}.json`);
  return { status: res.status, doc: res.ok ? ((await res.json()) as WidgetDocument) : null };
};
const preview = '.widget-preview [data-feedmirror-widget]';
/** The widget preview, once the script rendered it: the posts it shows and its classes. */
async function previewState(p: Page) {
  await expect.poll(() => p.locator(preview).getAttribute('data-feedmirror-state'), { timeout: 15_000 }).toBe('ready');
  return p.evaluate((sel) => {
    const root = document.querySelector(sel)!;
    return {
      posts: [...root.querySelectorAll('li.fmw-item')].map((li) => li.getAttribute('data-post-id')),
      classes: [...(root.querySelector('.fmw-w')?.classList ?? [])],
      header: [...root.querySelectorAll('.fmw-head .fmw-user')].map((u) => u.textContent),
    };
  }, preview);
}

beforeAll(async () => {
  stack = await startOperatorStack('dash-widgets');
  const db = await stack.ctx.migratedDb();
  const deps = await stack.ctx.feedDeps();
  shop = stack.sim.createAccount({ username: 'harbour.shop', posts: 5 });
  bakery = stack.sim.createAccount({ username: 'janes.bakery', posts: 4 });
  for (const a of [shop, bakery]) {
    await importSimAccount(db, stack.ctx.cipher, stack.sim, a);
    expect((await runSyncNow(deps, a.id)).publish?.outcome).toBe('written');
  }
  receiver = createServer((_req, res) => res.writeHead(204).end());
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/feedmirror`;
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.url });
  watchContext(context, watch);
  page = await context.newPage();
  await mkdir(SCREENSHOTS, { recursive: true });
  await logIn(page, stack);
}, 90_000);

afterEach(() => {
  expect(watch.violations.splice(0)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  receiver?.closeAllConnections();
  await new Promise((r) => (receiver ? receiver.close(r) : r(undefined)));
  await stack?.close();
});

describe('widgets on the dashboard, clicked in Chromium', () => {
  let id = '';

  it('R-WID-1: "Create widget" publishes it and opens its page, where the preview is the widget script rendering it', async () => {
    await page.locator('header a', { hasText: 'Widgets' }).click();
    await page.waitForURL(`${stack.url}/dashboard/widgets`);
    expect(await page.locator('main').textContent()).toContain('No widget yet.');
    await page.fill('input[name=name]', 'Shop wall');
    await page.selectOption('select[name=layout]', 'grid');
    await page.check(`input[name=accounts][value="${shop.id}"]`);
    await page.check(`input[name=accounts][value="${bakery.id}"]`);
    await submit(page, page.locator('button', { hasText: 'Create widget' }));
    id = /\/dashboard\/widgets\/(w_[a-z2-7]{10})$/.exec(page.url())?.[1] ?? '';
    expect(id).not.toBe('');
    expect(await flash(page)).toEqual({ kind: 'ok', text: 'Widget Shop wall created and published.' });
    const shown = await previewState(page);
    const { doc } = await publicDocument(id);
    expect(shown.posts).toEqual(doc!.posts.slice(0, 12).map((p) => p.id));
    expect(shown.posts.length).toBeGreaterThan(4);
    expect(shown.header).toEqual(['@harbour.shop', '@janes.bakery']);
    expect(shown.classes).toContain('fmw--grid');
  });

  it('R-WID-3: "Hide" takes a post out of the widget, "Unhide" brings it back', async () => {
    const row = page.locator('tr[data-post-id]').first();
    const postId = (await row.getAttribute('data-post-id'))!;
    // Exactly "Hide" (this widget): "Hide from the feed" is the account-level hide beside it.
    await submit(page, row.getByRole('button', { name: 'Hide', exact: true }));
    expect(await flash(page)).toEqual({ kind: 'ok', text: `Post ${postId} hidden.` });
    const hiddenRow = page.locator(`tr[data-post-id="${postId}"]`);
    expect(await hiddenRow.locator('td').nth(2).textContent()).toBe('hidden');
    expect((await previewState(page)).posts).not.toContain(postId);
    expect((await publicDocument(id)).doc!.posts.map((p) => p.id)).not.toContain(postId);

    await submit(page, hiddenRow.locator('button', { hasText: 'Unhide' }));
    expect(await flash(page)).toEqual({ kind: 'ok', text: `Post ${postId} shown again.` });
    expect(await page.locator(`tr[data-post-id="${postId}"] td`).nth(2).textContent()).toBe('shown');
    expect((await previewState(page)).posts).toContain(postId);
  });

  it('R-WID-6: "Save and publish" sets the options; the preview and the published document follow; a bad value is refused in words', async () => {
    await page.selectOption('select[name=layout]', 'list');
    await page.selectOption('select[name=theme]', 'dark');
    await page.selectOption('select[name=captions]', 'show');
    await page.uncheck('input[name=header]');
    await page.fill('input[name=limit]', '3');
    await page.fill('input[name=maxPosts]', '6');
    await page.fill('input[name=columnsDesktop]', '3');
    await page.fill('input[name=gap]', '12');
    await submit(page, page.locator('button', { hasText: 'Save and publish' }));
    expect(await flash(page)).toEqual({ kind: 'ok', text: 'Saved; published (list).' });
    const shown = await previewState(page);
    expect(shown.classes).toEqual(expect.arrayContaining(['fmw--list', 'fmw--dark', 'fmw-cap-show']));
    expect(shown.header).toEqual([]);
    expect(shown.posts).toHaveLength(3);
    expect(await page.locator(`${preview} button.fmw-more`).textContent()).toBe('Load more');
    const { doc } = await publicDocument(id);
    expect(doc!.layout).toBe('list');
    expect(doc!.options).toMatchObject({ theme: 'dark', header: false, limit: 3, maxPosts: 6, gap: 12 });
    expect(doc!.posts).toHaveLength(6);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'widget-page.png'), fullPage: true });
    // The form shows what is saved.
    expect(await page.locator('select[name=layout]').inputValue()).toBe('list');
    expect(await page.locator('input[name=header]').isChecked()).toBe(false);

    await page.fill('input[name=limit]', '9');
    await submit(page, page.locator('button', { hasText: 'Save and publish' }));
    expect(await flash(page)).toEqual({ kind: 'error', text: 'limit must not be more than maxPosts' });
    expect((await publicDocument(id)).doc!.options.limit).toBe(3);
  });

  it('"Copy the snippet" puts the embed snippet on the clipboard and says so', async () => {
    await page.locator('#copy-embed').click();
    await expect.poll(() => page.locator('#copy-status').textContent()).toBe('Copied.');
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    expect(copied).toBe(await page.locator('#embed-snippet').textContent());
    expect(copied).toContain(`data-feedmirror-widget="${id}"`);
  });

  it('every button of the widget pages looks alike (plain, primary, danger)', async () => {
    const seen = new Map<string, string[]>();
    for (const url of [`${stack.url}/dashboard/widgets`, `${stack.url}/dashboard/widgets/${id}`]) {
      await page.goto(url);
      for (const [look, labels] of await buttonLooks(page)) seen.set(look, [...(seen.get(look) ?? []), ...labels]);
    }
    expect([...seen.keys()].map((k) => k.split(' | ')[0]).sort(), JSON.stringify([...seen], null, 1)).toEqual([
      'danger',
      'plain',
      'primary',
    ]);
    const plain = [...seen].find(([k]) => k.startsWith('plain'))!;
    expect(plain[0]).toContain('bg rgb(246, 248, 250) | 1px | solid | 4px');
    expect(plain[1]).toEqual(expect.arrayContaining(['Copy the snippet', 'Hide']));
  });

  it('R-WID-5: "Delete" removes the widget and both its published objects', async () => {
    await page.goto(`${stack.url}/dashboard/widgets/${id}`);
    await submit(page, page.locator('button.danger', { hasText: 'Delete Shop wall' }));
    expect(page.url()).toBe(`${stack.url}/dashboard/widgets`);
    expect(await flash(page)).toEqual({ kind: 'ok', text: 'Widget Shop wall deleted with its published objects.' });
    expect(await page.locator(`tr[data-widget-id="${id}"]`).count()).toBe(0);
    expect((await publicDocument(id)).status).toBe(404);
    expect((await fetch(`${stack.url}/widgets/${id}.html`)).status).toBe(404);
  });
});

describe('webhooks on the dashboard, clicked in Chromium', () => {
  let endpoint = '';

  it('a refused address is said in words; "Add endpoint" shows the signing secret once', async () => {
    await page.locator('header a', { hasText: 'Webhooks' }).click();
    await page.waitForURL(`${stack.url}/dashboard/webhooks`);
    await page.fill('input[name=url]', 'ftp://example.com/hooks');
    await submit(page, page.locator('button', { hasText: 'Add endpoint' }));
    const refused = await flash(page);
    expect(refused.kind).toBe('error');
    expect(refused.text).toMatch(/http/);

    await page.fill('input[name=url]', hookUrl);
    await page.check('input[name=events][value="feed.updated"]');
    await page.check('input[name=events][value="account.removed"]');
    await page.fill('input[name=description]', 'marketing site');
    await submit(page, page.locator('button', { hasText: 'Add endpoint' }));
    endpoint = /^Signing secret of (wh_[a-z0-9]+)$/.exec((await page.locator('h1').textContent()) ?? '')?.[1] ?? '';
    expect(endpoint).not.toBe('');
    const secret = await page.locator('#secret').inputValue();
    expect(secret).toMatch(/^whsec_/);
    await page.locator('a.button', { hasText: 'Back to the webhooks' }).click();
    await page.waitForURL(`${stack.url}/dashboard/webhooks`);
    const row = page.locator(`tr[data-endpoint-id="${endpoint}"]`);
    expect(await row.textContent()).toContain(hookUrl);
    expect(await row.textContent()).toContain('feed.updatedaccount.removed');
    expect(await page.content()).not.toContain(secret); // shown once, never again
  });

  it('"Rotate secret" shows a new secret and how long the previous one still signs', async () => {
    await submit(page, page.locator(`tr[data-endpoint-id="${endpoint}"] button`, { hasText: 'Rotate secret' }));
    expect(await page.locator('h1').textContent()).toBe(`Signing secret of ${endpoint}`);
    expect(await page.locator('#secret').inputValue()).toMatch(/^whsec_/);
    expect(await page.locator('main').textContent()).toMatch(
      /The previous one also signs until \d{4}-\d\d-\d\d \d\d:\d\d UTC/,
    );
    await page.locator('a.button', { hasText: 'Back to the webhooks' }).click();
    await page.waitForURL(`${stack.url}/dashboard/webhooks`);
    expect(await page.locator(`tr[data-endpoint-id="${endpoint}"]`).textContent()).toContain(
      'previous secret signs until',
    );
    await page.locator(`tr[data-endpoint-id="${endpoint}"] a`, { hasText: endpoint }).click();
    await page.waitForURL(`${stack.url}/dashboard/webhooks/${endpoint}`);
    expect(await page.locator('h1').textContent()).toBe(`Deliveries to ${endpoint}`);
    expect(await page.locator('main').textContent()).toContain('No delivery yet.');
    for (const [look] of await buttonLooks(page)) expect(look).toMatch(/^plain \| bg rgb\(246, 248, 250\)/);
  });

  it('"Remove" deletes the endpoint with its log', async () => {
    await page.goto(`${stack.url}/dashboard/webhooks`);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'webhooks.png'), fullPage: true });
    const looks = [...(await buttonLooks(page)).keys()].map((k) => k.split(' | ')[0]).sort();
    expect(looks).toEqual(['danger', 'plain', 'primary']);
    await submit(page, page.locator(`tr[data-endpoint-id="${endpoint}"] button`, { hasText: 'Remove' }));
    expect(await flash(page)).toEqual({ kind: 'ok', text: `${endpoint} and its delivery log were removed.` });
    expect(await page.locator(`tr[data-endpoint-id="${endpoint}"]`).count()).toBe(0);
  });
});
