import { existsSync } from 'node:fs';
import type { Browser, ConsoleMessage, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSyncNow } from '../../src/feeds/sync.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { setAccountStatus, upsertAccount } from '../../src/store/accounts.ts';
import { recordCaptured } from '../support/capture.ts';
import { DASHBOARD_USER, nonLoopbackAddress, startServeForTest, type ServedForTest, stopServe } from './support.ts';
import { freePort } from '../support/closed-port.ts';
import { CHROMIUM, launchChromium } from '../support/chromium.ts';
import { simulatorEnv } from '../support/worker-env.ts';

/**
 * XSS in a real browser (Debian's Chromium through playwright-core), against `feedmirror serve`
 * built by its composition root: an owner whose user name, display name and captions are HTML
 * and script connects through an invitation made in the dashboard; the account is synced for
 * real from the simulator; the operator opens the dashboard, the feed preview and bull-board.
 * Nothing runs: every surface escapes, and the CSP (script files of this server only) would stop
 * an inline script that slipped through. bull-board keeps working under that CSP (its bundles
 * are files; its config is a JSON data block, not a script).
 */
let sim: Simulator;
let s: ServedForTest;
let browser: Browser;
let page: Page;
const consoleErrors: string[] = [];
const dialogs: string[] = [];

// The platform's user names are [A-Za-z0-9._] (the simulator enforces it); a hostile one is
// written into the store directly below, as a compromised or buggy platform answer would.
const OWNER = 'evil.owner';
const EVIL_USER = 'x"><img src=x onerror="window.__xss=\'username\'">';
const EVIL_NAME = '</title><script>window.__xss="name"</script>';
const EVIL_CAPTIONS = [
  '<img src=x onerror="window.__xss=\'caption\'">',
  '</script><script>window.__xss="caption2"</script>',
  '"><svg onload="window.__xss=\'caption3\'">',
  'javascript:window.__xss="caption4"',
];

const xss = () => page.evaluate(() => (window as unknown as { __xss?: string }).__xss ?? null);

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (this test never downloads a browser)`);
  // The server runs on the wall clock: so does the simulator's signed links' oe.
  sim = await startSimulator({ start: Date.now() });
  const port = await freePort('0.0.0.0');
  const publicUrl = `http://${nonLoopbackAddress()}:${port}`;
  s = await startServeForTest('sec-xss', {
    PORT: String(port),
    PUBLIC_URL: publicUrl,
    MEDIA_PUBLIC_URL: `${publicUrl}/`,
    MEDIA_VARIANT_WIDTHS: '320',
    ...simulatorEnv(sim),
  });
  browser = await launchChromium();
  page = await (await browser.newContext()).newPage();
  page.on('console', (m: ConsoleMessage) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  page.on('response', (r) => {
    if ((r.headers()['content-type'] ?? '').startsWith('text/html'))
      void r
        .text()
        .then((t) => recordCaptured('http', t))
        .catch(() => undefined);
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await stopServe(s);
  await sim?.close();
});

describe('XSS through user names, captions and permalinks, in Chromium', () => {
  it('an owner with a hostile name connects through a dashboard invitation; the pages show the text, run nothing', async () => {
    await page.goto(`${s.url}/dashboard`);
    await page.fill('#user', DASHBOARD_USER);
    await page.fill('#password', s.env.DASHBOARD_PASSWORD!);
    await Promise.all([page.waitForURL(`${s.url}/dashboard`), page.click('button[type=submit]')]);

    // The owner's name, as typed on the invite form, comes back in the list of invitations.
    await page.fill('form[action="/dashboard/invitations"] input[name=owner_email]', 'owner@example.com');
    await page.fill('form[action="/dashboard/invitations"] input[name=owner_name]', EVIL_NAME);
    await Promise.all([
      page.waitForURL(`${s.url}/dashboard/invitations`),
      page.click('button:has-text("Invite an owner")'),
    ]);
    const link = await page.inputValue('#invitation');
    expect(link).toMatch(/\/connect\?invite=[A-Za-z0-9_-]{43}$/);

    const owner = sim.createAccount({
      username: OWNER,
      name: EVIL_NAME,
      posts: EVIL_CAPTIONS.map((caption) => ({ kind: 'image' as const, caption })),
    });
    sim.autoApprove = owner.id;
    await page.goto(link);
    expect(await page.locator('h1').textContent()).toBe('Account connected');
    expect(await page.locator('p').first().textContent()).toContain(`@${OWNER} is connected`);
    expect(await xss()).toBeNull();
    // Synced for real: the captions travel platform -> conversion -> published feed.
    const synced = await runSyncNow(await s.ctx.feedDeps(), owner.id);
    expect(synced.sync.outcome).toBe('synced');
    expect(synced.publish?.outcome, JSON.stringify(synced.failedCopies)).toBe('written');
    await upsertAccount(s.ctx.db, { id: owner.id, username: EVIL_USER, displayName: EVIL_NAME }, new Date());

    // A stored error text with markup, as a platform message could carry.
    await setAccountStatus(
      s.ctx.db,
      owner.id,
      'reauth_required',
      '<svg onload="window.__xss=\'reason\'"> (code 190/460)',
      { at: new Date() },
    );
    await page.goto(`${s.url}/dashboard`);
    const row = page.locator(`tr[data-account-id="${owner.id}"]`);
    expect(await row.locator('strong').textContent()).toBe(`@${EVIL_USER}`);
    expect(await row.textContent()).toContain(EVIL_NAME);
    expect(await page.locator('table.invitations tbody tr', { hasText: 'owner@example.com' }).textContent()).toContain(
      EVIL_NAME,
    );
    // The stored error's markup is text in the health reason too (a reason's commands are <code>).
    expect(await row.locator('[data-reason="reauth_required"]').textContent()).toContain('<svg onload=');
    expect(await xss()).toBeNull();
  });

  it('captions in the feed preview (the widget) are text', async () => {
    const owner = (await s.ctx.db.query<{ id: string }>('SELECT id FROM accounts')).rows[0]!.id;
    await page.goto(`${s.url}/dashboard/accounts/${owner}/preview?layout=list`);
    await page.waitForFunction(
      () => document.querySelector('#feed')?.getAttribute('data-feedmirror-state') === 'ready',
    );
    // Image posts carry their caption's first words as alt text: literally, markup and all.
    const text = await page.evaluate(() =>
      [
        document.querySelector<HTMLElement>('#feed')!.innerText,
        ...[...document.querySelectorAll('#feed img')].map((i) => i.getAttribute('alt') ?? ''),
      ].join('\n'),
    );
    for (const marker of ['<img', '<script>', '<svg']) expect(text).toContain(marker);
    expect(await page.locator('#feed script, #feed svg[onload], #feed img[onerror]').count()).toBe(0);
    expect(await xss()).toBeNull();
  });

  it('a feed whose permalinks are javascript: URLs gets no such link', async () => {
    const id = '17841400000000777';
    await upsertAccount(s.ctx.db, { id, username: 'links.test' }, new Date());
    const feed = {
      schemaVersion: 1,
      source: 'instagram',
      demo: false,
      fetchedAt: new Date().toISOString(),
      origin: {
        kind: 'profile',
        id,
        name: 'links.test',
        displayName: 'links',
        url: 'javascript:window.__xss="origin"',
      },
      posts: [
        'javascript:window.__xss="permalink"',
        'JaVaScRiPt:window.__xss="permalink2"',
        'data:text/html,<script>window.__xss=1</script>',
      ].map((url, i) => ({
        id: `p${i}`,
        source: 'instagram',
        type: 'text',
        format: 'post',
        status: 'published',
        url,
        text: `post ${i}`,
        media: [],
        publishedAt: new Date().toISOString(),
      })),
    };
    await s.ctx.storage.put(`feeds/${id}.json`, Buffer.from(JSON.stringify(feed)), {
      contentType: 'application/json; charset=utf-8',
      cacheControl: 'no-store',
    });
    await page.goto(`${s.url}/dashboard/accounts/${id}/preview?layout=list`);
    await page.waitForFunction(() =>
      ['ready', 'error'].includes(document.querySelector('#feed')?.getAttribute('data-feedmirror-state') ?? ''),
    );
    const hrefs = await page.evaluate(() =>
      [...document.querySelectorAll('#feed a')].map((a) => a.getAttribute('href') ?? ''),
    );
    for (const h of hrefs) expect(h).toMatch(/^(https?:|\/|#|$)/);
    for (const a of await page.locator('#feed a').all())
      await a.click({ force: true, timeout: 2_000 }).catch(() => undefined);
    expect(await xss()).toBeNull();
  });

  it('no dialog opened anywhere', () => {
    expect(dialogs).toEqual([]);
  });
});

describe('bull-board under the CSP', () => {
  it('renders its queues and jobs with the CSP on; no script was blocked', async () => {
    consoleErrors.length = 0;
    // Nothing of the page may need the internet (bull-board renders offline).
    const requested: string[] = [];
    const onRequest = (r: { url(): string }) => requested.push(r.url());
    page.on('request', onRequest);
    const res = await page.goto(`${s.url}/dashboard/queues`);
    const csp = res!.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("'unsafe-inline' 'unsafe-eval'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(res!.headers()['x-content-type-options']).toBe('nosniff');
    await page.getByText('feed-sync', { exact: false }).first().waitFor({ timeout: 15_000 });
    // Its API answers the UI (a fetch the CSP's connect-src allows).
    const api = await page.evaluate(async () => (await fetch('/dashboard/queues/api/queues')).status);
    expect(api).toBe(200);
    // No refusal at all: the page is served without its web-font CDN link.
    const blocked = consoleErrors.filter((e) => /Content Security Policy/i.test(e));
    expect(blocked).toEqual([]);
    page.off('request', onRequest);
    expect(requested.filter((u) => !u.startsWith(s.url) && !u.startsWith('data:'))).toEqual([]);
    expect(await xss()).toBeNull();
  });
});
