import { altText, firstWords, mount, parseLayout, parseLimit, slotWidth } from './feed.ts';
import { mediaSizes } from './layout.ts';
import { imageSize, imageSizes, placeholderOf, srcsetFor } from './media.ts';
import { root } from './page.ts';
import { badgeOf, captionAlt, cardKind, shortDate, widgetAlt } from './posts.ts';
import { safeUrl } from './safe.ts';
import { CSS } from './style.ts';
import { thumbHashToRGBA } from './thumbhash.ts';
import { widgetTree } from './tree.ts';
import { mountWidget } from './widget.ts';

/**
 * The embed script's entry (bundled by src/embed/bundle.ts into widget/feedmirror-widget.js):
 * mounts every `[data-feedmirror-feed]` and `[data-feedmirror-widget]` of the page once it is
 * parsed, and exposes itself as `FeedMirrorWidget` (mount one element, its stylesheet and markup
 * builder, and its pure helpers for tests). It reads public JSON and holds no secret (R-TOK-11).
 */
function mountAll(): Promise<unknown[]> {
  const jobs: Array<Promise<void>> = [];
  document.querySelectorAll('[data-feedmirror-feed]').forEach((n) => jobs.push(mount(n)));
  document.querySelectorAll('[data-feedmirror-widget]').forEach((n) => jobs.push(mountWidget(n)));
  return Promise.all(jobs);
}

const api = {
  mount,
  mountWidget,
  mountAll,
  css: CSS,
  widgetTree,
  // Pure helpers, exposed for tests.
  helpers: {
    safeUrl,
    parseLimit,
    parseLayout,
    firstWords,
    altText,
    imageSize,
    cardKind,
    imageSizes,
    srcsetFor,
    slotWidth,
    placeholderOf,
    thumbHashToRGBA,
    captionAlt,
    widgetAlt,
    badgeOf,
    shortDate,
    mediaSizes,
  },
};
export type FeedMirrorWidget = typeof api;
(root as typeof root & { FeedMirrorWidget: FeedMirrorWidget }).FeedMirrorWidget = api;

if (typeof document !== 'undefined') {
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', () => void mountAll());
  else void mountAll();
}
