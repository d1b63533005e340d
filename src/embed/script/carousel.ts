import { h, toDom } from './dom.ts';
import { root } from './page.ts';
import type { Widget } from './state.ts';

/**
 * The carousel: one row that scrolls (CSS scroll snap: swiping is the browser's own scrolling),
 * arrow buttons that move it by its width, and ←/→ between tiles.
 */
function smooth(): ScrollBehavior {
  return root.matchMedia && root.matchMedia('(prefers-reduced-motion: reduce)').matches ? 'auto' : 'smooth';
}

/** The carousel's arrows: Previous off at the first tile, Next at the last (R-EMB-3 keeps their boxes). */
export function arrows(w: Widget): void {
  const l = w.list;
  const end = l.scrollWidth - l.clientWidth;
  const prev = w.wrap.querySelector('.fmw-arr.fmw-prev');
  const next = w.wrap.querySelector('.fmw-arr.fmw-next');
  if (prev) prev.setAttribute('aria-disabled', String(l.scrollLeft <= 1));
  if (next) next.setAttribute('aria-disabled', String(l.scrollLeft >= end - 1));
}

/** The arrows beside the rail and the keys on it. */
export function enhanceCarousel(w: Widget): void {
  for (const dir of [-1, 1]) {
    const b = toDom(
      h(
        'button',
        {
          class: `fmw-arr fmw-${dir < 0 ? 'prev' : 'next'}`,
          type: 'button',
          'aria-label': dir < 0 ? 'Previous posts' : 'Next posts',
        },
        [dir < 0 ? '\u2039' : '\u203a'],
      ),
    );
    b.addEventListener('click', () => {
      if (b.getAttribute('aria-disabled') !== 'true')
        w.list.scrollBy({ left: dir * w.list.clientWidth, behavior: smooth() });
    });
    w.list.parentNode!.appendChild(b);
  }
  w.list.addEventListener('scroll', () => arrows(w));
  arrows(w);
  w.list.addEventListener('keydown', (e) => {
    const dir = e.key === 'ArrowRight' ? 1 : e.key === 'ArrowLeft' ? -1 : 0;
    const li = dir && (e.target as Element).closest('.fmw-item');
    const next = li && (dir > 0 ? li.nextElementSibling : li.previousElementSibling);
    if (next) {
      e.preventDefault();
      next.querySelector<HTMLElement>('.fmw-link')!.focus();
    }
  });
}
