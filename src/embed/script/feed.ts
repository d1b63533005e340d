import type { Feed, Post } from '../../schema/v1.ts';
import { el, showError, toDom } from './dom.ts';
import { imageSize, imgTree, paintPlaceholder, placeholderOf } from './media.ts';
import { ALT_MAX, cardKind } from './posts.ts';
import { root } from './page.ts';
import { safeUrl } from './safe.ts';
import { injectStyle, LIST_WIDTH } from './style.ts';

/**
 * A feed embedded by its URL: <div data-feedmirror-feed="…/feeds/<id>.json" data-layout="grid"
 * data-limit="12">, a schema v1 feed drawn as a grid or a list.
 */
type FeedLayout = 'grid' | 'list';
interface FeedOptions {
  layout: FeedLayout;
  limit: number;
}
interface ItemOptions {
  layout: FeedLayout;
  width: number;
}

const DEFAULT_LIMIT = 12;
const MAX_LIMIT = 100;
const ALT_WORDS = 12;
// As in the CSS: feed grid columns minmax(160px, 1fr), 8 px gap.
const GRID_MIN = 160;
const GRID_GAP = 8;

/** data-limit: a positive integer, capped; else the default. */
export function parseLimit(value: string | null): number {
  const n = parseInt(value as string, 10);
  if (!isFinite(n) || n < 1) return DEFAULT_LIMIT;
  return Math.min(n, MAX_LIMIT);
}

export function parseLayout(value: string | null): FeedLayout {
  return value === 'list' ? 'list' : 'grid';
}

/** The first words of a caption, for alt text when the feed gives none. */
export function firstWords(text: unknown): string {
  if (typeof text !== 'string') return '';
  const words = text.replace(/\s+/g, ' ').trim().split(' ').filter(Boolean);
  let out = words.slice(0, ALT_WORDS).join(' ');
  if (out.length > ALT_MAX) out = out.slice(0, ALT_MAX).replace(/\s+\S*$/, '');
  return out.length < words.join(' ').length ? `${out}\u2026` : out;
}

export function altText(post: Post, feed: Partial<Feed> | undefined): string {
  const m = post.media && post.media[0];
  if (m && typeof m.alt === 'string' && m.alt.trim()) return m.alt.trim();
  const words = firstWords(post.text);
  if (words) return words;
  const who = feed && feed.origin && feed.origin.displayName;
  return typeof who === 'string' && who ? `Post by ${who}` : 'Post';
}

/** The CSS width a feed image fills (a square crop of a landscape image needs aspect x column). */
export function slotWidth(layout: string, containerWidth: number, aspect: number): number | null {
  if (layout === 'list') return LIST_WIDTH;
  if (!(containerWidth > 0)) return null;
  const cols = Math.max(1, Math.floor((containerWidth + GRID_GAP) / (GRID_MIN + GRID_GAP)));
  const col = (containerWidth - GRID_GAP * (cols - 1)) / cols;
  return Math.ceil(col * Math.max(1, aspect || 1));
}

function sizesAttr(layout: string, containerWidth: number, aspect: number): string {
  const w = slotWidth(layout, containerWidth, aspect);
  return w ? `${w}px` : '(max-width: 480px) 50vw, 200px';
}

function pictureFor(post: Post, feed: Feed, opts: ItemOptions): HTMLElement {
  const ph = placeholderOf(post.thumbnailPlaceholder);
  const node = toDom(
    imgTree(
      post.thumbnailUrl,
      post.thumbnailSizes,
      imageSize(post, []),
      altText(post, feed),
      (aspect) => sizesAttr(opts.layout, opts.width, aspect),
      ph,
      'fmw-img',
    ),
  );
  paintPlaceholder((node.tagName === 'IMG' ? node : node.querySelector('img')) as HTMLImageElement, ph);
  return node;
}

/** `sizes` follows the feed grid's width. */
function followWidth(wrap: HTMLElement, layout: FeedLayout): void {
  if (layout !== 'grid' || typeof root.ResizeObserver !== 'function') return;
  let last = wrap.clientWidth;
  new root.ResizeObserver(() => {
    const w = wrap.clientWidth;
    if (!w || w === last) return;
    last = w;
    const nodes = wrap.querySelectorAll('img[sizes], source[sizes]');
    for (let i = 0; i < nodes.length; i++) {
      const node = nodes[i]!;
      const img = node.tagName === 'IMG' ? node : node.parentNode!.querySelector('img');
      const aspect = Number(img && img.getAttribute('data-fmw-aspect')) || 1;
      node.setAttribute('sizes', sizesAttr(layout, w, aspect));
    }
  }).observe(wrap);
}

function dateOf(post: Post): HTMLTimeElement | null {
  const d = new Date(post.publishedAt);
  if (isNaN(d.getTime())) return null;
  const t = el('time', 'fmw-date', d.toLocaleDateString());
  t.setAttribute('datetime', d.toISOString());
  return t;
}

function renderPost(post: Post, feed: Feed, opts: ItemOptions): HTMLLIElement {
  const kind = cardKind(post);
  const li = el('li', `fmw-item fmw-${kind === 'visual' ? 'visual' : 'card'} fmw-type-${kind}`);
  li.setAttribute('data-post-id', String(post.id));
  const href = kind === 'link' ? safeUrl(post.link!.url) : safeUrl(post.url);
  const a = el(href ? 'a' : 'div', 'fmw-link');
  if (href) {
    a.setAttribute('href', href);
    a.setAttribute('target', '_blank');
    a.setAttribute('rel', 'noopener noreferrer');
  }
  const body = el('div', 'fmw-body');
  if (kind === 'visual') {
    a.appendChild(pictureFor(post, feed, opts));
    if (post.text) body.appendChild(el('p', 'fmw-text', post.text));
  } else if (kind === 'link') {
    const lk = post.link!;
    const cover = safeUrl(lk.imageUrl) || safeUrl(post.thumbnailUrl);
    if (cover) {
      const limg = el('img', 'fmw-img');
      limg.setAttribute('src', cover);
      limg.setAttribute('alt', lk.title ? String(lk.title) : altText(post, feed));
      limg.setAttribute('loading', 'lazy');
      a.appendChild(limg);
    }
    if (lk.title) body.appendChild(el('p', 'fmw-title', lk.title));
    if (post.text) body.appendChild(el('p', 'fmw-text', post.text));
    if (lk.description) body.appendChild(el('p', 'fmw-text', lk.description));
    let domain = lk.domain;
    if (!domain)
      try {
        domain = new URL(href!).hostname;
      } catch {
        domain = '';
      }
    if (domain) body.appendChild(el('p', 'fmw-domain', domain));
  } else {
    body.appendChild(el('p', 'fmw-text', post.text || ''));
  }
  const when = dateOf(post);
  if (when) body.appendChild(when);
  a.appendChild(body);
  li.appendChild(a);
  // format: badges only (R-SCH-10).
  if (post.format === 'reel') li.appendChild(el('span', 'fmw-badge', 'Reel'));
  return li;
}

function renderFeed(container: Element, feed: Feed, opts: FeedOptions): void {
  const wrap = el('div', `fmw fmw--${opts.layout}`);
  // R-SCH-11: a demo feed carries a visible label.
  if (feed.demo) wrap.appendChild(el('p', 'fmw-demo', 'Demo feed'));
  const list = el('ul', 'fmw-list');
  wrap.appendChild(list);
  container.textContent = '';
  container.appendChild(wrap);
  const itemOpts: ItemOptions = { layout: opts.layout, width: list.clientWidth };
  for (const p of feed.posts.slice(0, opts.limit))
    if (p && typeof p === 'object') list.appendChild(renderPost(p, feed, itemOpts));
  followWidth(list, opts.layout);
}

function isFeed(data: unknown): data is Feed {
  if (!data || typeof data !== 'object') return false;
  const feed = data as Record<string, unknown>;
  return feed.schemaVersion === 1 && Array.isArray(feed.posts);
}

export function mount(container: Element | null | undefined): Promise<void> {
  if (!container || container.getAttribute('data-feedmirror-state')) return Promise.resolve();
  const url = container.getAttribute('data-feedmirror-feed');
  const opts: FeedOptions = {
    layout: parseLayout(container.getAttribute('data-layout')),
    limit: parseLimit(container.getAttribute('data-limit')),
  };
  container.setAttribute('data-feedmirror-state', 'loading');
  injectStyle();
  // The feed is public: send no cookies.
  return fetch(url as string, { credentials: 'omit', headers: { Accept: 'application/json' } })
    .then((res) => {
      if (!res.ok) throw new Error(`feed answered HTTP ${res.status}`);
      return res.json() as Promise<unknown>;
    })
    .then((data) => {
      if (!isFeed(data)) throw new Error('not a schema v1 feed');
      renderFeed(container, data, opts);
      container.setAttribute('data-feedmirror-state', 'ready');
    })
    .catch((err: unknown) => {
      showError(container);
      container.setAttribute('data-feedmirror-state', 'error');
      if (root.console) root.console.warn(`feedmirror widget: ${err instanceof Error ? err.message : String(err)}`);
    });
}
