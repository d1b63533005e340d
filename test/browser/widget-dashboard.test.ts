import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSyncNow } from '../../src/feeds/sync.ts';
import type { Feed } from '../../src/schema/v1.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { listPostIds } from '../../src/store/posts.ts';
import { HOUR } from '../../src/util/clock.ts';
import { createWidget } from '../../src/widgets/widgets.ts';
import { importSimAccount } from '../support/accounts.ts';
import { DASHBOARD_USER, startServeForTest, type ServedForTest, stopServe } from '../security/support.ts';

/**
 * The operator hides a post from its account's feed on a widget's dashboard page, in headless
 * Chromium against `serve` as in production (non-loopback address, login, CSRF): "Hide from the
 * feed" takes it out of feeds/<id>.json and the widget (R-OWN-17), the page lists it under "Hidden
 * from the feed", and "Show in the feed" puts it back. The post stays stored throughout; no
 * Content-Security-Policy violation on the way.
 */
const CHROMIUM = '/usr/bin/chromium';
const CSP_VIOLATION = 'violates the following Content Security Policy directive';

let sim: Simulator;
let serve: ServedForTest;
let browser: Browser;
let accountId = '';
let widgetId = '';

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium`);
  // Both clocks at the real time: serve checks the token's expiry with its own.
  sim = await startSimulator({ start: Date.now() });
  serve = await startServeForTest('widgetdashhide', {
    GRAPH_URL: sim.graphUrl,
    OAUTH_TOKEN_URL: sim.oauthTokenUrl,
    MEDIA_ALLOWED_HOSTS: sim.imageHost,
    MEDIA_VARIANT_WIDTHS: '160',
    MEDIA_PUBLIC_URL: 'http://media.example.test/',
    HTTP_MAX_RETRIES: '0',
  });
  const now = sim.clock.now().getTime();
  const acc = sim.createAccount({
    username: 'dash.hide',
    posts: [1, 2, 3].map((h) => ({
      kind: 'image' as const,
      caption: `dash post ${h}`,
      timestamp: new Date(now - h * HOUR),
    })),
  });
  accountId = acc.id;
  const db = await serve.ctx.migratedDb();
  await importSimAccount(db, serve.ctx.cipher, sim, acc);
  await serve.ctx.lifecycle.apply(accountId, 'connected');
  const r = await runSyncNow(await serve.ctx.feedDeps(), accountId, { manual: true });
  expect(r.sync).toMatchObject({ outcome: 'synced', complete: true });
  widgetId = (await createWidget(serve.ctx.widgetDeps, { name: 'Front page', accounts: [accountId] })).widget.id;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stopServe(serve);
  await sim?.close();
});

async function feedIds(): Promise<string[]> {
  const obj = await serve.ctx.storage.get(`feeds/${accountId}.json`);
  return (JSON.parse(obj!.body.toString('utf8')) as Feed).posts.map((p) => p.id);
}

async function widgetIds(): Promise<string[]> {
  const obj = await serve.ctx.storage.get(`widgets/${widgetId}.json`);
  return (JSON.parse(obj!.body.toString('utf8')) as { posts: Array<{ id: string }> }).posts.map((p) => p.id);
}

describe('hiding a post from its feed on the dashboard (R-OWN-17)', () => {
  it('"Hide from the feed" takes it out of the feed and the widget, "Show in the feed" puts it back; it stays stored', async () => {
    const ids = await feedIds();
    expect(ids).toHaveLength(3);
    const target = ids[1]!;
    const page: Page = await browser.newPage();
    const messages: string[] = [];
    page.on('console', (m) => messages.push(m.text()));
    await page.goto(`${serve.url}/dashboard/login`);
    await page.fill('input[name="user"], input[name="username"]', DASHBOARD_USER);
    await page.fill('input[name="password"]', serve.env.DASHBOARD_PASSWORD!);
    await page.locator('form button[type="submit"], form input[type="submit"]').first().click();
    await page.waitForURL(/\/dashboard(\/)?$/);
    await page.goto(`${serve.url}/dashboard/widgets/${widgetId}`);

    await page.locator(`tr[data-post-id="${target}"]`).getByRole('button', { name: 'Hide from the feed' }).click();
    await page.waitForURL(new RegExp(`/dashboard/widgets/${widgetId}$`));
    await expect
      .poll(() => page.textContent('body'))
      .toContain(`Post ${target} hidden from its account's feed (and every widget)`);
    expect(await feedIds()).toEqual(ids.filter((id) => id !== target));
    expect(await widgetIds()).not.toContain(target);
    expect(await listPostIds(await serve.ctx.migratedDb(), accountId)).toContain(target);
    // The page lists it under "Hidden from the feed", no longer among the widget's posts.
    const row = page.locator(`tr[data-feed-hidden="${target}"]`);
    expect(await row.textContent()).toContain('dash post 2');
    expect(await page.locator(`tr[data-post-id="${target}"]`).count()).toBe(0);

    await row.getByRole('button', { name: 'Show in the feed' }).click();
    await expect.poll(() => page.textContent('body')).toContain(`Post ${target} is back in its account's feed.`);
    expect(await feedIds()).toEqual(ids);
    expect(await widgetIds()).toContain(target);
    expect(await page.locator(`tr[data-feed-hidden="${target}"]`).count()).toBe(0);
    expect(messages.filter((m) => m.includes(CSP_VIOLATION))).toEqual([]);
    await page.close();
  });
});
