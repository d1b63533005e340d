import type { WidgetDocument, WidgetOptions } from '../../schema/widget-document.ts';
import { showError, toDom } from './dom.ts';
import { enhanceCarousel, arrows } from './carousel.ts';
import { layoutOf, pack, resize } from './layout.ts';
import { openBox } from './lightbox.ts';
import { enhanceMore } from './load-more.ts';
import { paintTiles } from './media.ts';
import { root, SCRIPT_SRC } from './page.ts';
import { cardKind, keyOf, liKey } from './posts.ts';
import type { Widget } from './state.ts';
import { injectStyle } from './style.ts';
import { rootStyle, widgetTree } from './tree.ts';
import { countView } from './views.ts';

/** Widgets: <div data-feedmirror-widget="ID">, configured on the dashboard. */

function isWidgetDoc(d: unknown): d is WidgetDocument {
  if (!d || typeof d !== 'object') return false;
  const doc = d as Record<string, unknown>;
  return doc.version === 1 && typeof doc.id === 'string' && Array.isArray(doc.posts);
}

/** R-EMB-3: behaviour for the markup, rendered here or by the server; no box changes size. */
function enhance(wrap: HTMLElement, doc: WidgetDocument, url: string, fresh: boolean): Widget {
  const w: Widget = {
    fresh,
    doc,
    wrap,
    layout: layoutOf(doc),
    list: wrap.querySelector<HTMLElement>('.fmw-list')!,
    byKey: {},
    host: new URL(url).host,
    at: 0,
    slide: 0,
  };
  for (const p of doc.posts) w.byKey[keyOf(p)] = p;
  // Through the CSSOM, which a policy without 'unsafe-inline' allows (a fragment's style
  // attribute it refuses).
  const o: Partial<WidgetOptions> = doc.options || {};
  const st = rootStyle(o);
  for (const k in st) wrap.style.setProperty(k, st[k]!);
  paintTiles(w, w.list.children);
  enhanceMore(w);
  if (w.layout === 'carousel') enhanceCarousel(w);
  w.list.addEventListener('click', (e) => {
    const li = (e.target as Element).closest('.fmw-item');
    const post = li && w.byKey[liKey(li)];
    if (
      !post ||
      cardKind(post) === 'link' ||
      e.button ||
      e.metaKey ||
      e.ctrlKey ||
      e.shiftKey ||
      e.altKey ||
      typeof HTMLDialogElement !== 'function'
    )
      return;
    e.preventDefault();
    openBox(w, li);
  });
  resize(w);
  pack(w);
  if (typeof root.ResizeObserver === 'function') {
    const ro = new root.ResizeObserver(() => {
      resize(w);
      pack(w);
      if (w.layout === 'carousel') arrows(w);
    });
    ro.observe(w.list);
    // A tile's height can change after the first layout (a web font, a caption's lines).
    if (w.layout === 'masonry' && fresh)
      for (let i = 0; i < w.list.children.length; i++) ro.observe(w.list.children[i]!.firstElementChild!);
    w.ro = ro;
  }
  return w;
}

/** Where the widget's document is: data-src, else ../widgets/<id>.json beside this script. */
function docUrl(c: Element): string | null {
  const src = c.getAttribute('data-src');
  const id = c.getAttribute('data-feedmirror-widget');
  if (!src && !/^[\w-]+$/.test(id || '')) return null;
  const s =
    SCRIPT_SRC ||
    (document.querySelector<HTMLScriptElement>('script[src*="feedmirror-widget"]') || { src: '' }).src ||
    location.href;
  return new URL(src || `../widgets/${id}.json`, src ? location.href : s).href;
}

export function mountWidget(c: Element | null | undefined): Promise<void> {
  if (!c || c.getAttribute('data-feedmirror-state')) return Promise.resolve();
  const url = docUrl(c);
  c.setAttribute('data-feedmirror-state', 'loading');
  injectStyle();
  // Revalidated on every page load (a 304 while unchanged, R-EMB-6): a layout changed on the
  // dashboard shows on the visitor's next load, not once the document's max-age has run out.
  return fetch(url as string, { credentials: 'omit', cache: 'no-cache', headers: { Accept: 'application/json' } })
    .then((res) => {
      if (!res.ok) throw new Error(`widget document answered HTTP ${res.status}`);
      return res.json() as Promise<unknown>;
    })
    .then((doc) => {
      if (!isWidgetDoc(doc)) throw new Error('not a widget document');
      let wrap = c.querySelector<HTMLElement>('.fmw-w');
      const fresh = !wrap || wrap.getAttribute('data-fmw-widget') !== doc.id;
      if (fresh) {
        c.textContent = '';
        wrap = c.appendChild(toDom(widgetTree(doc)));
      }
      enhance(wrap!, doc, url!, fresh);
      countView(doc);
      c.setAttribute('data-feedmirror-state', 'ready');
    })
    .catch((err: unknown) => {
      // A fragment stays: the last good posts rather than nothing.
      if (!c.querySelector('.fmw-w')) showError(c);
      c.setAttribute('data-feedmirror-state', 'error');
      if (root.console) root.console.warn(`feedmirror widget: ${err instanceof Error ? err.message : String(err)}`);
    });
}
