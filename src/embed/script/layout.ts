import type { WidgetDocument, WidgetLayout, WidgetOptions } from '../../schema/widget-document.ts';
import type { Widget } from './state.ts';
import { LIST_WIDTH } from './style.ts';

/**
 * The four layouts: grid, list, carousel (a row that scrolls, src/embed/script/carousel.ts) and
 * masonry. The CSS lays them out; here the `sizes` of their images and the masonry's packing.
 */
const LAYOUTS: readonly WidgetLayout[] = ['grid', 'list', 'carousel', 'masonry'];

export function layoutOf(doc: WidgetDocument): WidgetLayout {
  return LAYOUTS.indexOf(doc.layout) >= 0 ? doc.layout : 'grid';
}

/** `sizes` by viewport, until resize() knows the width. */
export function mediaSizes(o: Partial<WidgetOptions>, layout: string, aspect: number): string {
  if (layout === 'list') return `${LIST_WIDTH}px`;
  const c: Partial<WidgetOptions['columns']> = o.columns || {};
  const f = layout === 'masonry' ? 1 : Math.max(1, aspect);
  const vw = (n: number): string => `${Math.ceil((100 * f) / (n > 0 ? n : 1))}vw`;
  return `(max-width: 599px) ${vw(c.phone || 2)}, (max-width: 1023px) ${vw(c.tablet || 3)}, ${vw(c.desktop || 4)}`;
}

/** `sizes` from the list's real width: one column, a landscape tile's crop, a list's 120 px. */
export function resize(w: Widget): void {
  const width = w.list.clientWidth;
  if (!width) return;
  const cs = getComputedStyle(w.wrap);
  const cols = parseInt(cs.getPropertyValue('--_c'), 10) || 1;
  const gap = parseFloat(cs.getPropertyValue('--_g')) || 0;
  const col = (width - gap * (cols - 1)) / cols;
  const nodes = w.list.querySelectorAll('img[sizes], source[sizes]');
  for (let i = 0; i < nodes.length; i++) {
    const node = nodes[i]!;
    const img = node.tagName === 'IMG' ? node : node.parentNode!.querySelector('img');
    const aspect = Number(img && img.getAttribute('data-fmw-aspect')) || 1;
    const px = w.layout === 'list' ? LIST_WIDTH : Math.ceil(w.layout === 'masonry' ? col : col * Math.max(1, aspect));
    node.setAttribute('sizes', `${px}px`);
  }
}

/**
 * Masonry: each tile spans its own height plus the gap in rows of 1px, so the grid puts it under
 * the shortest column while the tiles still read left to right, newest first. Boxes are sized
 * before their images arrive, so the heights are known at once. Only what this script rendered
 * (before its first paint): a server fragment already on the page stays in its rows (R-EMB-3).
 */
export function pack(w: Widget): void {
  if (w.layout !== 'masonry' || !w.fresh) return;
  const gap = parseFloat(getComputedStyle(w.wrap).getPropertyValue('--_g')) || 0;
  const lis = w.list.children;
  for (let i = 0; i < lis.length; i++) {
    const li = lis[i] as HTMLElement;
    const box = li.firstElementChild;
    const px = box ? box.getBoundingClientRect().height : 0;
    li.style.gridRowEnd = `span ${Math.max(1, Math.ceil(px + gap))}`;
  }
  w.list.classList.add('fmw-packed');
}
