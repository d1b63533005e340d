import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerSecretForAudit } from '../support/capture.ts';
import { openStage, type Stage } from './stage.ts';

/**
 * Reels that play, with real processes and a real browser, on the demo's settings
 * (MIRROR_VIDEOS=on): an account with a reel connected with `accounts add`, the worker copies its
 * video file, a widget made with `widgets add`, and a client's plain page on another origin
 * embedding it by id. The reel opened in the lightbox plays (its currentTime advances) from the
 * storage's host, started from the keyboard; it pauses when the lightbox closes; axe-core finds
 * nothing with the lightbox open on it; and from load to close the page sends not one request to
 * the platform's hosts (its API and its image host).
 */
const CHROMIUM = '/usr/bin/chromium';
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

describe('journey: a reel plays in the lightbox of a widget on a client site', () => {
  let stage: Stage;
  let browser: Browser;
  let site: Server;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium`);
    stage = await openStage('reelsplay', { env: { MIRROR_VIDEOS: 'on' } });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (site ? site.close(() => resolve()) : resolve()));
    await stage?.close();
  });

  it('plays from storage, pauses on close, axe 0 violations, zero requests to the platform', async () => {
    await stage.startWorker();
    const acc = stage.sim.createAccount({
      username: `reels.${randomBytes(2).toString('hex')}`,
      posts: [
        { kind: 'image', width: 1080, height: 1080 },
        { kind: 'reel', width: 1080, height: 1920, caption: 'Morning bake, start to finish' },
        { kind: 'carousel', width: 1080, height: 1350 },
      ],
    });
    const token = stage.sim.issueShortLivedToken(acc.id);
    registerSecretForAudit(token);
    const add = await stage.cli(['accounts', 'add', '--json'], { stdin: token });
    expect(add.code, add.stderr).toBe(0);
    const platformHosts = [new URL(stage.sim.url).host, stage.sim.imageHost];
    const reelOf = async () => {
      const feed = await stage.feed(acc.id);
      // Until the first complete sync the feed is the demo feed (its reel is no copy of ours).
      return feed && !feed.demo ? feed.posts.find((p) => p.format === 'reel') : undefined;
    };
    await stage.until(
      async () => {
        const reel = await reelOf();
        return !!reel && !platformHosts.includes(new URL(reel.media[0]!.url).host);
      },
      'the reel to point at its copy',
      90_000,
    );
    const reel = (await reelOf())!;
    expect(reel.media[0]).toMatchObject({ mime: 'video/mp4', durationSec: 3, width: 1080, height: 1920 });

    const made = await stage.cli([
      'widgets',
      'add',
      '--name',
      'Reels',
      '--account',
      acc.id,
      '--layout',
      'grid',
      '--json',
    ]);
    expect(made.code, made.stderr).toBe(0);
    const widgetId = (JSON.parse(made.stdout) as { id: string }).id;
    const serve = await stage.startServe();
    const storageHost = new URL(reel.media[0]!.url).host;
    expect(storageHost).toBe(new URL(serve.url).host);
    site = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Bakery</title></head><body><main>
<h1>Our bakery</h1>
<div data-feedmirror-widget="${widgetId}"></div>
</main><script defer src="${serve.url}/widget/feedmirror-widget.js"></script></body></html>`,
      );
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    const siteUrl = `http://localhost:${(site.address() as AddressInfo).port}/`;

    const page = await browser.newPage();
    const requested: string[] = [];
    page.on('request', (r) => requested.push(r.url()));
    await page.goto(siteUrl);
    await page.waitForSelector('[data-feedmirror-state="ready"]', { timeout: 20_000 });
    // The reel's tile keeps its badge.
    const tile = page.locator(`.fmw-list [data-post-id="${reel.id}"]`);
    expect(await tile.locator('.fmw-badge, [class*="badge"]').count()).toBeGreaterThan(0);

    // Opened from the keyboard, the video started from the keyboard: no autoplay, no mouse.
    await tile.locator('.fmw-link').focus();
    await page.keyboard.press('Enter');
    const video = page.locator('dialog.fmw-box video');
    await video.waitFor({ timeout: 10_000 });
    const attrs = await video.evaluate((v: HTMLVideoElement) => ({
      controls: v.controls,
      playsinline: v.hasAttribute('playsinline'),
      autoplay: v.autoplay,
      poster: v.poster,
      paused: v.paused,
      src: v.currentSrc || v.src,
    }));
    expect(attrs).toMatchObject({ controls: true, playsinline: true, autoplay: false, paused: true });
    expect(new URL(attrs.src).host).toBe(storageHost);
    expect(new URL(attrs.poster).host).toBe(storageHost);
    expect(await page.evaluate(() => document.activeElement?.closest('dialog') !== null)).toBe(true);

    // axe-core with the lightbox open on the video.
    await page.addScriptTag({ path: AXE });
    const violations = await page.evaluate(async () => {
      const r = await (
        window as unknown as { axe: { run(): Promise<{ violations: Array<{ id: string; nodes: unknown[] }> }> } }
      ).axe.run();
      return r.violations.map((v) => `${v.id} (${v.nodes.length})`);
    });
    expect(violations).toEqual([]);

    await video.focus();
    await page.keyboard.press('Space');
    await page.waitForFunction(
      () => (document.querySelector<HTMLVideoElement>('dialog.fmw-box video')?.currentTime ?? 0) > 0.5,
      undefined,
      { timeout: 15_000 },
    );
    // Closed with Esc: the video stops with it.
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !(document.querySelector('dialog.fmw-box') as HTMLDialogElement).open);
    expect(await video.evaluate((v: HTMLVideoElement) => v.paused)).toBe(true);

    // From load to close: the video came from storage, nothing from the platform.
    expect(requested.some((u) => u.startsWith(reel.media[0]!.url))).toBe(true);
    const toPlatform = requested.filter((u) => platformHosts.includes(new URL(u).host));
    expect(toPlatform).toEqual([]);
  }, 240_000);
});
