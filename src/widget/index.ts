import { readFile } from 'node:fs/promises';
import type { ObjectStorage, StoredObject } from '../storage/types.ts';

/**
 * The embeddable widget: one static, dependency-free script published next to the feeds, so a
 * site embeds a feed with a <div> and a <script> and never holds a token (R-TOK-11).
 */
export const WIDGET_FILENAME = 'feedmirror-widget.js';
/** Storage key of the published script: `widget/feedmirror-widget.js`. */
export const WIDGET_KEY = `widget/${WIDGET_FILENAME}`;
export const WIDGET_CONTENT_TYPE = 'application/javascript; charset=utf-8';
// An hour: a new release reaches sites soon, while browsers and CDNs still cache it.
export const WIDGET_CACHE_CONTROL = 'public, max-age=3600';

const WIDGET_FILE = new URL(`./${WIDGET_FILENAME}`, import.meta.url);

/**
 * What a page downloads: the source without its comments and indentation (a page has no use for
 * them, and the script must stay at or under 12 KB gzipped). No bundler, no renaming: line for
 * line the same code, so a stack trace still reads. Kept: `/*!` blocks (the header and the
 * ThumbHash licence notice). The source never holds a comment opener inside a string or a
 * regular expression, and no line starts inside a string (test/unit/widget-helpers.test.ts runs
 * the shipped script; every browser test loads it).
 */
export function shipScript(source: string): string {
  return source
    .replace(/\/\*(?!!)[\s\S]*?\*\//g, '')
    .replace(/^[ \t]*\/\/.*$/gm, '')
    .replace(/^[ \t]+/gm, '')
    .replace(/\n{2,}/g, '\n');
}

let shipped: Buffer | undefined;

/** The script as shipped: read from the package, comments and indentation left out (shipScript). */
export async function widgetSource(): Promise<Buffer> {
  shipped ??= Buffer.from(shipScript(await readFile(WIDGET_FILE, 'utf8')), 'utf8');
  return shipped;
}

export interface PublishedWidget {
  key: string;
  /** The address a site puts in `<script defer src=...>`. */
  url: string;
  /** false when the stored copy was already identical (nothing written). */
  written: boolean;
}

/**
 * Whether a stored object is the script publishWidget writes: the same bytes, and its type and
 * caching (where the storage keeps them). `feedmirror verify` judges the stored script by it.
 */
export function isPublishedWidget(
  existing: Pick<StoredObject, 'body' | 'contentType' | 'cacheControl'> | null,
  body: Buffer,
): boolean {
  return (
    existing !== null &&
    existing.body.equals(body) &&
    (existing.contentType === undefined || existing.contentType === WIDGET_CONTENT_TYPE) &&
    (existing.cacheControl === undefined || existing.cacheControl === WIDGET_CACHE_CONTROL)
  );
}

/**
 * Put the script at `widget/feedmirror-widget.js`. Idempotent: an identical stored copy is left
 * alone, so every worker or server start can call it without rewriting the object.
 */
export async function publishWidget(storage: ObjectStorage): Promise<PublishedWidget> {
  const body = await widgetSource();
  const same = isPublishedWidget(await storage.get(WIDGET_KEY), body);
  if (!same) {
    await storage.put(WIDGET_KEY, body, { contentType: WIDGET_CONTENT_TYPE, cacheControl: WIDGET_CACHE_CONTROL });
  }
  return { key: WIDGET_KEY, url: storage.publicUrl(WIDGET_KEY), written: !same };
}
