import type { WidgetOptions } from '../../schema/widget-document.ts';
import { h, toDom } from './dom.ts';
import { pack, resize } from './layout.ts';
import { paintTiles } from './media.ts';
import { keyOf, liKey } from './posts.ts';
import type { Widget } from './state.ts';
import { limitOf, tileTree } from './tree.ts';

/**
 * "Load more": the next `limit` posts of the document (no new request), in the box of the
 * "More posts" link it replaces (src/embed/script/header.ts), so nothing moves (R-EMB-3).
 */
function loadMore(w: Widget, btn: HTMLElement): void {
  const have: Record<string, 1> = {};
  const lis = w.list.children;
  for (let i = 0; i < lis.length; i++) have[liKey(lis[i]!)] = 1;
  const rest = w.doc.posts.filter((p) => !have[keyOf(p)]);
  const o: Partial<WidgetOptions> = w.doc.options || {};
  const added = rest.slice(0, limitOf(o)).map((p) => w.list.appendChild(toDom(tileTree(p, w.doc))));
  paintTiles(w, added);
  resize(w);
  pack(w);
  if (w.ro && w.layout === 'masonry' && w.fresh) for (const li of added) w.ro.observe(li.firstElementChild!);
  if (rest.length <= added.length) btn.parentNode!.removeChild(btn);
  if (added[0]) added[0].querySelector<HTMLElement>('.fmw-link')!.focus();
}

/** The fragment's "More posts" link becomes the button. */
export function enhanceMore(w: Widget): void {
  const more = w.wrap.querySelector('.fmw-more');
  if (!more) return;
  const btn = toDom(h('button', { class: 'fmw-more', type: 'button' }, ['Load more']));
  more.parentNode!.replaceChild(btn, more);
  btn.addEventListener('click', () => loadMore(w, btn));
}
