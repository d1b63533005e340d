import type { Post } from '../../schema/v1.ts';
import { h, type Kid, type Tree } from './dom.ts';
import { liKey } from './posts.ts';
import { positive, safeUrl } from './safe.ts';
import type { Widget } from './state.ts';
import { thumbHashDataUrl } from './thumbhash.ts';

/** One usable entry of an image's `sizes` extension. */
export interface Size {
  url: string;
  width: number;
  height: number;
  mime: string;
}
export interface Box {
  width: number;
  height: number;
}
/** A `placeholder` extension as the script paints it: #rrggbb colour and ThumbHash bytes. */
export interface Placeholder {
  color: string | null;
  hash: number[] | null;
}

/** width/height, so the box is reserved before the image loads: the largest size, else media[0]'s. */
export function imageSize(post: Post, sizes?: Size[]): Box | null {
  const top = sizes && sizes.length ? sizes[sizes.length - 1] : null;
  if (top) return { width: top.width, height: top.height };
  const m = post.media && post.media[0];
  const w = m && positive(m.width);
  const h = m && positive(m.height);
  if (w && h) return { width: w, height: h };
  const ar = typeof post.aspectRatio === 'number' && post.aspectRatio > 0 ? post.aspectRatio : null;
  if (ar) return { width: 1080, height: Math.max(1, Math.round(1080 / ar)) };
  return null;
}

/** The usable entries of an image's `sizes` extension, smallest first. */
export function imageSizes(list: unknown): Size[] {
  if (!Array.isArray(list)) return [];
  const out: Size[] = [];
  for (const s of list as unknown[]) {
    if (!s || typeof s !== 'object') continue;
    const { url, width, height, mime } = s as Record<string, unknown>;
    const w = positive(width);
    const h = positive(height);
    if (!safeUrl(url) || !w || !h || typeof mime !== 'string') continue;
    out.push({ url: url as string, width: w, height: h, mime });
  }
  return out.sort((a, b) => a.width - b.width);
}

/** `srcset` for one format, plus the JPEG/PNG/WebP entries of other widths; '' under two candidates. */
export function srcsetFor(sizes: Size[], mime: string): string {
  const byWidth: Record<number, Size> = {};
  for (const s of sizes) {
    if (s.mime !== mime && !/^image\/(jpeg|png|webp)$/.test(s.mime)) continue;
    if (!byWidth[s.width] || s.mime === mime) byWidth[s.width] = s;
  }
  const widths = Object.keys(byWidth)
    .map(Number)
    .sort((a, b) => a - b);
  if (widths.length < 2) return '';
  return widths.map((w) => `${byWidth[w]!.url.replace(/ /g, '%20').replace(/,/g, '%2C')} ${w}w`).join(', ');
}

/** Formats not every browser shows (AVIF): a <source> each. */
function extraFormats(sizes: Size[]): string[] {
  const out: string[] = [];
  for (const { mime } of sizes) if (mime === 'image/avif' && out.indexOf(mime) < 0) out.push(mime);
  return out;
}

/** WebP where the feed has it, else the original's format. */
function baseFormat(sizes: Size[]): string {
  for (const s of sizes) if (s.mime === 'image/webp') return 'image/webp';
  return sizes.length ? sizes[sizes.length - 1]!.mime : 'image/jpeg';
}

/** A `placeholder` extension: #rrggbb colour and ThumbHash bytes. */
export function placeholderOf(ph: unknown): Placeholder | null {
  if (!ph || typeof ph !== 'object') return null;
  const { color: c, thumbhash: th } = ph as Record<string, unknown>;
  const color = typeof c === 'string' && /^#[0-9a-fA-F]{6}$/.test(c) ? c : null;
  let hash: number[] | null = null;
  if (typeof th === 'string' && /^[A-Za-z0-9+/]+={0,2}$/.test(th) && th.length <= 200) {
    try {
      const bin = atob(th);
      hash = [];
      for (let i = 0; i < bin.length; i++) hash.push(bin.charCodeAt(i));
      if (hash.length < 5) hash = null;
    } catch {
      hash = null;
    }
  }
  return color || hash ? { color, hash } : null;
}

/** The placeholder behind the image until it loads, through the CSSOM (a page's CSP allows it). */
export function paintPlaceholder(img: HTMLImageElement, ph: Placeholder | null): void {
  if (!ph) return;
  if (ph.color) img.style.backgroundColor = ph.color;
  const url = ph.hash ? thumbHashDataUrl(ph.hash) : null;
  if (url) img.style.backgroundImage = `url("${url}")`;
  const clear = (): void => {
    img.style.backgroundColor = '';
    img.style.backgroundImage = '';
    img.removeEventListener('load', clear);
    img.removeEventListener('error', clear);
  };
  img.addEventListener('load', clear);
  img.addEventListener('error', clear);
}

/** An image as a tree: width/height, srcset/sizes, <picture> for AVIF, placeholder colour. */
export function imgTree(
  url: string | undefined,
  list: unknown,
  size: Box | null,
  alt: string,
  sizesFn: (aspect: number) => string,
  ph: Placeholder | null,
  cls: string,
  eager?: boolean,
): Tree {
  const sizes = imageSizes(list);
  size = (sizes.length && sizes[sizes.length - 1]) || size;
  const aspect = size ? size.width / size.height : 1;
  const sizesValue = sizesFn(aspect);
  const srcset = srcsetFor(sizes, baseFormat(sizes));
  const img = h('img', {
    class: cls,
    alt,
    loading: eager ? null : 'lazy',
    decoding: 'async',
    width: size && size.width,
    height: size && size.height,
    srcset: srcset || null,
    sizes: srcset ? sizesValue : null,
    'data-fmw-aspect': aspect,
    style: ph && ph.color ? { 'background-color': ph.color } : null,
    // src last: srcset and sizes are known when the fetch starts.
    src: url,
  });
  const sources: Kid[] = [];
  const extras = extraFormats(sizes);
  for (const mime of extras) {
    const set = srcsetFor(sizes, mime);
    if (set) sources.push(h('source', { type: mime, srcset: set, sizes: sizesValue }));
  }
  return extras.length ? h('picture', { class: 'fmw-picture' }, sources.concat([img])) : img;
}

/** Each tile's placeholder until its image has loaded (a loaded one needs none). */
export function paintTiles(w: Widget, lis: ArrayLike<Element>): void {
  for (let i = 0; i < lis.length; i++) {
    const img = lis[i]!.querySelector<HTMLImageElement>('img.fmw-img');
    const post = w.byKey[liKey(lis[i]!)];
    if (!img) continue;
    if (img.complete) img.style.backgroundColor = '';
    else if (post) paintPlaceholder(img, placeholderOf(post.thumbnailPlaceholder));
  }
}
