import { readFile } from 'node:fs/promises';
import type { ObjectStorage, StoredObject } from '../storage/types.ts';
import { CSS } from './script/style.ts';

/**
 * The embed script's publication: one static, dependency-free script published next to the feeds,
 * so a site embeds a widget or a feed with a <div> and a <script> and never holds a token
 * (R-TOK-11), and its stylesheet beside it.
 */
export const WIDGET_FILENAME = 'feedmirror-widget.js';
/** Storage key of the published script: `widget/feedmirror-widget.js`. */
export const WIDGET_KEY = `widget/${WIDGET_FILENAME}`;
export const WIDGET_CONTENT_TYPE = 'application/javascript; charset=utf-8';
/**
 * The widget's stylesheet as a file beside the script (`widget/feedmirror-widget.css`): a site
 * whose Content-Security-Policy refuses inline styles (`style-src 'self'`) links it, and the
 * script then injects no <style> of its own.
 */
export const WIDGET_CSS_FILENAME = 'feedmirror-widget.css';
export const WIDGET_CSS_KEY = `widget/${WIDGET_CSS_FILENAME}`;
export const WIDGET_CSS_CONTENT_TYPE = 'text/css; charset=utf-8';
// An hour: a new release reaches sites soon, while browsers and CDNs still cache it.
export const WIDGET_CACHE_CONTROL = 'public, max-age=3600';

/**
 * The script a page downloads: src/embed/script/ bundled and minified by esbuild (bundle.ts).
 * Compiled into dist/ (the production image has no esbuild), the file `npm run build` bundled
 * beside this module; run from the sources (the demo, tests, a checkout), bundled in memory once
 * per process.
 */
const BUILT_SCRIPT = new URL(`./${WIDGET_FILENAME}`, import.meta.url);
const COMPILED = import.meta.url.endsWith('.js');

let shipped: Promise<Buffer> | undefined;

/** The script as shipped: the bytes publishWidget writes and verify compares. */
export function widgetSource(): Promise<Buffer> {
  shipped ??= (COMPILED ? readFile(BUILT_SCRIPT) : import('./bundle.ts').then((b) => b.bundleWidget())).catch(
    (err: unknown) => {
      shipped = undefined;
      throw err;
    },
  );
  return shipped;
}

/** The stylesheet file: the script's own CSS, so the file and the injected <style> never differ. */
export function widgetStylesheet(): Buffer {
  return Buffer.from(`/*! feedmirror widget stylesheet (the same rules the script injects) */\n${CSS}\n`, 'utf8');
}

export interface PublishedWidget {
  key: string;
  /** The address a site puts in `<script defer src=...>`. */
  url: string;
  /** The stylesheet's address, for `<link rel="stylesheet" href=...>` (strict CSP). */
  stylesheetUrl: string;
  /** false when the stored copies were already identical (nothing written). */
  written: boolean;
}

/**
 * Whether a stored object is what publishWidget writes under its key: the same bytes, and its
 * type and caching (where the storage keeps them). `feedmirror verify` judges the stored script
 * and stylesheet by it.
 */
export function isPublishedWidget(
  existing: Pick<StoredObject, 'body' | 'contentType' | 'cacheControl'> | null,
  body: Buffer,
  contentType: string = WIDGET_CONTENT_TYPE,
): boolean {
  return (
    existing !== null &&
    existing.body.equals(body) &&
    (existing.contentType === undefined || existing.contentType === contentType) &&
    (existing.cacheControl === undefined || existing.cacheControl === WIDGET_CACHE_CONTROL)
  );
}

/** The objects publishWidget writes: the script and its stylesheet, with their bodies and types. */
export async function widgetAssets(): Promise<Array<{ key: string; body: Buffer; contentType: string }>> {
  return [
    { key: WIDGET_KEY, body: await widgetSource(), contentType: WIDGET_CONTENT_TYPE },
    { key: WIDGET_CSS_KEY, body: widgetStylesheet(), contentType: WIDGET_CSS_CONTENT_TYPE },
  ];
}

/** Put one object unless an identical copy (body and headers) is already stored. */
async function putIfChanged(storage: ObjectStorage, key: string, body: Buffer, contentType: string): Promise<boolean> {
  const same = isPublishedWidget(await storage.get(key), body, contentType);
  if (!same) await storage.put(key, body, { contentType, cacheControl: WIDGET_CACHE_CONTROL });
  return !same;
}

/**
 * Put the script at `widget/feedmirror-widget.js` and its stylesheet at
 * `widget/feedmirror-widget.css`. Idempotent: identical stored copies are left alone, so every
 * worker or server start can call it without rewriting the objects.
 */
export async function publishWidget(storage: ObjectStorage): Promise<PublishedWidget> {
  let written = false;
  for (const a of await widgetAssets())
    written = (await putIfChanged(storage, a.key, a.body, a.contentType)) || written;
  return {
    key: WIDGET_KEY,
    url: storage.publicUrl(WIDGET_KEY),
    stylesheetUrl: storage.publicUrl(WIDGET_CSS_KEY),
    written,
  };
}
