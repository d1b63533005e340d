import { gzipSync } from 'node:zlib';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import vm from 'node:vm';
import { afterAll, describe, expect, it } from 'vitest';
import { rgbaToThumbHash, thumbHashToRGBA } from 'thumbhash';
import { LocalStorage } from '../../src/storage/index.ts';
import { bundleWidget } from '../../src/embed/bundle.ts';
import {
  publishWidget,
  widgetSource,
  WIDGET_CACHE_CONTROL,
  WIDGET_FILENAME,
  WIDGET_CSS_KEY,
  WIDGET_KEY,
} from '../../src/embed/index.ts';

/** The widget's pure helpers, run in a bare VM context (no document: the script only registers). */
interface Helpers {
  safeUrl(v: unknown): string | null;
  parseLimit(v: unknown): number;
  parseLayout(v: unknown): 'grid' | 'list';
  firstWords(v: unknown): string;
  altText(post: unknown, feed: unknown): string;
  imageSize(post: unknown, sizes?: unknown[]): { width: number; height: number } | null;
  cardKind(post: unknown): 'visual' | 'text' | 'link';
  imageSizes(list: unknown): Array<{ url: string; width: number; height: number; mime: string }>;
  srcsetFor(sizes: unknown[], mime: string): string;
  slotWidth(layout: string, containerWidth: number, aspect: number): number | null;
  placeholderOf(ph: unknown): { color: string | null; hash: number[] | null } | null;
  thumbHashToRGBA(hash: number[]): { w: number; h: number; rgba: Uint8ClampedArray };
}
async function shipped(): Promise<{ helpers: Helpers; css: string }> {
  const ctx: { FeedMirrorWidget?: { helpers: Helpers; css: string } } = {};
  vm.runInNewContext((await widgetSource()).toString('utf8'), ctx);
  return ctx.FeedMirrorWidget!;
}
async function helpers(): Promise<Helpers> {
  return (await shipped()).helpers;
}

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('widget helpers', () => {
  it('accepts only absolute http(s) URLs (no javascript: or data: links from a feed)', async () => {
    const h = await helpers();
    expect(h.safeUrl('https://a.example/x')).toBe('https://a.example/x');
    expect(h.safeUrl('HTTP://a.example/')).toBe('HTTP://a.example/');
    expect(h.safeUrl('javascript:alert(1)')).toBeNull();
    expect(h.safeUrl(' https://a.example')).toBeNull();
    expect(h.safeUrl('data:image/png;base64,AAA')).toBeNull();
    expect(h.safeUrl('//a.example/x')).toBeNull();
    expect(h.safeUrl(42)).toBeNull();
  });

  it('parses data-limit and data-layout with safe defaults', async () => {
    const h = await helpers();
    expect(h.parseLimit('5')).toBe(5);
    expect(h.parseLimit(null)).toBe(12);
    expect(h.parseLimit('0')).toBe(12);
    expect(h.parseLimit('-3')).toBe(12);
    expect(h.parseLimit('abc')).toBe(12);
    expect(h.parseLimit('5000')).toBe(100);
    expect(h.parseLayout('list')).toBe('list');
    expect(h.parseLayout('grid')).toBe('grid');
    expect(h.parseLayout('carousel')).toBe('grid');
    expect(h.parseLayout(null)).toBe('grid');
  });

  it('alt text: media alt, else the caption first words, else the account name', async () => {
    const h = await helpers();
    const feed = { origin: { displayName: 'Studio' } };
    expect(h.altText({ media: [{ alt: '  A cat  ' }], text: 'caption' }, feed)).toBe('A cat');
    expect(h.altText({ media: [{}], text: 'short   caption\nhere' }, feed)).toBe('short caption here');
    expect(
      h.altText({ media: [], text: 'one two three four five six seven eight nine ten eleven twelve thirteen' }, feed),
    ).toBe('one two three four five six seven eight nine ten eleven twelve\u2026');
    expect(h.firstWords('x'.repeat(300)).length).toBeLessThanOrEqual(121);
    expect(h.altText({ media: [], text: '' }, feed)).toBe('Post by Studio');
    expect(h.altText({ media: [], text: '' }, {})).toBe('Post');
  });

  it('image size from media[0], else from aspectRatio, else none', async () => {
    const h = await helpers();
    expect(h.imageSize({ media: [{ width: 1080, height: 1350 }] })).toEqual({ width: 1080, height: 1350 });
    expect(h.imageSize({ media: [{ width: 1080 }], aspectRatio: 0.8 })).toEqual({ width: 1080, height: 1350 });
    expect(h.imageSize({ media: [{ width: -1, height: 10 }] })).toBeNull();
    expect(h.imageSize({ media: [] })).toBeNull();
  });

  it('the card is chosen from type, never from format (R-SCH-10); a visual post without cover is a text card (R-CNV-12)', async () => {
    const h = await helpers();
    expect(h.cardKind({ type: 'video', format: 'reel', thumbnailUrl: 'https://c/x.jpg' })).toBe('visual');
    expect(h.cardKind({ type: 'text', format: 'reel', thumbnailUrl: 'https://c/x.jpg' })).toBe('text');
    expect(h.cardKind({ type: 'image', format: 'post' })).toBe('text');
    expect(h.cardKind({ type: 'image', thumbnailUrl: 'javascript:x' })).toBe('text');
    expect(h.cardKind({ type: 'link', link: { url: 'https://b.example' } })).toBe('link');
    expect(h.cardKind({ type: 'link', link: { url: 'javascript:x' } })).toBe('text');
  });

  it('srcset from the sizes extension, one candidate per width, the format asked for first', async () => {
    const h = await helpers();
    const sizes = h.imageSizes([
      { url: 'https://m.example/a.jpg', width: 1080, height: 1350, mime: 'image/jpeg' },
      { url: 'https://m.example/a-w160.webp', width: 160, height: 200, mime: 'image/webp' },
      { url: 'https://m.example/a-w160.avif', width: 160, height: 200, mime: 'image/avif' },
      { url: 'https://m.example/a-w360.webp', width: 360, height: 450, mime: 'image/webp' },
      { url: 'javascript:alert(1)', width: 240, height: 300, mime: 'image/webp' },
      { url: 'https://m.example/bad.webp', width: -1, height: 300, mime: 'image/webp' },
      'nonsense',
    ]);
    expect(sizes.map((s) => s.width)).toEqual([160, 160, 360, 1080]);
    expect(h.srcsetFor(sizes, 'image/webp')).toBe(
      'https://m.example/a-w160.webp 160w, https://m.example/a-w360.webp 360w, https://m.example/a.jpg 1080w',
    );
    // The AVIF <source> keeps the ladder's other steps from the formats every browser shows.
    expect(h.srcsetFor(sizes, 'image/avif')).toBe(
      'https://m.example/a-w160.avif 160w, https://m.example/a-w360.webp 360w, https://m.example/a.jpg 1080w',
    );
    // A plain v1 feed: no sizes, no srcset (src alone).
    expect(h.imageSizes(undefined)).toEqual([]);
    expect(h.srcsetFor([], 'image/webp')).toBe('');
    // width/height come from the original (the top of the ladder) before media[0].
    expect(h.imageSize({ media: [{ width: 10, height: 10 }] }, sizes)).toEqual({ width: 1080, height: 1350 });
  });

  it('the slot width of a grid column follows the widget width; landscape tiles need more', async () => {
    const h = await helpers();
    // 344 px wide: two columns of 168 px (gap 8).
    expect(h.slotWidth('grid', 344, 0.8)).toBe(168);
    expect(h.slotWidth('grid', 344, 1.78)).toBe(Math.ceil(168 * 1.78));
    // 1184 px: seven columns of 162 px.
    expect(h.slotWidth('grid', 1184, 1)).toBe(Math.ceil((1184 - 6 * 8) / 7));
    expect(h.slotWidth('list', 0, 1)).toBe(120);
    expect(h.slotWidth('grid', 0, 1)).toBeNull();
  });

  it('placeholders: a #rrggbb colour and a base64 ThumbHash, anything else ignored', async () => {
    const h = await helpers();
    expect(h.placeholderOf({ color: '#aabbcc' })).toEqual({ color: '#aabbcc', hash: null });
    expect(h.placeholderOf({ color: 'red;background:url(x)' })).toBeNull();
    expect(h.placeholderOf({ color: 'red', thumbhash: 'not base64!' })).toBeNull();
    expect(h.placeholderOf(null)).toBeNull();
  });

  it('the widget decodes a ThumbHash exactly as the thumbhash package does', async () => {
    const h = await helpers();
    const w = 60;
    const rgba = new Uint8Array(w * 40 * 4);
    for (let i = 0; i < w * 40; i++) rgba.set([(i * 7) % 256, (i * 3) % 256, 128, 255], i * 4);
    const hash = [...rgbaToThumbHash(w, 40, rgba)];
    const ours = h.thumbHashToRGBA(hash);
    const theirs = thumbHashToRGBA(hash);
    expect([ours.w, ours.h]).toEqual([theirs.w, theirs.h]);
    // Uint8ClampedArray rounds where the package's Uint8Array truncates: at most 1 apart.
    const diff = Math.max(...[...theirs.rgba].map((v, i) => Math.abs(v - ours.rgba[i]!)));
    expect(diff).toBeLessThanOrEqual(1);
  });

  it('the script is at most 12 KB gzipped, dependency-free and holds no token (R-TOK-11)', async () => {
    const src = (await widgetSource()).toString('utf8');
    // What a page downloads: the shipped copy (comments and indentation left out), gzipped.
    expect(gzipSync(src).length).toBeLessThanOrEqual(12 * 1024);
    expect(src.length).toBeLessThan(40 * 1024);
    expect(src).not.toMatch(/access_token|client_secret|\bimport\b|\brequire\(/);
    expect(src).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
    // Only the header and the ThumbHash licence notice remain of the comments.
    expect(src.match(/\/\*/g)).toHaveLength(2);
    expect(src).toMatch(/^\/\*! feedmirror widget/);
    expect(src).toContain('MIT');
    // Bundled and minified by esbuild from src/embed/script/: one strict function, nothing global
    // but FeedMirrorWidget.
    expect(src).toMatch(/^\/\*![\s\S]*?\*\/\n'use strict';\n\(\(\)=>\{/);
    expect(src.split('\n').length).toBeLessThan(12);
    console.log(`widget script: ${src.length} B shipped, ${gzipSync(src).length} B gzipped`);
  });

  it('the shipped bytes follow from the sources alone: bundling again gives the same bytes (verify compares them)', async () => {
    expect((await bundleWidget()).equals(await widgetSource())).toBe(true);
  });

  it('publishWidget puts the script and its stylesheet under widget/ with their types and cache policy, once', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'feedmirror-widget-unit-'));
    dirs.push(dir);
    const storage = new LocalStorage(dir, 'https://media.example/');
    const first = await publishWidget(storage);
    expect(WIDGET_KEY).toBe(`widget/${WIDGET_FILENAME}`);
    expect(first).toEqual({
      key: 'widget/feedmirror-widget.js',
      url: storage.publicUrl('widget/feedmirror-widget.js'),
      stylesheetUrl: storage.publicUrl('widget/feedmirror-widget.css'),
      written: true,
    });
    // The stylesheet file holds the very rules the script injects (a strict CSP links it instead).
    const css = await storage.get(WIDGET_CSS_KEY);
    expect(css?.contentType).toBe('text/css; charset=utf-8');
    expect(css?.cacheControl).toBe(WIDGET_CACHE_CONTROL);
    const { css: scriptCss } = await shipped();
    expect(css?.body.toString('utf8')).toContain(scriptCss);
    expect(scriptCss).toContain('.fmw-w{');
    const stored = await storage.get(WIDGET_KEY);
    expect(stored?.body.equals(await widgetSource())).toBe(true);
    expect(stored?.contentType).toMatch(/^application\/javascript/);
    expect(stored?.cacheControl).toBe(WIDGET_CACHE_CONTROL);
    expect(WIDGET_CACHE_CONTROL).toBe('public, max-age=3600');
    // Unchanged content is not rewritten; changed content is.
    expect((await publishWidget(storage)).written).toBe(false);
    await storage.put(WIDGET_KEY, Buffer.from('old'), {
      contentType: 'application/javascript',
      cacheControl: 'no-cache',
    });
    expect((await publishWidget(storage)).written).toBe(true);
  });
});
