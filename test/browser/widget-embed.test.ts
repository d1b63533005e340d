import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/index.ts';
import { publishWidget, WIDGET_KEY } from '../../src/embed/index.ts';
import { renderWidgetFragment } from '../../src/embed/markup.ts';
import type { WidgetDocument } from '../../src/schema/widget-document.ts';
import { HOSTILE, mirrorImages, widgetDoc, type MirroredImage } from '../support/widget-docs.ts';

/**
 * Widgets embedded by id on a site of another origin, in headless Chromium: the page comes from
 * http://localhost:PORT, the script, the widget documents and the images from
 * http://127.0.0.1:PORT (storage), as a bucket serves them. Per layout: the configured layout,
 * cumulative layout shift 0 up to the images loaded, axe-core 0 violations, no request to a third
 * host, one view per page load; the lightbox (keyboard, focus, slides, video), Load more, and the
 * server's fragment enhanced in place. DOCS_SCREENSHOTS=1 also writes docs/images/widget-*.png.
 */
const CHROMIUM = '/usr/bin/chromium';
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const SHOTS = process.env.DOCS_SCREENSHOTS ? path.resolve('docs/images') : null;

let browser: Browser;
let server: Server;
let port = 0;
let assets = '';
let storageDir = '';
let storage: LocalStorage;
let images: MirroredImage[] = [];
const files = new Map<string, { type: string; body: Buffer }>();
const docs = new Map<string, WidgetDocument>();
const views: Array<{ id: string; method: string; cookie?: string | undefined; referer?: string | undefined }> = [];

const IDS = {
  grid: 'w_gridaaaaaa',
  list: 'w_listaaaaaa',
  carousel: 'w_carouselaa',
  masonry: 'w_masonryaaa',
} as const;

function pageHtml(q: URLSearchParams): string {
  const id = q.get('id') ?? '';
  const doc = docs.get(id);
  const inner = q.get('fragment') && doc ? renderWidgetFragment(doc) : '';
  const src = q.get('src') ? ` data-src="${assets}/widgets/${id}.json"` : '';
  const id2 = q.get('ghost') ? 'w_missingaaa' : id;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>A client site</title></head><body>
<main><h1>A client site</h1>
<div id="w" data-feedmirror-widget="${id2}"${src}>${inner}</div>
${inner ? `<script>document.querySelector('#w .fmw-item').setAttribute('data-mark', 'server')</script>` : ''}
${inner ? '<p id="after">Opening hours and address, below the widget.</p>' : ''}
</main>
<script defer src="${assets}/${WIDGET_KEY}"></script>
</body></html>`;
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium`);
  storageDir = await mkdtemp(path.join(os.tmpdir(), 'feedmirror-widget-embed-'));
  storage = new LocalStorage(storageDir);
  await publishWidget(storage);
  server = createServer((req, res) => {
    void (async () => {
      const u = new URL(req.url ?? '/', 'http://x');
      const send = (status: number, type: string, body: string | Buffer, extra: Record<string, string> = {}) =>
        res.writeHead(status, { 'content-type': type, 'access-control-allow-origin': '*', ...extra }).end(body);
      if (u.pathname === '/page') return send(200, 'text/html; charset=utf-8', pageHtml(u.searchParams));
      const v = /^\/views\/(w_\w+)$/.exec(u.pathname);
      if (v) {
        views.push({ id: v[1]!, method: req.method ?? '', cookie: req.headers.cookie, referer: req.headers.referer });
        return send(204, 'text/plain', '');
      }
      const key = u.pathname.slice(1);
      if (key === WIDGET_KEY || key.startsWith('widgets/')) {
        const obj = await storage.get(key);
        // A cookie for the storage host: the script must never send it back.
        return obj
          ? send(200, obj.contentType ?? 'application/octet-stream', obj.body, { 'set-cookie': 'visitor=42; Path=/' })
          : send(404, 'text/plain', 'missing');
      }
      const file = files.get(u.pathname);
      return file ? send(200, file.type, file.body) : send(404, 'text/plain', 'not found');
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  assets = `http://127.0.0.1:${port}`;
  images = await mirrorImages(assets, 6, files);
  for (const i of [0, 1]) {
    const body = await sharp({
      create: { width: 80, height: 80, channels: 3, background: { r: 90, g: 60 * i, b: 160 } },
    })
      .jpeg()
      .toBuffer();
    files.set(`/media/w/i${i}-avatar.jpg`, { type: 'image/jpeg', body });
  }
  files.set('/media/w/clip.mp4', { type: 'video/mp4', body: Buffer.alloc(16) });
  const viewsUrl = (id: string) => `${assets}/views/${id}`;
  const all: WidgetDocument[] = [
    widgetDoc(assets, images, { id: IDS.grid, layout: 'grid', viewsUrl: viewsUrl(IDS.grid) }),
    widgetDoc(assets, images, {
      id: IDS.list,
      layout: 'list',
      accounts: 1,
      options: { theme: 'light', captions: 'hide', date: false, badges: false, limit: 6 },
    }),
    widgetDoc(assets, images, {
      id: IDS.carousel,
      layout: 'carousel',
      options: { theme: 'light', captions: 'show', columns: { phone: 1, tablet: 2, desktop: 3 }, radius: 0 },
      viewsUrl: viewsUrl(IDS.carousel),
    }),
    widgetDoc(assets, images, {
      id: IDS.masonry,
      layout: 'masonry',
      accounts: 1,
      staleSince: '2026-02-27T10:00:00+00:00',
      options: { theme: 'dark', captions: 'show', columns: { phone: 2, tablet: 2, desktop: 3 }, gap: 12, radius: 16 },
    }),
  ];
  for (const doc of all) {
    docs.set(doc.id, doc);
    await storage.put(`widgets/${doc.id}.json`, Buffer.from(JSON.stringify(doc)), {
      contentType: 'application/json',
      cacheControl: 'public, max-age=300',
    });
  }
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  if (storageDir) await rm(storageDir, { recursive: true, force: true });
});

interface Opened {
  page: Page;
  hosts: Set<string>;
  urls: string[];
  errors: string[];
}

async function open(query: string, viewport = { width: 1280, height: 2400 }): Promise<Opened> {
  const page = await browser.newPage({ viewport });
  const hosts = new Set<string>();
  const urls: string[] = [];
  const errors: string[] = [];
  page.on('request', (r) => {
    if (r.url().startsWith('data:')) return;
    hosts.add(new URL(r.url()).host);
    urls.push(r.url());
  });
  page.on('pageerror', (e) => errors.push(e.message));
  // Every layout shift from the first paint on (as the Layout Instability API reports it).
  await page.addInitScript(() => {
    const w = window as unknown as { __cls: number };
    w.__cls = 0;
    new PerformanceObserver((list) => {
      for (const e of list.getEntries() as Array<PerformanceEntry & { value: number; hadRecentInput: boolean }>)
        if (!e.hadRecentInput) w.__cls += e.value;
    }).observe({ type: 'layout-shift', buffered: true });
  });
  await page.goto(`http://localhost:${port}/page?${query}`);
  await page.waitForFunction(() =>
    ['ready', 'error'].includes(document.querySelector('#w')?.getAttribute('data-feedmirror-state') ?? ''),
  );
  return { page, hosts, urls, errors };
}

/** Waits for every image in the viewport to load, then two frames; returns the cumulative layout shift. */
async function settledCls(page: Page): Promise<number> {
  await page.waitForFunction(() =>
    [...document.querySelectorAll<HTMLImageElement>('#w img')]
      .filter((i) => {
        const r = i.getBoundingClientRect();
        return r.top < innerHeight && r.left < innerWidth && r.right > 0 && r.width > 0;
      })
      .every((i) => i.complete && i.naturalWidth > 0),
  );
  return page.evaluate(
    () =>
      new Promise<number>((resolve) =>
        requestAnimationFrame(() =>
          requestAnimationFrame(() => resolve((window as unknown as { __cls: number }).__cls)),
        ),
      ),
  );
}

async function axe(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ path: AXE });
  const violations = await page.evaluate(async () => {
    const r = await (
      window as unknown as { axe: { run(): Promise<{ violations: Array<{ id: string; nodes: unknown[] }> }> } }
    ).axe.run();
    return r.violations.map((v) => `${v.id} (${v.nodes.length})`);
  });
  return violations;
}

function thirdHosts(o: Opened): string[] {
  return [...o.hosts].filter((h) => h !== `localhost:${port}` && h !== `127.0.0.1:${port}`);
}

/** Alt texts from captions (R-EMB-1), hostile captions as text (R-EMB-5), one view without cookie or referrer (R-EMB-4). */
async function gridDetails(page: Page): Promise<void> {
  const res = await page.evaluate(() => ({
    alts: Object.fromEntries(
      [...document.querySelectorAll('#w .fmw-item')].map((li) => [
        li.getAttribute('data-post-id'),
        li.querySelector('img')?.getAttribute('alt'),
      ]),
    ),
    hostile: document.querySelector('#w [data-post-id="p6"] .fmw-text')?.textContent,
    injected: document.querySelectorAll('#w script, #w [onerror]').length,
    pwned: (window as unknown as { __pwned?: number }).__pwned ?? 0,
  }));
  expect(res.alts['p0']).toBe('A sunny morning at the studio, post 0.');
  expect(res.alts['p1']).toBe('Behind the scenes of the new collection.');
  expect(res.alts['p4']).toBe('Post by @studio on Feb 24, 2026'); // hashtags only
  expect(res.alts['p5']).toBe('Post by @atelier on Feb 23, 2026'); // no caption
  expect(res.hostile).toBe(HOSTILE);
  expect(res.injected).toBe(0);
  expect(res.pwned).toBe(0);
  await expect.poll(() => views.filter((v) => v.id === IDS.grid).length).toBe(1);
  const view = views.find((v) => v.id === IDS.grid)!;
  expect(view.method).toBe('POST');
  expect(view.cookie).toBeUndefined();
  expect(view.referer).toBeUndefined();
}

/**
 * A docs screenshot (DOCS_SCREENSHOTS=1): at 760 px wide, the widget's top 600 px (or the page),
 * written as a palette PNG so each file stays well under 150 KB.
 */
async function shot(page: Page, file: string, selector: string | null): Promise<void> {
  await page.setViewportSize({ width: 760, height: 900 });
  await settledCls(page);
  await page.waitForFunction(() =>
    [...document.querySelectorAll<HTMLImageElement>('dialog img')].every((i) => i.complete),
  );
  const box = selector ? await page.locator(selector).boundingBox() : null;
  const clip = box ? { x: box.x, y: box.y, width: box.width, height: Math.min(box.height, 600) } : undefined;
  const png = await page.screenshot(clip ? { clip } : {});
  await sharp(png).png({ palette: true, colours: 96, compressionLevel: 9 }).toFile(path.join(SHOTS!, file));
}

const figures: string[] = [];

describe('widgets embedded by id (headless Chromium, a site of another origin)', () => {
  it.each([
    ['grid', IDS.grid, ''],
    ['list', IDS.list, '&src=1'],
    ['carousel', IDS.carousel, ''],
    ['masonry', IDS.masonry, ''],
  ] as const)(
    '%s: the configured layout, CLS 0 (R-EMB-3), axe 0 violations, no third host (R-EMB-2), alt texts (R-EMB-1)',
    async (layout, id, extra) => {
      const o = await open(`id=${id}${extra}`);
      const { page } = o;
      const cls = await settledCls(page);
      const info = await page.evaluate(() => {
        const root = document.querySelector<HTMLElement>('#w .fmw-w')!;
        const list = root.querySelector<HTMLElement>('.fmw-list')!;
        const cs = getComputedStyle(list);
        return {
          state: document.querySelector('#w')!.getAttribute('data-feedmirror-state'),
          cls: root.className,
          tiles: list.children.length,
          display: cs.display,
          columns: cs.gridTemplateColumns.split(' ').length,
          packed: list.classList.contains('fmw-packed'),
          overflowX: cs.overflowX,
          snap: cs.scrollSnapType,
          accounts: [...root.querySelectorAll('.fmw-acct .fmw-user')].map((a) => a.textContent),
          follow: [...root.querySelectorAll('.fmw-follow')].map((a) => a.getAttribute('href')),
          more: root.querySelector('.fmw-more')?.tagName ?? null,
          captions: root.querySelectorAll('.fmw-visual .fmw-text').length,
          dates: root.querySelectorAll('time').length,
          badges: [...root.querySelectorAll('.fmw-badge')].map((b) => b.textContent),
          arrows: root.querySelectorAll('.fmw-arr').length,
          stale: root.getAttribute('data-stale'),
          imgs: [...root.querySelectorAll<HTMLImageElement>('.fmw-list img')].map((i) => ({
            alt: i.alt,
            w: i.getAttribute('width'),
            h: i.getAttribute('height'),
            sizes: i.getAttribute('sizes'),
          })),
        };
      });
      expect(info.state).toBe('ready');
      expect(info.cls).toContain(`fmw--${layout}`);
      for (const img of info.imgs) {
        expect(img.alt.length).toBeGreaterThan(0);
        expect(Number(img.w)).toBeGreaterThan(0);
        expect(Number(img.h)).toBeGreaterThan(0);
        // The script replaced the viewport guess by the slot's width in px.
        expect(img.sizes).toMatch(/^\d+px$/);
      }
      if (layout === 'grid') {
        expect(info.display).toBe('grid');
        expect(info.columns).toBe(4); // columns.desktop at 1280 px
        expect(info.tiles).toBe(12);
        expect(info.accounts).toEqual(['@studio', '@atelier']);
        expect(info.follow).toEqual(['https://www.instagram.com/studio/', 'https://www.instagram.com/atelier/']);
        expect(info.more).toBe('BUTTON');
        expect(info.badges).toEqual(expect.arrayContaining(['Reel', 'Video', 'Carousel']));
        expect(info.cls).toContain('fmw-cap-hover');
        await gridDetails(page);
      }
      if (layout === 'list') {
        expect(info.display).toBe('flex');
        expect(info.tiles).toBe(6);
        expect(info.captions).toBe(0); // captions: hide
        expect(info.dates).toBe(0); // date: false
        expect(info.badges).toEqual([]); // badges: false
        expect(info.accounts).toEqual(['@studio']);
      }
      if (layout === 'carousel') {
        expect(info.display).toBe('grid');
        expect(info.overflowX).toBe('auto');
        expect(info.snap).toBe('x mandatory');
        expect(info.arrows).toBe(2);
        expect(info.more).toBeNull();
      }
      if (layout === 'masonry') {
        // A grid read left to right, each tile packed under the shortest column.
        expect(info.display).toBe('grid');
        expect(info.columns).toBe(3);
        expect(info.packed).toBe(true);
        expect(info.cls).toContain('fmw--dark');
        // A stale document still shows its posts.
        expect(info.stale).toBe('2026-02-27T10:00:00+00:00');
        expect(info.tiles).toBe(10);
      }
      expect(cls).toBe(0);
      const violations = await axe(page);
      expect(violations).toEqual([]);
      expect(thirdHosts(o)).toEqual([]);
      expect(o.errors).toEqual([]);
      figures.push(`${layout}: CLS ${cls}, axe violations ${violations.length}, ${info.tiles} tiles`);
      if (SHOTS) await shot(page, `widget-${layout}.png`, '#w');
      await page.close();
    },
  );

  it('lightbox: caption, link, slides, video only from the document host (R-EMB-2); arrows move, Esc closes, focus returns; axe 0; then Load more', async () => {
    const o = await open(`id=${IDS.grid}`);
    const { page } = o;
    await page.locator('#w [data-post-id="p1"] .fmw-link').click();
    const box = page.locator('#w dialog.fmw-box');
    await expect.poll(() => box.evaluate((d: HTMLDialogElement) => d.open)).toBe(true);
    const reel = await box.evaluate((d) => ({
      label: d.getAttribute('aria-label'),
      caption: d.querySelector('.fmw-full')?.textContent,
      original: [...d.querySelectorAll('a')].find((a) => a.textContent === 'View the original post')?.href,
      play: d.querySelector('.fmw-stage a')?.getAttribute('href'),
      videos: d.querySelectorAll('video').length,
      focus: d.contains(document.activeElement),
    }));
    expect(reel).toEqual({
      label: 'Post by @atelier',
      caption: 'Behind the scenes of the new collection. Filmed in one take #reel #studio',
      original: 'https://www.instagram.com/p/P1/',
      // The reel's video stays on the platform: its cover links to the original.
      play: 'https://www.instagram.com/p/P1/',
      videos: 0,
      focus: true,
    });
    expect(await axe(page)).toEqual([]);
    // Tab order: close, the cover's link to the original, previous, next, the account, the original.
    const order: string[] = [];
    for (let i = 0; i < 5; i++) {
      await page.keyboard.press('Tab');
      order.push(
        await box.evaluate((d) => {
          const a = document.activeElement!;
          return d.contains(a) ? a.getAttribute('aria-label') || a.textContent.replace('\u25b6', '').trim() : 'outside';
        }),
      );
    }
    expect(order).toEqual(['Play on the original post', 'Previous', 'Next', '@atelier', 'View the original post']);
    await page.keyboard.press('ArrowRight');
    // A video with a copy on the document's host plays in the lightbox.
    expect(await box.locator('video').getAttribute('src')).toBe(`${assets}/media/w/clip.mp4`);
    await page.keyboard.press('ArrowRight');
    expect(await box.locator('.fmw-count').textContent()).toBe('1 / 3');
    await page.keyboard.press('ArrowRight');
    expect(await box.locator('.fmw-count').textContent()).toBe('2 / 3');
    await page.keyboard.press('ArrowLeft');
    await page.keyboard.press('ArrowLeft');
    expect(await box.locator('video').count()).toBe(1);
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('Escape');
    await expect.poll(() => box.evaluate((d: HTMLDialogElement) => d.open)).toBe(false);
    // Focus returns to the tile of the post shown last (the carousel).
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.closest('li')?.getAttribute('data-post-id')))
      .toBe('p3');
    expect(thirdHosts(o)).toEqual([]);
    expect(o.errors).toEqual([]);

    // Load more reveals the next posts from the document (no new request); focus on the first new one.
    const docRequests = () => o.urls.filter((u) => u.includes(`/widgets/${IDS.grid}.json`)).length;
    expect(docRequests()).toBe(1);
    await page.locator('#w .fmw-more').click();
    expect(await page.locator('#w .fmw-item').count()).toBe(20);
    expect(await page.evaluate(() => document.activeElement?.closest('li')?.getAttribute('data-post-id'))).toBe('p12');
    // Every post is shown: the button is gone.
    expect(await page.locator('#w .fmw-more').count()).toBe(0);
    expect(docRequests()).toBe(1);
    if (SHOTS) {
      await page.locator('#w [data-post-id="p0"] .fmw-link').click();
      await shot(page, 'widget-lightbox.png', null);
    }
    await page.close();
  });

  it('the server fragment is enhanced in place: no re-render, CLS 0 with content below (R-EMB-3), arrows and keys', async () => {
    const o = await open(`id=${IDS.carousel}&fragment=1`, { width: 1280, height: 1400 });
    const { page } = o;
    const cls = await settledCls(page);
    const res = await page.evaluate(() => ({
      mark: document.querySelector('#w .fmw-item')?.getAttribute('data-mark'),
      roots: document.querySelectorAll('#w .fmw-w').length,
      styles: document.querySelectorAll('style#feedmirror-widget-style').length,
      arrows: document.querySelectorAll('#w .fmw-arr').length,
    }));
    expect(res).toEqual({ mark: 'server', roots: 1, styles: 1, arrows: 2 });
    expect(cls).toBe(0);
    // Arrow keys move along the tiles; the Next button scrolls the rail.
    await page.locator('#w .fmw-item').first().locator('.fmw-link').focus();
    await page.keyboard.press('ArrowRight');
    expect(await page.evaluate(() => document.activeElement?.closest('li')?.getAttribute('data-post-id'))).toBe('p1');
    await page.locator('#w .fmw-next').click();
    await page.waitForFunction(() => document.querySelector('#w .fmw-list')!.scrollLeft > 100);
    expect(await axe(page)).toEqual([]);
    expect(thirdHosts(o)).toEqual([]);
    figures.push(`carousel from the server fragment (text below it): CLS ${cls}`);
    await page.close();

    // Without JavaScript the fragment alone shows the posts, sized, with alt texts.
    const ctx = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1280, height: 1400 } });
    const plain = await ctx.newPage();
    await plain.goto(`http://localhost:${port}/page?id=${IDS.grid}&fragment=1`);
    const stat = await plain.evaluate(() => ({
      tiles: document.querySelectorAll('#w .fmw-item').length,
      more: document.querySelector('#w a.fmw-more')?.getAttribute('href'),
      sized: [...document.querySelectorAll<HTMLImageElement>('#w .fmw-list img')].every(
        (i) => i.width > 0 && i.height > 0 && i.alt !== '',
      ),
      columns: getComputedStyle(document.querySelector('#w .fmw-list')!).gridTemplateColumns.split(' ').length,
    }));
    expect(stat).toEqual({ tiles: 12, more: 'https://www.instagram.com/studio/', sized: true, columns: 4 });
    await ctx.close();
  });

  it('a document that cannot be loaded shows a quiet message; the feed embed is untouched', async () => {
    const o = await open(`id=x&ghost=1`);
    expect(await o.page.locator('#w').getAttribute('data-feedmirror-state')).toBe('error');
    expect(await o.page.locator('#w').textContent()).toBe('This feed could not be loaded right now.');
    await o.page.close();
    console.log(figures.join('\n'));
  });
});
