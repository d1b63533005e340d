import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerSecretForAudit } from '../support/capture.ts';
import { openStage, type Stage, type StageServer } from './stage.ts';

/**
 * docs/widget.md as an agency follows it, with real processes and a real browser: two accounts
 * connected with `accounts add`, one widget of both made with `feedmirror widgets add --json`, a
 * client's page on another origin holding only `<div data-feedmirror-widget="ID">` and the
 * deferred script that `feedmirror serve` hands out. The page shows both accounts' posts newest
 * first in the layout chosen; the operator changes the layout on the dashboard (in the browser,
 * through its form) and the page shows the new one on its next load, the page itself unchanged.
 * A post hidden with `widgets hide` leaves the page and stays hidden after a re-sync.
 */
const CHROMIUM = '/usr/bin/chromium';

describe('journey: a widget on a client site, configured on the dashboard', () => {
  let stage: Stage;
  let serve: StageServer;
  let browser: Browser;
  let site: Server;
  let siteUrl = '';
  let widgetId = '';

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium`);
    stage = await openStage('widgetsite');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (site ? site.close(() => resolve()) : resolve()));
    await stage?.close();
  });

  it('shows the configured layout, follows the dashboard on the next load, and keeps a hidden post hidden', async () => {
    await stage.startWorker();
    const ids: string[] = [];
    for (const [i, posts] of [3, 4].entries()) {
      const acc = stage.sim.createAccount({ username: `client${i}.${randomBytes(2).toString('hex')}`, posts });
      const token = stage.sim.issueShortLivedToken(acc.id);
      registerSecretForAudit(token);
      const add = await stage.cli(['accounts', 'add', '--json'], { stdin: token });
      expect(add.code, add.stderr).toBe(0);
      ids.push(acc.id);
    }
    for (const id of ids)
      await stage.until(async () => (await stage.feed(id))?.demo === false, `the first feed of ${id}`, 60_000);

    const made = await stage.cli([
      'widgets',
      'add',
      '--name',
      'Bakery site',
      '--account',
      ids[0]!,
      '--account',
      ids[1]!,
      '--layout',
      'grid',
      '--json',
    ]);
    expect(made.code, made.stderr).toBe(0);
    widgetId = (JSON.parse(made.stdout) as { id: string }).id;
    expect(widgetId).toMatch(/^w_/);

    serve = await stage.startServe();
    // The client's site: another origin (localhost, where serve is 127.0.0.1), the snippet only.
    site = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Bakery</title></head><body><main>
<h1>Our bakery</h1>
<div data-feedmirror-widget="${widgetId}"></div>
</main><script defer src="${serve.url}/widget/feedmirror-widget.js"></script></body></html>`,
      );
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    siteUrl = `http://localhost:${(site.address() as AddressInfo).port}/`;

    const feeds = await Promise.all(ids.map((id) => stage.feed(id)));
    const newestFirst = feeds
      .flatMap((f) => f!.posts)
      .sort((a, b) => Date.parse(b.publishedAt) - Date.parse(a.publishedAt))
      .map((p) => p.id);
    expect(newestFirst).toHaveLength(7);

    const page = await browser.newPage();
    const shown = async () => {
      await page.goto(siteUrl);
      await page.waitForSelector('[data-feedmirror-state="ready"]', { timeout: 20_000 });
      return page.evaluate(() => ({
        cls: document.querySelector('.fmw-w')!.className,
        posts: [...document.querySelectorAll('.fmw-list [data-post-id]')].map((e) => e.getAttribute('data-post-id')),
      }));
    };
    const first = await shown();
    expect(first.cls).toContain('fmw--grid');
    expect(first.posts).toEqual(newestFirst);

    // The operator, on the dashboard: log in, open the widget, choose the carousel, save.
    const dash = await browser.newPage();
    await dash.goto(`${serve.url}/dashboard/login`);
    await dash.fill('input[name="user"]', stage.env.DASHBOARD_USER!);
    await dash.fill('input[name="password"]', stage.env.DASHBOARD_PASSWORD!);
    // A form post that may land on the URL it came from: waitForURL would return at once.
    // eslint-disable-next-line @typescript-eslint/no-deprecated
    await Promise.all([dash.waitForNavigation(), dash.click('button[type="submit"]')]);
    await dash.goto(`${serve.url}/dashboard/widgets/${widgetId}`);
    await dash.selectOption('form.widget-form select[name="layout"]', 'carousel');
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- as above
    await Promise.all([dash.waitForNavigation(), dash.click('form.widget-form button[type="submit"]')]);
    expect(await dash.textContent('body')).toContain('(carousel)');

    const second = await shown();
    expect(second.cls).toContain('fmw--carousel');
    expect(second.posts).toEqual(newestFirst);

    // Hidden from the command line: gone from the page, and still gone after a re-sync.
    const hidden = newestFirst[0]!;
    const hide = await stage.cli(['widgets', 'hide', widgetId, hidden]);
    expect(hide.code, hide.stderr).toBe(0);
    expect((await shown()).posts).toEqual(newestFirst.slice(1));
    const owner = ids[feeds.findIndex((f) => f!.posts.some((p) => p.id === hidden))]!;
    const sync = await stage.cli(['sync', owner, '--wait']);
    expect(sync.code, sync.stdout + sync.stderr).toBe(0);
    expect((await shown()).posts).toEqual(newestFirst.slice(1));
  }, 240_000);
});
