import type { Media } from '../../schema/v1.ts';
import type { WidgetPost } from '../../schema/widget-document.ts';
import { h, link, toDom, type Tree } from './dom.ts';
import { imageSize, imgTree } from './media.ts';
import { cardKind, liKey, shortDate, widgetAlt } from './posts.ts';
import { positive, safeUrl } from './safe.ts';
import type { Widget } from './state.ts';

/**
 * The lightbox: a native <dialog> with the picture, the slides of a carousel, the full caption,
 * the date, the account and a link to the original post; ←/→ move through the slides and the
 * posts, Esc closes, and the focus returns to the tile of the post shown last. A mirrored video
 * plays inline (its controls, playsinline, the cover as poster, nothing loaded or played until
 * the visitor presses play) and is paused when the box moves on or closes.
 */
const BOX_SIZES = '(max-width: 808px) 94vw, 760px';

/** A carousel's slides (null: the post's cover stands for its one slide). */
function slidesOf(post: WidgetPost): Array<Media | null> {
  const m = post.type === 'carousel' && Array.isArray(post.media) ? post.media.filter((x) => x && safeUrl(x.url)) : [];
  return m.length ? m : [null];
}

/** R-EMB-2: only a copy on the document's host plays (never the platform's CDN). */
function playable(w: Widget, m: Partial<Media> | undefined): string | null {
  try {
    return !!m && /^video\//.test(m.mime!) && new URL(m.url!).host === w.host ? m.url! : null;
  } catch {
    return null;
  }
}

function stageTree(w: Widget, post: WidgetPost, slide: Media | null | undefined, i: number): Tree | false | null {
  const video: Partial<Media> | null | undefined = slide
    ? /^video\//.test(slide.mime)
      ? slide
      : null
    : post.type === 'video'
      ? (post.media || []).filter((m) => m && /^video\//.test(m.mime))[0] || {}
      : null;
  const cover = slide && !video ? slide.url : !slide || i === 0 ? post.thumbnailUrl : null;
  const list = slide && !video ? slide.sizes : post.thumbnailSizes;
  const size =
    slide && !video
      ? positive(slide.width) && positive(slide.height)
        ? { width: slide.width!, height: slide.height! }
        : null
      : imageSize(post, []);
  const img = !!safeUrl(cover) && imgTree(cover!, list, size, widgetAlt(post), () => BOX_SIZES, null, 'fmw-big', true);
  if (!video) return img;
  const src = playable(w, video);
  if (src)
    return h('video', {
      src,
      poster: safeUrl(post.thumbnailUrl),
      controls: true,
      playsinline: true,
      preload: 'none',
      'aria-label': widgetAlt(post),
      width: size && size.width,
      height: size && size.height,
    });
  return link(safeUrl(post.url), '', [
    img,
    h('span', { class: 'fmw-play', 'aria-hidden': 'true' }, ['\u25b6']),
    h('span', { class: 'fmw-sr' }, ['Play on the original post']),
  ]);
}

function drawBox(w: Widget, d: HTMLDialogElement): void {
  const lis = w.list.children;
  const post = w.byKey[liKey(lis[w.at]!)]!;
  const slides = slidesOf(post);
  const at = `@${post.username}`;
  const acct = (w.doc.accounts || []).filter((a) => a.id === post.accountId)[0];
  d.setAttribute('aria-label', `Post by ${at}`);
  const stage = d.querySelector<HTMLElement>('.fmw-stage')!;
  stage.textContent = '';
  const visual = cardKind(post) === 'visual' && stageTree(w, post, slides[w.slide], w.slide);
  if (visual) stage.appendChild(toDom(visual));
  stage.hidden = !visual;
  d.querySelector('.fmw-count')!.textContent = slides.length > 1 ? `${w.slide + 1} / ${slides.length}` : '';
  d.querySelector('.fmw-prev')!.setAttribute('aria-disabled', String(!w.at && !w.slide));
  d.querySelector('.fmw-next')!.setAttribute(
    'aria-disabled',
    String(w.at >= lis.length - 1 && w.slide >= slides.length - 1),
  );
  const info = d.querySelector('.fmw-info')!;
  info.textContent = '';
  const profile = acct && safeUrl(acct.profileUrl);
  info.appendChild(
    toDom(
      h('div', {}, [
        h('p', {}, [
          profile ? link(profile, '', [at]) : at,
          ' \u00b7 ',
          h('time', { datetime: new Date(post.publishedAt).toISOString() }, [shortDate(post.publishedAt)]),
        ]),
        post.text && h('p', { class: 'fmw-full' }, [String(post.text)]),
        safeUrl(post.url) && h('p', {}, [link(post.url, '', ['View the original post'])]),
      ]),
    ),
  );
}

/** A video playing in the lightbox stops when it moves on or closes: no sound from a closed box. */
function pause(d: HTMLDialogElement): void {
  const v = d.querySelector('video');
  if (v) v.pause();
}

function step(w: Widget, d: HTMLDialogElement, dir: number): void {
  const lis = w.list.children;
  const n = slidesOf(w.byKey[liKey(lis[w.at]!)]!).length;
  if (w.slide + dir >= 0 && w.slide + dir < n) w.slide += dir;
  else if (w.at + dir >= 0 && w.at + dir < lis.length && w.byKey[liKey(lis[w.at + dir]!)]) {
    w.at += dir;
    w.slide = 0;
  } else return;
  pause(d);
  drawBox(w, d);
  // The redrawn part may have held the focus: keep it in the dialog.
  if (!d.contains(document.activeElement)) d.querySelector<HTMLElement>(dir > 0 ? '.fmw-next' : '.fmw-prev')!.focus();
}

/** The page's own background behind the widget (theme auto's lightbox), else white. */
function pageBackground(node: Node | null): string {
  for (; node && node.nodeType === 1; node = node.parentNode) {
    const bg = getComputedStyle(node as Element).backgroundColor;
    if (bg && !/^(transparent|rgba\(.*,\s*0\))$/.test(bg)) return bg;
  }
  return '#fff';
}

/** The dialog, made on first use and kept: its buttons and keys act on whatever post it shows. */
function makeBox(w: Widget): HTMLDialogElement {
  const d = toDom<HTMLDialogElement>(
    h('dialog', { class: 'fmw-box' }, [
      h('button', { class: 'fmw-x', type: 'button', 'aria-label': 'Close' }, ['\u00d7']),
      h('div', { class: 'fmw-stage' }),
      h('div', { class: 'fmw-nav' }, [
        h('button', { class: 'fmw-prev', type: 'button', 'aria-label': 'Previous' }, ['\u2039']),
        h('span', { class: 'fmw-count' }),
        h('button', { class: 'fmw-next', type: 'button', 'aria-label': 'Next' }, ['\u203a']),
      ]),
      h('div', { class: 'fmw-info' }),
    ]),
  );
  w.box = d;
  w.wrap.appendChild(d);
  d.addEventListener('click', (e) => {
    const t = e.target as Element;
    if (t === d || t.closest('.fmw-x')) d.close();
    else if (t.closest('.fmw-prev')) step(w, d, -1);
    else if (t.closest('.fmw-next')) step(w, d, 1);
  });
  d.addEventListener('keydown', (e) => {
    if ((e.target as Element).tagName === 'VIDEO') return;
    const dir = e.key === 'ArrowRight' ? 1 : e.key === 'ArrowLeft' ? -1 : 0;
    if (dir) {
      e.preventDefault();
      step(w, d, dir);
    }
  });
  // Focus goes to the tile of the post shown last, after the browser's own restoring.
  d.addEventListener('close', () => {
    pause(d);
    const back = (): void => {
      const tile = w.list.children[w.at];
      const a = tile && tile.querySelector<HTMLElement>('.fmw-link');
      if (a) a.focus();
    };
    back();
    setTimeout(back, 0);
  });
  return d;
}

/** Open the lightbox on a tile's post. */
export function openBox(w: Widget, li: Element): void {
  const d = w.box || makeBox(w);
  w.at = Array.prototype.indexOf.call(w.list.children, li);
  w.slide = 0;
  if (w.wrap.classList.contains('fmw--auto')) w.wrap.style.setProperty('--fmw-pbg', pageBackground(w.wrap.parentNode));
  drawBox(w, d);
  if (!d.open) d.showModal();
}
