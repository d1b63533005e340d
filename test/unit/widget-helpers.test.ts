import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import vm from 'node:vm';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/index.ts';
import { publishWidget, widgetSource, WIDGET_CACHE_CONTROL, WIDGET_FILENAME, WIDGET_KEY } from '../../src/widget/index.ts';

/** The widget's pure helpers, run in a bare VM context (no document: the script only registers). */
interface Helpers {
  safeUrl(v: unknown): string | null;
  parseLimit(v: unknown): number;
  parseLayout(v: unknown): 'grid' | 'list';
  firstWords(v: unknown): string;
  altText(post: unknown, feed: unknown): string;
  imageSize(post: unknown): { width: number; height: number } | null;
  cardKind(post: unknown): 'visual' | 'text' | 'link';
}
async function helpers(): Promise<Helpers> {
  const ctx: { FeedMirrorWidget?: { helpers: Helpers } } = {};
  vm.runInNewContext((await widgetSource()).toString('utf8'), ctx);
  return ctx.FeedMirrorWidget!.helpers;
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
    expect(h.altText({ media: [], text: 'one two three four five six seven eight nine ten eleven twelve thirteen' }, feed)).toBe(
      'one two three four five six seven eight nine ten eleven twelve\u2026',
    );
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

  it('the script is small, dependency-free and holds no token (R-TOK-11)', async () => {
    const src = (await widgetSource()).toString('utf8');
    expect(src.length).toBeLessThan(10 * 1024);
    expect(src).not.toMatch(/access_token|client_secret|\bimport\b|\brequire\(/);
    expect(src).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
  });

  it('publishWidget puts the script at widget/feedmirror-widget.js with its type and cache policy, once', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'feedmirror-widget-unit-'));
    dirs.push(dir);
    const storage = new LocalStorage(dir, 'https://media.example/');
    const first = await publishWidget(storage);
    expect(WIDGET_KEY).toBe(`widget/${WIDGET_FILENAME}`);
    expect(first).toEqual({ key: 'widget/feedmirror-widget.js', url: storage.publicUrl('widget/feedmirror-widget.js'), written: true });
    const stored = await storage.get(WIDGET_KEY);
    expect(stored?.body.equals(await widgetSource())).toBe(true);
    expect(stored?.contentType).toMatch(/^application\/javascript/);
    expect(stored?.cacheControl).toBe(WIDGET_CACHE_CONTROL);
    expect(WIDGET_CACHE_CONTROL).toBe('public, max-age=3600');
    // Unchanged content is not rewritten; changed content is.
    expect((await publishWidget(storage)).written).toBe(false);
    await storage.put(WIDGET_KEY, Buffer.from('old'), { contentType: 'application/javascript', cacheControl: 'no-cache' });
    expect((await publishWidget(storage)).written).toBe(true);
  });
});
