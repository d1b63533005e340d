import { existsSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, relative } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStage, type Stage, type StageProcess, type StageServer } from './stage.ts';
import { imageUrls } from '../support/feed-images.ts';

/**
 * docs/operating.md "Checking that the stores agree", the worst case: the storage emptied
 * entirely (a bucket recreated, a folder restored from nothing). One `feedmirror verify --repair`
 * puts everything back in dependency order (every copy, then the feeds, the widget documents and
 * fragments, the status documents and the widget script), checks again and exits 0; a plain
 * `verify` afterwards agrees, and a site embedding the widget shows it again in Chromium.
 * Then the status documents follow PUBLISH_STATUS (R-OWN-16): with it off, `serve` no longer
 * serves one left in storage and verify names it; removing an account (command line and
 * dashboard) deletes its document whatever the switch says.
 */
const CHROMIUM = '/usr/bin/chromium';

/** Every object key in a local storage folder (its sidecar .meta folder left out). */
async function storedKeys(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(root, join(e.parentPath, e.name)))
    .filter((k) => !k.split('/').some((part) => part.startsWith('.')))
    .sort();
}

describe('journey: the storage emptied, restored by one verify --repair; status documents follow their switch', () => {
  let stage: Stage;
  let worker: StageProcess;
  let serve: StageServer;
  let browser: Browser;
  let site: Server;
  const accounts: string[] = [];
  let widgetId = '';
  let storage = '';

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium`);
    stage = await openStage('wipedstore', { env: { PUBLISH_STATUS: 'on' } });
    storage = join(stage.dir, 'data/storage');
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (site ? site.close(() => resolve()) : resolve()));
    await stage?.close();
  });

  it('one `verify --repair` restores every feed, copy, widget object, status document and the widget script (exit 0); `verify` then agrees', async () => {
    worker = await stage.startWorker();
    for (const [i, posts] of [5, 3].entries()) {
      const acc = await stage.connect({ username: `wiped${i}.shop`, posts });
      expect(acc.add.code, acc.add.stderr).toBe(0);
      accounts.push(acc.id);
    }
    for (const id of accounts)
      await stage.until(async () => (await stage.feed(id))?.demo === false, `the first feed of ${id}`, 60_000);
    const made = await stage.cli([
      'widgets',
      'add',
      '--name',
      'Harbour site',
      '--account',
      accounts[0]!,
      '--account',
      accounts[1]!,
      '--json',
    ]);
    expect(made.code, made.stderr).toBe(0);
    widgetId = (JSON.parse(made.stdout) as { id: string }).id;
    serve = await stage.startServe();
    const clean = await stage.cli(['verify']);
    expect(clean.code, clean.stdout + clean.stderr).toBe(0);

    const before = await storedKeys(storage);
    const expected = [
      ...accounts.flatMap((id) => [`feeds/${id}.json`, `status/${id}.json`]),
      `widgets/${widgetId}.json`,
      `widgets/${widgetId}.html`,
      'widget/feedmirror-widget.js',
    ];
    expect(before).toEqual(expect.arrayContaining(expected));
    const media = before.filter((k) => k.startsWith('media/'));
    expect(media.length).toBeGreaterThan(20);
    const feedsBefore = await Promise.all(accounts.map((id) => stage.feed(id)));

    // The worker is stopped (nothing of it may take part), and the storage emptied entirely.
    await worker.stop();
    await rm(storage, { recursive: true, force: true });
    expect(await storedKeys(storage)).toEqual([]);

    const found = await stage.cli(['verify', '--json']);
    expect(found.code, found.stderr).toBe(1);
    const kinds = new Set(
      (JSON.parse(found.stdout) as { problems: Array<{ kind: string }> }).problems.map((p) => p.kind),
    );
    expect([...kinds].sort()).toEqual(
      [
        'feed-missing',
        'object-missing',
        'status-missing',
        // The deployment marker went with everything else (R-DEL-1); the repair writes it first.
        'storage-unclaimed',
        'widget-missing',
        'widget-script-missing',
      ].sort(),
    );

    // ONE run.
    const repaired = await stage.cli(['verify', '--repair'], { timeoutMs: 120_000 });
    expect(repaired.code, repaired.stdout + repaired.stderr).toBe(0);
    expect(repaired.stdout).toContain('all well after the repair');
    expect(await storedKeys(storage)).toEqual(before);
    const again = await stage.cli(['verify']);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).toContain('all well: the stores agree');

    // What sites read answers again: the feeds (same posts), every image, the widget's objects,
    // the status documents and the script.
    for (const [i, id] of accounts.entries()) {
      const feed = (await stage.feed(id))!;
      expect(feed.posts.map((p) => p.id)).toEqual(feedsBefore[i]!.posts.map((p) => p.id));
      for (const url of imageUrls(feed)) expect((await fetch(url)).status, url).toBe(200);
      expect((await fetch(`${serve.url}/feeds/${id}.json`)).status).toBe(200);
      const status = await fetch(`${serve.url}/status/${id}.json`);
      expect(status.status).toBe(200);
      expect(await status.json()).toMatchObject({ accountId: id, state: 'connected' });
    }
    for (const path of [`/widgets/${widgetId}.json`, `/widgets/${widgetId}.html`, '/widget/feedmirror-widget.js'])
      expect((await fetch(`${serve.url}${path}`)).status, path).toBe(200);

    // The client's site, in a browser: the widget shows every post of both accounts again.
    site = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Harbour</title></head><body>
<div data-feedmirror-widget="${widgetId}"></div>
<script defer src="${serve.url}/widget/feedmirror-widget.js"></script></body></html>`,
      );
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    const page = await browser.newPage();
    const violations: string[] = [];
    page.on('console', (m) => {
      if (m.text().includes('violates the following Content Security Policy directive')) violations.push(m.text());
    });
    await page.goto(`http://localhost:${(site.address() as AddressInfo).port}/`);
    await page.waitForSelector('[data-feedmirror-state="ready"]', { timeout: 20_000 });
    const shown = await page.evaluate(
      () =>
        [...document.querySelectorAll('.fmw-list [data-post-id]')].map((e) => e.getAttribute('data-post-id')).length,
    );
    expect(shown).toBe(feedsBefore.reduce((n, f) => n + f!.posts.length, 0));
    expect(violations).toEqual([]);
    await page.close();
  }, 300_000);

  it('PUBLISH_STATUS off: `serve` does not serve a status document left in storage; verify names it and --repair deletes it', async () => {
    const off = { PUBLISH_STATUS: 'off' };
    await serve.stop();
    serve = await stage.startServe({ env: off });
    const key = `status/${accounts[1]}.json`;
    expect((await storedKeys(storage)).includes(key)).toBe(true);
    const res = await fetch(`${serve.url}/${key}`);
    expect(res.status).toBe(404);
    expect(await res.text()).toContain('PUBLISH_STATUS is off');

    const found = await stage.cli(['verify', '--json'], { env: off });
    expect(found.code, found.stderr).toBe(1);
    const problems = (JSON.parse(found.stdout) as { problems: Array<{ kind: string; key: string }> }).problems;
    expect(problems.map((p) => `${p.kind} ${p.key}`).sort()).toEqual(
      accounts.map((id) => `status-stray status/${id}.json`).sort(),
    );
    const repaired = await stage.cli(['verify', '--repair'], { env: off });
    expect(repaired.code, repaired.stdout + repaired.stderr).toBe(0);
    expect((await storedKeys(storage)).filter((k) => k.startsWith('status/'))).toEqual([]);
    expect((await stage.cli(['verify'], { env: off })).code).toBe(0);

    // On again: verify names them missing, and one run writes them back.
    const back = await stage.cli(['verify', '--repair']);
    expect(back.code, back.stdout + back.stderr).toBe(0);
    expect(back.stdout).toMatch(/status-missing/);
    expect((await storedKeys(storage)).filter((k) => k.startsWith('status/'))).toEqual(
      accounts.map((id) => `status/${id}.json`).sort(),
    );
  }, 120_000);

  it('an account removed (command line, switch off; dashboard, switch on): its status document is gone', async () => {
    const [first, second] = accounts as [string, string];
    // Written while the switch was on; removed after it was turned off.
    const removed = await stage.cli(['accounts', 'remove', first], { env: { PUBLISH_STATUS: 'off' } });
    expect(removed.code, removed.stderr).toBe(0);
    expect(await storedKeys(storage)).not.toContain(`status/${first}.json`);

    // The dashboard's remove, with the switch on (serve restarted with the .env's settings).
    await serve.stop();
    serve = await stage.startServe();
    expect((await fetch(`${serve.url}/status/${second}.json`)).status).toBe(200);
    const dash = await serve.login();
    const out = await dash.post(`/dashboard/accounts/${second}/remove`, `/dashboard/accounts/${second}/remove`, {
      confirm: 'yes',
    });
    expect(out.status).toBe(303);
    expect(await storedKeys(storage)).not.toContain(`status/${second}.json`);
    expect((await fetch(`${serve.url}/status/${second}.json`)).status).toBe(404);
    const verify = await stage.cli(['verify']);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
  }, 120_000);
});
