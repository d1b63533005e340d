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
import { publishWidget, WIDGET_CSS_KEY, WIDGET_KEY } from '../../src/embed/index.ts';
import { renderWidgetFragment } from '../../src/embed/markup.ts';
import type { WidgetDocument } from '../../src/schema/widget-document.ts';
import { mirrorImages, widgetDoc, type MirroredImage } from '../support/widget-docs.ts';

/**
 * The widget on client sites as a visitor sees it, in headless Chromium: the page from
 * http://localhost:PORT, the script, its stylesheet, the documents and the images from
 * http://127.0.0.1:PORT (the bucket). Masonry reads left to right; the carousel's arrows are off
 * at its ends; theme auto takes the site's own colours whatever the visitor's OS prefers; and a
 * site whose Content-Security-Policy refuses inline styles shows the widget styled, with no
 * violation, through the published stylesheet or the script tag's nonce.
 */
const CHROMIUM = '/usr/bin/chromium';
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const CSP_VIOLATION = 'violates the following Content Security Policy directive';

let browser: Browser;
let server: Server;
let port = 0;
let assets = '';
let storageDir = '';
let storage: LocalStorage;
let images: MirroredImage[] = [];
const files = new Map<string, { type: string; body: Buffer }>();

const IDS = {
  masonry: 'w_sitemasonr',
  carousel: 'w_sitecarous',
  auto: 'w_siteautoaa',
  strict: 'w_sitestrict',
} as const;

interface PageSpec {
  id: string;
  /** The site's own colours (body), or none. */
  colors?: { bg: string; fg: string };
  /** The Content-Security-Policy header of the page. */
  csp?: string;
  /** <link rel=stylesheet> to the site's own copy of the widget's stylesheet. */
  linkCss?: boolean;
  /** A nonce on the script tag. */
  nonce?: string;
  /** The server's static fragment inside the container (widgets/<id>.html). */
  fragment?: boolean;
}

const pages = new Map<string, PageSpec>();
const docs = new Map<string, WidgetDocument>();

function pageHtml(spec: PageSpec): string {
  // The site's own colours (pages without a policy of their own).
  const style = spec.colors ? ` style="background:${spec.colors.bg};color:${spec.colors.fg};padding:24px"` : '';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>A client site</title>
${spec.linkCss ? '<link rel="stylesheet" href="/assets/feedmirror-widget.css">' : ''}</head><body>
<main${style}><h1>A client site</h1>
<div id="w" data-feedmirror-widget="${spec.id}">${spec.fragment ? renderWidgetFragment(docs.get(spec.id)!) : ''}</div>
${spec.fragment ? '<p>Opening hours and address, below the widget.</p>' : ''}</main>
<script defer src="${assets}/${WIDGET_KEY}"${spec.nonce ? ` nonce="${spec.nonce}"` : ''}></script>
</body></html>`;
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium`);
  storageDir = await mkdtemp(path.join(os.tmpdir(), 'feedmirror-widget-site-'));
  storage = new LocalStorage(storageDir);
  await publishWidget(storage);
  server = createServer((req, res) => {
    void (async () => {
      const u = new URL(req.url ?? '/', 'http://x');
      const send = (status: number, type: string, body: string | Buffer, extra: Record<string, string> = {}) =>
        res.writeHead(status, { 'content-type': type, 'access-control-allow-origin': '*', ...extra }).end(body);
      const spec = u.pathname === '/page' ? pages.get(u.searchParams.get('p') ?? '') : undefined;
      if (spec)
        return send(
          200,
          'text/html; charset=utf-8',
          pageHtml(spec),
          spec.csp ? { 'content-security-policy': spec.csp } : {},
        );
      // The site's own copy of the published stylesheet (what `style-src 'self'` allows).
      if (u.pathname === '/assets/feedmirror-widget.css') {
        const css = await storage.get(WIDGET_CSS_KEY);
        return send(200, css!.contentType!, css!.body);
      }
      if (/^\/views\/w_\w+$/.test(u.pathname)) return send(204, 'text/plain', '');
      const key = u.pathname.slice(1);
      if (key.startsWith('widget/') || key.startsWith('widgets/')) {
        const obj = await storage.get(key);
        return obj ? send(200, obj.contentType ?? 'application/octet-stream', obj.body) : send(404, 'text/plain', '');
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
    const body = await sharp({ create: { width: 80, height: 80, channels: 3, background: { r: 90, g: 60, b: 160 } } })
      .jpeg()
      .toBuffer();
    files.set(`/media/w/i${i}-avatar.jpg`, { type: 'image/jpeg', body });
  }
  const all: WidgetDocument[] = [
    // Six posts on four columns, captions under the pictures (tiles of different heights).
    widgetDoc(assets, images, {
      id: IDS.masonry,
      layout: 'masonry',
      posts: 6,
      options: { theme: 'light', captions: 'show', columns: { phone: 2, tablet: 3, desktop: 4 }, gap: 10 },
    }),
    widgetDoc(assets, images, {
      id: IDS.carousel,
      layout: 'carousel',
      options: { theme: 'light', limit: 9, columns: { phone: 1, tablet: 2, desktop: 3 } },
    }),
    widgetDoc(assets, images, { id: IDS.auto, layout: 'grid', options: { theme: 'auto', captions: 'show' } }),
    widgetDoc(assets, images, { id: IDS.strict, layout: 'grid', viewsUrl: `${assets}/views/${IDS.strict}` }),
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
  console: string[];
  errors: string[];
}

async function open(
  name: string,
  spec: PageSpec,
  opts: { colorScheme?: 'light' | 'dark'; viewport?: { width: number; height: number } } = {},
): Promise<Opened> {
  pages.set(name, spec);
  const ctx = await browser.newContext({
    viewport: opts.viewport ?? { width: 1280, height: 1400 },
    colorScheme: opts.colorScheme ?? 'light',
  });
  const page = await ctx.newPage();
  const messages: string[] = [];
  const errors: string[] = [];
  page.on('console', (m) => messages.push(m.text()));
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('close', () => void ctx.close().catch(() => {}));
  // Every layout shift from the first paint on (the Layout Instability API).
  await page.addInitScript(() => {
    const w = window as unknown as { __cls: number };
    w.__cls = 0;
    new PerformanceObserver((list) => {
      for (const e of list.getEntries() as Array<PerformanceEntry & { value: number; hadRecentInput: boolean }>)
        if (!e.hadRecentInput) w.__cls += e.value;
    }).observe({ type: 'layout-shift', buffered: true });
  });
  await page.goto(`http://localhost:${port}/page?p=${name}`);
  await page.waitForFunction(() => document.querySelector('#w')?.getAttribute('data-feedmirror-state') === 'ready');
  return { page, console: messages, errors };
}

async function imagesLoaded(page: Page): Promise<void> {
  await page.waitForFunction(() =>
    [...document.querySelectorAll<HTMLImageElement>('#w .fmw-list img')]
      .filter((i) => {
        const r = i.getBoundingClientRect();
        return r.top < innerHeight && r.left < innerWidth && r.right > 0 && r.width > 0;
      })
      .every((i) => i.complete && i.naturalWidth > 0),
  );
}

async function axe(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: AXE });
  return page.evaluate(async () => {
    const r = await (
      window as unknown as { axe: { run(): Promise<{ violations: Array<{ id: string; nodes: unknown[] }> }> } }
    ).axe.run();
    return r.violations.map((v) => `${v.id} (${v.nodes.length})`);
  });
}

/** Cumulative layout shift so far, two frames after the images loaded. */
async function cls(page: Page): Promise<number> {
  return page.evaluate(
    () =>
      new Promise<number>((resolve) =>
        requestAnimationFrame(() =>
          requestAnimationFrame(() => resolve((window as unknown as { __cls: number }).__cls)),
        ),
      ),
  );
}

/** The colour a visitor sees at (x, y) of the page, as [r, g, b]. */
async function pixel(page: Page, x: number, y: number): Promise<number[]> {
  const png = await page.screenshot({ clip: { x, y, width: 1, height: 1 } });
  const { data } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return [...data];
}

const near = (a: number[], b: number[]) => a.every((v, i) => Math.abs(v - b[i]!) <= 3);

describe('the widget on client sites (headless Chromium)', () => {
  it('masonry reads left to right, newest first: six posts on four columns fill every column, each tile under the last of its column', async () => {
    const { page, errors } = await open('masonry', { id: IDS.masonry });
    await imagesLoaded(page);
    const tiles = await page.evaluate(() =>
      [...document.querySelectorAll<HTMLElement>('#w .fmw-item')].map((li) => {
        const r = li.firstElementChild!.getBoundingClientRect();
        return { id: li.dataset.postId!, x: Math.round(r.left), top: r.top, bottom: r.bottom };
      }),
    );
    expect(tiles.map((t) => t.id)).toEqual(['p0', 'p1', 'p2', 'p3', 'p4', 'p5']);
    const columns = [...new Set(tiles.map((t) => t.x))].sort((a, b) => a - b);
    // Four columns, none empty while posts remain.
    expect(columns).toHaveLength(4);
    // The first row, left to right, is the four newest posts, their tops aligned.
    const firstRow = [...tiles].sort((a, b) => a.top - b.top || a.x - b.x).slice(0, 4);
    expect(firstRow.map((t) => t.id)).toEqual(['p0', 'p1', 'p2', 'p3']);
    expect(new Set(firstRow.map((t) => Math.round(t.top))).size).toBe(1);
    expect(firstRow.map((t) => t.x)).toEqual(columns);
    // The next posts go under the shortest columns: 10 px (the gap) below the tile above them,
    // never overlapping it.
    for (const t of tiles.slice(4)) {
      const above = tiles.filter((o) => o.x === t.x && o.bottom <= t.top).sort((a, b) => b.bottom - a.bottom)[0]!;
      expect(above, t.id).toBeDefined();
      expect(t.top - above.bottom, t.id).toBeGreaterThanOrEqual(9.5);
      expect(t.top - above.bottom, t.id).toBeLessThanOrEqual(11.5);
    }
    const shortest = [...firstRow].sort((a, b) => a.bottom - b.bottom);
    expect(tiles.find((t) => t.id === 'p4')!.x).toBe(shortest[0]!.x);
    expect(await cls(page)).toBe(0);
    expect(await axe(page)).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();

    // From the server's fragment the tiles stay where the page drew them (R-EMB-3): in rows, left
    // to right, newest first, every column used.
    const frag = await open('masonry-fragment', { id: IDS.masonry, fragment: true });
    await imagesLoaded(frag.page);
    const rows = await frag.page.evaluate(() =>
      [...document.querySelectorAll<HTMLElement>('#w .fmw-item')].map((li) => {
        const r = li.getBoundingClientRect();
        return { id: li.dataset.postId!, x: Math.round(r.left), top: Math.round(r.top) };
      }),
    );
    expect(new Set(rows.map((t) => t.x)).size).toBe(4);
    expect(rows.slice(0, 4).every((t) => t.top === rows[0]!.top)).toBe(true);
    expect(rows.slice(0, 4).map((t) => t.x)).toEqual([...rows.slice(0, 4).map((t) => t.x)].sort((a, b) => a - b));
    expect(rows[4]!.top).toBeGreaterThan(rows[0]!.top);
    expect(await cls(frag.page)).toBe(0);
    await frag.page.close();
  });

  it("the carousel's Previous is off at the first tiles and Next at the last; each arrow then moves the rail", async () => {
    const { page, errors } = await open('carousel', { id: IDS.carousel });
    await imagesLoaded(page);
    const state = () =>
      page.evaluate(() => {
        const look = (sel: string) => {
          const b = document.querySelector<HTMLElement>(`#w ${sel}`)!;
          return { disabled: b.getAttribute('aria-disabled'), opacity: Number(getComputedStyle(b).opacity) };
        };
        return {
          prev: look('.fmw-arr.fmw-prev'),
          next: look('.fmw-arr.fmw-next'),
          scroll: Math.round(document.querySelector('#w .fmw-list')!.scrollLeft),
        };
      });
    /** Waits until the rail has stopped scrolling (the same offset 100 ms apart) where `where` says. */
    const settled = async (where: (left: number) => boolean) => {
      let last = -1;
      await expect
        .poll(
          async () => {
            const left = (await state()).scroll;
            const still = left === last && where(left);
            last = left;
            return still;
          },
          { interval: 100, timeout: 10_000 },
        )
        .toBe(true);
    };
    const start = await state();
    expect(start.scroll).toBe(0);
    expect(start.prev).toEqual({ disabled: 'true', opacity: expect.any(Number) });
    expect(start.prev.opacity).toBeLessThan(0.5); // it looks off
    expect(start.next).toEqual({ disabled: 'false', opacity: 1 });
    // Previous at the start does nothing (a click on it anyway: Playwright itself treats it as disabled).
    await page.locator('#w .fmw-arr.fmw-prev').click({ force: true });
    expect((await state()).scroll).toBe(0);
    // Next to the end: nine posts, three per view, so two pages.
    for (let i = 0; i < 2; i++) {
      const before = (await state()).scroll;
      await page.locator('#w .fmw-arr.fmw-next').click();
      await settled((left) => left > before + 100);
    }
    await expect.poll(async () => (await state()).next.disabled).toBe('true');
    const end = await state();
    expect(end.next.opacity).toBeLessThan(0.5);
    expect(end.prev).toEqual({ disabled: 'false', opacity: 1 });
    await page.locator('#w .fmw-arr.fmw-next').click({ force: true });
    expect((await state()).scroll).toBe(end.scroll);
    await page.locator('#w .fmw-arr.fmw-prev').click();
    await settled((left) => left < end.scroll - 100);
    await expect.poll(async () => (await state()).next.disabled).toBe('false');
    expect(await axe(page)).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("theme auto takes the site's colours: no black box on a white site for a dark-mode visitor, dark on a dark site for a light-mode one", async () => {
    // A white site, a visitor whose OS prefers dark.
    const white = await open(
      'auto-white',
      { id: IDS.auto, colors: { bg: '#ffffff', fg: '#222222' } },
      { colorScheme: 'dark' },
    );
    await imagesLoaded(white.page);
    const seen = async (page: Page) => {
      const box = await page.evaluate(() => {
        const root = document.querySelector<HTMLElement>('#w .fmw-w')!;
        const r = root.getBoundingClientRect();
        return {
          x: r.left + 3,
          y: r.top + 3,
          text: getComputedStyle(root.querySelector('.fmw-text')!).color,
          user: getComputedStyle(root.querySelector('.fmw-user')!).color,
        };
      });
      return { ...box, px: await pixel(page, box.x, box.y) };
    };
    const w = await seen(white.page);
    // What shows in the widget's padding is the site's white, and its text is the site's colour.
    expect(w.px).toSatisfy((p: number[]) => near(p, [255, 255, 255]));
    expect(w.text).toBe('rgb(34, 34, 34)');
    expect(w.user).toBe('rgb(34, 34, 34)');
    expect(await axe(white.page)).toEqual([]);
    // The lightbox: the site's background and text colour, not the visitor's dark.
    await white.page.locator('#w .fmw-item').first().locator('.fmw-link').click();
    const box = await white.page.evaluate(() => {
      const d = document.querySelector<HTMLDialogElement>('#w dialog')!;
      return { open: d.open, bg: getComputedStyle(d).backgroundColor, fg: getComputedStyle(d).color };
    });
    expect(box).toEqual({ open: true, bg: 'rgb(255, 255, 255)', fg: 'rgb(34, 34, 34)' });
    expect(white.errors).toEqual([]);
    await white.page.close();

    // A dark site, a visitor whose OS prefers light.
    const dark = await open(
      'auto-dark',
      { id: IDS.auto, colors: { bg: '#101820', fg: '#eeeeee' } },
      { colorScheme: 'light' },
    );
    await imagesLoaded(dark.page);
    const d = await seen(dark.page);
    expect(d.px).toSatisfy((p: number[]) => near(p, [16, 24, 32]));
    expect(d.text).toBe('rgb(238, 238, 238)');
    expect(await axe(dark.page)).toEqual([]);
    await dark.page.locator('#w .fmw-item').first().locator('.fmw-link').click();
    expect(await dark.page.evaluate(() => getComputedStyle(document.querySelector('#w dialog')!).backgroundColor)).toBe(
      'rgb(16, 24, 32)',
    );
    await dark.page.close();
  });

  it.each([
    ['the published stylesheet, copied to the site', { linkCss: true }, "style-src 'self'"],
    ['the nonce of the script tag', { nonce: 'n0nceF0rTheWidget' }, "style-src 'nonce-n0nceF0rTheWidget'"],
  ] as const)(
    'a site with a strict Content-Security-Policy shows the widget styled, no violation: %s',
    async (_name, extra, styleSrc) => {
      const csp = [
        "default-src 'none'",
        styleSrc,
        `script-src ${assets}`,
        `img-src ${assets} data:`,
        `connect-src ${assets}`,
      ].join('; ');
      const {
        page,
        console: messages,
        errors,
      } = await open(`strict-${styleSrc.length}`, {
        id: IDS.strict,
        csp,
        ...extra,
      });
      await imagesLoaded(page);
      const look = await page.evaluate(() => {
        const root = document.querySelector<HTMLElement>('#w .fmw-w')!;
        const list = root.querySelector<HTMLElement>('.fmw-list')!;
        const tile = list.querySelector<HTMLElement>('.fmw-item img')!.getBoundingClientRect();
        return {
          display: getComputedStyle(list).display,
          columns: getComputedStyle(list).gridTemplateColumns.split(' ').length,
          padding: getComputedStyle(root).paddingTop,
          square: Math.abs(tile.width - tile.height) < 1,
          follow: getComputedStyle(root.querySelector('.fmw-follow')!).backgroundColor,
          styles: document.querySelectorAll('style').length,
        };
      });
      expect(look).toEqual({
        display: 'grid',
        columns: 4,
        padding: '8px',
        square: true,
        follow: 'rgb(29, 78, 216)',
        styles: 'nonce' in extra ? 1 : 0,
      });
      expect(messages.filter((m) => m.includes(CSP_VIOLATION))).toEqual([]);
      expect(errors).toEqual([]);
      await page.close();
    },
  );
});
