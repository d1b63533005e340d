import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/index.ts';
import { publishWidget, WIDGET_KEY } from '../../src/embed/index.ts';
import { feedSchema, type Feed } from '../../src/schema/v1.ts';
import { CHROMIUM, launchChromium } from '../support/chromium.ts';

/**
 * The embeddable widget in a real headless Chromium (Debian's package, driven by playwright-core;
 * nothing downloads a browser). A plain HTML page, the published script, the feeds and real JPEGs
 * are served by a node:http server on 127.0.0.1.
 */
const SCREENSHOTS = path.resolve('test-artifacts/screenshots');

let browser: Browser;
let server: Server;
let base = '';
let storageDir = '';
const images = new Map<string, Buffer>();

function feed(demo: boolean, base: string): Feed {
  const img = (name: string) => `${base}/img/${name}.jpg`;
  const raw: unknown = {
    schemaVersion: 1,
    source: 'instagram',
    origin: {
      kind: 'profile',
      id: '17841400000000001',
      name: 'studio',
      displayName: 'Studio Example',
      url: 'https://www.instagram.com/studio/',
    },
    fetchedAt: '2026-03-01T10:00:00+00:00',
    demo,
    posts: [
      {
        id: 'p-image',
        source: 'instagram',
        type: 'image',
        format: 'post',
        status: 'published',
        url: 'https://www.instagram.com/p/IMAGE/',
        text: 'A sunny morning at the studio with coffee and plants',
        media: [{ url: img('red'), mime: 'image/jpeg', width: 400, height: 300, alt: 'A red square on a table' }],
        thumbnailUrl: img('red'),
        publishedAt: '2026-02-28T09:00:00+00:00',
      },
      {
        id: 'p-reel',
        source: 'instagram',
        type: 'video',
        format: 'reel',
        status: 'published',
        url: 'https://www.instagram.com/reel/REEL/',
        text: 'Behind the scenes of our new collection, filmed in one take on a rainy Tuesday afternoon',
        media: [{ url: 'https://cdn.example/video.mp4', mime: 'video/mp4', width: 360, height: 640 }],
        thumbnailUrl: img('blue'),
        publishedAt: '2026-02-27T09:00:00+00:00',
      },
      {
        id: 'p-video',
        source: 'instagram',
        type: 'video',
        format: 'post',
        status: 'published',
        url: 'https://www.instagram.com/p/VIDEO/',
        text: 'Plain video, not a reel',
        media: [{ url: 'https://cdn.example/video2.mp4', mime: 'video/mp4', width: 320, height: 320 }],
        thumbnailUrl: img('green'),
        publishedAt: '2026-02-26T09:00:00+00:00',
      },
      {
        id: 'p-carousel',
        source: 'instagram',
        type: 'carousel',
        format: 'post',
        status: 'published',
        url: 'https://www.instagram.com/p/CAROUSEL/',
        text: 'Three slides',
        media: [
          { url: img('green'), mime: 'image/jpeg', width: 320, height: 320 },
          { url: img('red'), mime: 'image/jpeg', width: 400, height: 300 },
        ],
        thumbnailUrl: img('green'),
        publishedAt: '2026-02-25T09:00:00+00:00',
      },
      {
        id: 'p-text',
        source: 'instagram',
        type: 'text',
        format: 'post',
        status: 'published',
        url: 'https://www.instagram.com/p/TEXT/',
        text: '<script>window.__pwned = true</script><b>not bold</b>',
        media: [],
        publishedAt: '2026-02-24T09:00:00+00:00',
      },
      {
        id: 'p-link',
        source: 'instagram',
        type: 'link',
        format: 'post',
        status: 'published',
        url: 'https://www.instagram.com/p/LINK/',
        text: 'Read the story',
        media: [],
        link: {
          url: 'https://blog.example/story',
          title: 'Our story <img src=x onerror="window.__pwned=true">',
          domain: 'blog.example',
        },
        publishedAt: '2026-02-23T09:00:00+00:00',
      },
    ],
  };
  // The fixture is a valid schema v1 feed, as the publisher writes it.
  return feedSchema.parse(raw);
}

function page(feedPath: string, attrs: Record<string, string> = {}, second?: string): string {
  const extra = Object.entries(attrs)
    .map(([k, v]) => ` ${k}="${v}"`)
    .join('');
  return `<!doctype html><html><head><meta charset="utf-8"><title>widget</title></head><body>
<h1>My site</h1>
<div id="feed" data-feedmirror-feed="${feedPath}"${extra}></div>
${second ? `<div id="second" data-feedmirror-feed="${second}"></div>` : ''}
<script defer src="/${WIDGET_KEY}"></script>
</body></html>`;
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: install Debian's chromium (apt-get update && apt-get install -y chromium); this test never downloads a browser`,
    );
  }
  for (const [name, rgb] of [
    ['red', { r: 220, g: 40, b: 40 }],
    ['blue', { r: 40, g: 60, b: 220 }],
    ['green', { r: 40, g: 180, b: 80 }],
  ] as const) {
    images.set(
      name,
      await sharp({ create: { width: 64, height: 48, channels: 3, background: rgb } })
        .jpeg()
        .toBuffer(),
    );
  }
  // The script is served as feedmirror publishes it: through publishWidget into storage.
  storageDir = await mkdtemp(path.join(os.tmpdir(), 'feedmirror-widget-'));
  const storage = new LocalStorage(storageDir);
  await publishWidget(storage);

  server = createServer((req, res) => {
    void (async () => {
      const u = new URL(req.url ?? '/', 'http://x');
      const send = (status: number, type: string, body: string | Buffer) =>
        res.writeHead(status, { 'content-type': type }).end(body);
      if (u.pathname === `/${WIDGET_KEY}`) {
        const obj = await storage.get(WIDGET_KEY);
        return obj ? send(200, obj.contentType ?? 'text/plain', obj.body) : send(404, 'text/plain', 'missing');
      }
      if (u.pathname === '/page') {
        const attrs: Record<string, string> = {};
        for (const k of ['data-layout', 'data-limit']) {
          const v = u.searchParams.get(k);
          if (v) attrs[k] = v.replace(/[^a-z0-9]/gi, '');
        }
        const second = u.searchParams.get('second') ?? undefined;
        return send(200, 'text/html; charset=utf-8', page(u.searchParams.get('feed') ?? '', attrs, second));
      }
      if (u.pathname === '/feeds/demo.json') return send(200, 'application/json', JSON.stringify(feed(true, base)));
      if (u.pathname === '/feeds/real.json') return send(200, 'application/json', JSON.stringify(feed(false, base)));
      if (u.pathname === '/feeds/broken.json') return send(500, 'text/plain', 'boom');
      if (u.pathname === '/feeds/notjson.json') return send(200, 'application/json', '{"hello":');
      const m = /^\/img\/(\w+)\.jpg$/.exec(u.pathname);
      const jpeg = m?.[1] ? images.get(m[1]) : undefined;
      if (jpeg) return send(200, 'image/jpeg', jpeg);
      return send(404, 'text/plain', 'not found');
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  if (storageDir) await rm(storageDir, { recursive: true, force: true });
});

async function open(query: string): Promise<{ page: Page; errors: string[] }> {
  const p = await browser.newPage({ viewport: { width: 1200, height: 1600 } });
  const errors: string[] = [];
  p.on('pageerror', (e) => errors.push(e.message));
  await p.goto(`${base}/page?${query}`);
  await p.waitForFunction(() => {
    const nodes = [...document.querySelectorAll('[data-feedmirror-feed]')];
    return (
      nodes.length > 0 && nodes.every((n) => ['ready', 'error'].includes(n.getAttribute('data-feedmirror-state') ?? ''))
    );
  });
  return { page: p, errors };
}

async function imagesLoaded(p: Page): Promise<void> {
  await p.waitForFunction(() =>
    [...document.querySelectorAll<HTMLImageElement>('#feed img')].every((i) => i.complete && i.naturalWidth > 0),
  );
}

describe('embeddable widget in headless Chromium', () => {
  it('grid layout: mirrored images load with width/height from the feed, lazy, alt text, links (R-SCH-10)', async () => {
    const { page: p, errors } = await open('feed=/feeds/real.json&data-layout=grid');
    await imagesLoaded(p);
    const info = await p.evaluate(() => {
      const root = document.querySelector('#feed .fmw')!;
      return {
        gridClass: root.classList.contains('fmw--grid'),
        display: getComputedStyle(root.querySelector('.fmw-list')!).display,
        items: [...root.querySelectorAll('li')].map((li) => {
          const img = li.querySelector('img');
          const a = li.querySelector('a');
          return {
            id: li.getAttribute('data-post-id'),
            img: img && {
              natural: img.naturalWidth,
              width: img.getAttribute('width'),
              height: img.getAttribute('height'),
              alt: img.getAttribute('alt'),
              loading: img.getAttribute('loading'),
            },
            href: a?.getAttribute('href'),
            rel: a?.getAttribute('rel'),
            target: a?.getAttribute('target'),
            badge: li.querySelector('.fmw-badge')?.textContent ?? null,
          };
        }),
      };
    });
    expect(info.gridClass).toBe(true);
    expect(info.display).toBe('grid');
    expect(info.items.map((i) => i.id)).toEqual(['p-image', 'p-reel', 'p-video', 'p-carousel', 'p-text', 'p-link']);
    const byId = Object.fromEntries(info.items.map((i) => [i.id, i]));
    // Images really load (naturalWidth > 0) and carry the feed's media[0] size.
    expect(byId['p-image']!.img).toEqual({
      natural: 64,
      width: '400',
      height: '300',
      alt: 'A red square on a table',
      loading: 'lazy',
    });
    expect(byId['p-reel']!.img).toMatchObject({ natural: 64, width: '360', height: '640', loading: 'lazy' });
    // No alt in the feed: the caption's first words.
    expect(byId['p-reel']!.img!.alt).toBe('Behind the scenes of our new collection, filmed in one take on\u2026');
    expect(byId['p-carousel']!.img).toMatchObject({ natural: 64, width: '320', height: '320', alt: 'Three slides' });
    // Text cards render no image at all.
    expect(byId['p-text']!.img).toBeNull();
    // Reel badge only where format is reel; a plain video gets none.
    expect(info.items.filter((i) => i.badge !== null).map((i) => [i.id, i.badge])).toEqual([['p-reel', 'Reel']]);
    // Every post links to its url, in a new tab without an opener.
    expect(byId['p-image']!.href).toBe('https://www.instagram.com/p/IMAGE/');
    expect(byId['p-link']!.href).toBe('https://blog.example/story');
    for (const item of info.items) {
      expect(item.href).toMatch(/^https:\/\//);
      expect(item.rel).toContain('noopener');
      expect(item.target).toBe('_blank');
    }
    expect(errors).toEqual([]);
    await mkdir(SCREENSHOTS, { recursive: true });
    await p.screenshot({ path: path.join(SCREENSHOTS, 'widget-grid.png'), fullPage: true });
    await p.close();
  });

  it('demo label is visible on a demo feed only (R-SCH-11)', async () => {
    const demo = await open('feed=/feeds/demo.json');
    const label = demo.page.locator('#feed .fmw-demo');
    expect(await label.isVisible()).toBe(true);
    expect(await label.textContent()).toBe('Demo feed');
    await demo.page.close();

    const real = await open('feed=/feeds/real.json');
    expect(await real.page.locator('#feed .fmw-demo').count()).toBe(0);
    await real.page.close();
  });

  it('list layout shows captions, text cards and link cards; data-limit caps the posts', async () => {
    const { page: p } = await open('feed=/feeds/real.json&data-layout=list');
    await imagesLoaded(p);
    const info = await p.evaluate(() => ({
      listClass: document.querySelector('#feed .fmw')!.classList.contains('fmw--list'),
      display: getComputedStyle(document.querySelector('#feed .fmw-list')!).display,
      imageCaption: document.querySelector('[data-post-id="p-image"] .fmw-text')?.textContent,
      captionVisible: document.querySelector<HTMLElement>('[data-post-id="p-image"] .fmw-text')?.offsetParent !== null,
      linkTitle: document.querySelector('[data-post-id="p-link"] .fmw-title')?.textContent,
      linkDomain: document.querySelector('[data-post-id="p-link"] .fmw-domain')?.textContent,
      dates: [...document.querySelectorAll('#feed time')].map((t) => t.getAttribute('datetime')),
    }));
    expect(info.listClass).toBe(true);
    expect(info.display).toBe('flex');
    expect(info.imageCaption).toBe('A sunny morning at the studio with coffee and plants');
    expect(info.captionVisible).toBe(true);
    expect(info.linkTitle).toBe('Our story <img src=x onerror="window.__pwned=true">');
    expect(info.linkDomain).toBe('blog.example');
    expect(info.dates[0]).toBe('2026-02-28T09:00:00.000Z');
    await p.screenshot({ path: path.join(SCREENSHOTS, 'widget-list.png'), fullPage: true });
    await p.close();

    const limited = await open('feed=/feeds/real.json&data-limit=2');
    expect(await limited.page.locator('#feed li').count()).toBe(2);
    await limited.page.close();
  });

  it('renders feed text as text: a caption holding <script> never runs, no markup is created', async () => {
    const { page: p, errors } = await open('feed=/feeds/real.json&data-layout=list');
    const res = await p.evaluate(() => ({
      text: document.querySelector('[data-post-id="p-text"] .fmw-text')?.textContent,
      scriptsInside: document.querySelectorAll('#feed script, #feed b, #feed [onerror]').length,
      imgsInLink: document.querySelectorAll('[data-post-id="p-link"] img').length,
      pwned: (window as unknown as { __pwned?: boolean }).__pwned ?? false,
    }));
    expect(res.text).toBe('<script>window.__pwned = true</script><b>not bold</b>');
    expect(res.scriptsInside).toBe(0);
    expect(res.imgsInLink).toBe(0);
    expect(res.pwned).toBe(false);
    expect(errors).toEqual([]);
    await p.close();
  });

  it('a feed that fails to load shows a quiet message; style is injected once for several widgets', async () => {
    const { page: p, errors } = await open('feed=/feeds/broken.json&second=/feeds/notjson.json');
    const res = await p.evaluate(() => ({
      first: document.querySelector('#feed')!.textContent,
      second: document.querySelector('#second')!.textContent,
      states: [...document.querySelectorAll('[data-feedmirror-feed]')].map((n) =>
        n.getAttribute('data-feedmirror-state'),
      ),
      styles: document.querySelectorAll('#feedmirror-widget-style').length,
    }));
    expect(res.states).toEqual(['error', 'error']);
    expect(res.first).toBe('This feed could not be loaded right now.');
    expect(res.second).toBe('This feed could not be loaded right now.');
    expect(res.styles).toBe(1);
    expect(errors).toEqual([]);
    await p.close();
  });

  it('two widgets on one page each render their own feed with one style element', async () => {
    const { page: p } = await open('feed=/feeds/demo.json&second=/feeds/real.json');
    const res = await p.evaluate(() => ({
      styles: document.querySelectorAll('style#feedmirror-widget-style').length,
      demoLabels: [...document.querySelectorAll('[data-feedmirror-feed]')].map(
        (n) => n.querySelectorAll('.fmw-demo').length,
      ),
    }));
    expect(res.styles).toBe(1);
    expect(res.demoLabels).toEqual([1, 0]);
    await p.close();
  });
});
