import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { processImage, type VariantFormat } from '../../src/mirror/image.ts';
import { feedSchema } from '../../src/schema/v1.ts';
import { LocalStorage } from '../../src/storage/index.ts';
import { publishWidget, WIDGET_KEY } from '../../src/embed/index.ts';
import { cssRgb, measureDensity } from '../support/density.ts';
import { CHROMIUM, launchChromium } from '../support/chromium.ts';

/**
 * In headless Chromium: on a plain page embedding the widget (grid and list), the
 * median image carries at most 1.6x the device pixels it fills, at 360 px with DPR 2 and at
 * 1280 px with DPR 1, and every image shows its placeholder colour before it loads. The feed's
 * images are made by the pipeline's own processImage (the default ladder) from 1080 px JPEGs in
 * the platform's three shapes.
 */
const SHAPES: Array<[number, number]> = [
  [1080, 1350],
  [1080, 1080],
  [1080, 608],
];
const LIMIT = 1.6;

let browser: Browser;
let server: Server;
let base = '';
let storageDir = '';
const files = new Map<string, { type: string; body: Buffer }>();
const feeds = new Map<string, unknown>();

async function buildFeed(name: string, formats: VariantFormat[], count: number): Promise<void> {
  const ladder = loadConfig({}).MEDIA_VARIANT_WIDTHS;
  const posts = [];
  for (let i = 0; i < count; i++) {
    const [w, h] = SHAPES[i % SHAPES.length]!;
    const hue = (i * 47) % 360;
    // A gradient with some detail, so the encoders have work to do (not a flat colour).
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}"><defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="hsl(${hue},70%,45%)"/><stop offset="1" stop-color="hsl(${(hue + 90) % 360},60%,70%)"/></linearGradient></defs><rect width="100%" height="100%" fill="url(#g)"/><circle cx="${w / 2}" cy="${h / 2}" r="${h / 4}" fill="hsl(${(hue + 180) % 360},50%,50%)"/></svg>`;
    const jpeg = await sharp(Buffer.from(svg)).jpeg({ quality: 85 }).toBuffer();
    const out = await processImage(jpeg, { maxPixels: 50_000_000, variantWidths: ladder, formats });
    const stem = `/media/${name}/p${i}`;
    files.set(`${stem}.jpg`, { type: 'image/jpeg', body: out.original.buffer });
    const sizes = [
      ...out.variants.map((v) => {
        const file = `${stem}-w${v.width}.${v.ext}`;
        files.set(file, { type: v.contentType, body: v.buffer });
        return { url: `${base}${file}`, width: v.width, height: v.height, mime: v.contentType };
      }),
      { url: `${base}${stem}.jpg`, width: w, height: h, mime: 'image/jpeg' },
    ].sort((a, b) => a.width - b.width);
    posts.push({
      id: `p${i}`,
      source: 'instagram',
      type: 'image',
      format: 'post',
      status: 'published',
      url: `https://www.instagram.com/p/P${i}/`,
      text: `Post ${i}`,
      media: [
        { url: `${base}${stem}.jpg`, mime: 'image/jpeg', width: w, height: h, sizes, placeholder: out.placeholder },
      ],
      thumbnailUrl: `${base}${stem}.jpg`,
      thumbnailSizes: sizes,
      thumbnailPlaceholder: out.placeholder,
      aspectRatio: w / h,
      publishedAt: new Date(Date.UTC(2026, 1, 28 - i)).toISOString(),
    });
  }
  const feed = {
    schemaVersion: 1,
    source: 'instagram',
    origin: {
      kind: 'profile',
      id: '17841400000000001',
      name: 'studio',
      displayName: 'Studio',
      url: 'https://www.instagram.com/studio/',
    },
    fetchedAt: '2026-03-01T10:00:00+00:00',
    demo: false,
    posts,
  };
  feeds.set(name, feedSchema.parse(feed)); // what the publisher writes is valid schema v1
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium; this test never downloads a browser`);
  storageDir = await mkdtemp(path.join(os.tmpdir(), 'feedmirror-density-'));
  const storage = new LocalStorage(storageDir);
  await publishWidget(storage);
  server = createServer((req, res) => {
    void (async () => {
      const u = new URL(req.url ?? '/', 'http://x');
      const send = (status: number, type: string, body: string | Buffer) =>
        res.writeHead(status, { 'content-type': type }).end(body);
      if (u.pathname === `/${WIDGET_KEY}`) {
        const obj = await storage.get(WIDGET_KEY);
        return send(200, 'application/javascript', obj!.body);
      }
      if (u.pathname === '/widget-page') {
        // A widget embedded by id, its document named by data-src (written below from the same feed).
        const layout = (u.searchParams.get('layout') ?? '').replace(/[^a-z]/g, '');
        return send(
          200,
          'text/html; charset=utf-8',
          `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>site</title></head><body>
<h1>A site</h1>
<div data-feedmirror-widget="w_density${layout}" data-src="/widgets/${layout}.json"></div>
<script defer src="/${WIDGET_KEY}"></script></body></html>`,
        );
      }
      const wd = /^\/widgets\/([a-z]+)\.json$/.exec(u.pathname);
      if (wd) return send(200, 'application/json', JSON.stringify(widgetDocument(wd[1]!)));
      if (u.pathname === '/page') {
        const layout = u.searchParams.get('layout') === 'list' ? 'list' : 'grid';
        const feed = (u.searchParams.get('feed') ?? '').replace(/[^a-z]/g, '');
        return send(
          200,
          'text/html; charset=utf-8',
          `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>site</title></head><body>
<h1>A site</h1>
<div data-feedmirror-feed="/feeds/${feed}.json" data-layout="${layout}" data-limit="12"></div>
<script defer src="/${WIDGET_KEY}"></script></body></html>`,
        );
      }
      const f = /^\/feeds\/([a-z]+)\.json$/.exec(u.pathname);
      if (f && feeds.has(f[1]!)) return send(200, 'application/json', JSON.stringify(feeds.get(f[1]!)));
      const file = files.get(u.pathname);
      if (file) return send(200, file.type, file.body);
      return send(404, 'text/plain', 'not found');
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await buildFeed('webp', ['webp'], 12);
  await buildFeed('avif', ['webp', 'avif'], 3);
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  if (storageDir) await rm(storageDir, { recursive: true, force: true });
});

/** The `webp` feed as a widget document (default options: 2/3/4 columns, gap 8, limit 12). */
function widgetDocument(layout: string): unknown {
  const feed = feeds.get('webp') as { posts: Array<Record<string, unknown>> };
  return {
    version: 1,
    id: `w_density${layout}`,
    name: 'density',
    generatedAt: '2026-03-01T10:00:00+00:00',
    staleSince: null,
    demo: false,
    layout,
    options: { limit: 12, columns: { phone: 2, tablet: 3, desktop: 4 }, gap: 8, radius: 8, header: false },
    accounts: [],
    posts: feed.posts.map((p) => ({ ...p, accountId: '17841400000000001', username: 'studio' })),
  };
}

describe('the widget picks the right size and paints placeholders (headless Chromium)', () => {
  const cases = [
    ['grid', 360, 2],
    ['grid', 1280, 1],
    ['list', 360, 2],
    ['list', 1280, 1],
  ] as const;

  it.each(cases)(
    '%s layout at %i px, DPR %i: median image at most 1.6x the device pixels it fills; placeholders before load',
    async (layout, width, dpr) => {
      const report = await measureDensity(browser, `${base}/page?feed=webp&layout=${layout}`, {
        width,
        height: 3200,
        dpr,
      });
      expect(report.ratios.length).toBeGreaterThanOrEqual(6);
      expect(report.median, `ratios ${report.ratios.map((r) => r.toFixed(2)).join(' ')}`).toBeLessThanOrEqual(LIMIT);
      // Never a blurry pick either: the chosen candidate covers its box (or is the original).
      expect(Math.min(...report.ratios)).toBeGreaterThan(0.5);
      // Not the 1080 px original everywhere: the ladder is used.
      expect(report.sources.some((s) => /-w\d+\.webp$/.test(s))).toBe(true);
      expect(report.placeholders.length).toBeGreaterThanOrEqual(6);
      for (const p of report.placeholders) {
        expect(p.complete).toBe(false);
        expect(p.expected).toMatch(/^#[0-9a-f]{6}$/);
        expect(p.painted).toBe(cssRgb(p.expected!));
      }
      console.log(
        `plain page, ${layout} ${width}px DPR ${dpr}: median ${report.median.toFixed(2)}x over ${report.ratios.length} images`,
      );
    },
  );

  it.each([
    ['grid', 360, 2],
    ['grid', 1280, 1],
  ] as const)(
    'a widget embedded by id, %s at %i px, DPR %i: median image at most 1.6x the device pixels it fills',
    async (layout, width, dpr) => {
      const report = await measureDensity(browser, `${base}/widget-page?layout=${layout}`, {
        width,
        height: 3200,
        dpr,
      });
      expect(report.ratios.length).toBeGreaterThanOrEqual(6);
      expect(report.median, `ratios ${report.ratios.map((r) => r.toFixed(2)).join(' ')}`).toBeLessThanOrEqual(LIMIT);
      expect(Math.min(...report.ratios)).toBeGreaterThan(0.5);
      for (const p of report.placeholders) expect(p.painted).toBe(cssRgb(p.expected!));
      console.log(
        `widget by id, ${layout} ${width}px DPR ${dpr}: median ${report.median.toFixed(2)}x over ${report.ratios.length} images`,
      );
    },
  );

  it('with MEDIA_VARIANT_FORMATS=webp,avif the browser takes the AVIF candidates through <picture>', async () => {
    const report = await measureDensity(browser, `${base}/page?feed=avif&layout=grid`, {
      width: 360,
      height: 1600,
      dpr: 2,
    });
    expect(report.sources.length).toBe(3);
    expect(report.sources.every((s) => s.endsWith('.avif'))).toBe(true);
    expect(report.median).toBeLessThanOrEqual(LIMIT);
  });

  it('once loaded, the placeholder is gone (a transparent image shows no colour through it)', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 2000 } });
    const page = await ctx.newPage();
    await page.goto(`${base}/page?feed=webp&layout=grid`);
    await page.waitForFunction(() => {
      const imgs = [...document.querySelectorAll<HTMLImageElement>('img.fmw-img')];
      return imgs.length > 0 && imgs.every((i) => i.complete && i.naturalWidth > 0);
    });
    const styles = await page.evaluate(() =>
      [...document.querySelectorAll<HTMLImageElement>('img.fmw-img')].map((i) => [
        i.style.backgroundColor,
        i.style.backgroundImage,
      ]),
    );
    expect(styles.every(([c, b]) => c === '' && b === '')).toBe(true);
    await ctx.close();
  });
});
