import type { WidgetDocument } from '../schema/widget-document.ts';
import type { Style, Tree } from './script/dom.ts';
import { CSS } from './script/style.ts';
import { widgetTree } from './script/tree.ts';

/**
 * The widget as static HTML (widgets/<id>.html), for sites that render on the server or allow no
 * third-party script. The markup is not written twice: the script's own `widgetTree`
 * (src/embed/script/tree.ts, the tree the browser turns into DOM) builds it, and this module only
 * writes the tree as HTML, every text and attribute value escaped. So the fragment and the
 * script's rendering are the same markup (same boxes, srcset, placeholders, alt texts), and the
 * script, when present, enhances the fragment in place instead of rendering it again.
 */
const VOID = new Set(['img', 'source', 'br', 'input']);
const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** R-EMB-5: text and attribute values; every character HTML gives a meaning to is escaped. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** A tag or attribute name from the script: letters, digits and dashes only, else refused. */
function name(n: string): string {
  if (!/^[a-z][a-z0-9-]*$/i.test(n)) throw new Error(`widget markup: unexpected name ${JSON.stringify(n)}`);
  return n;
}

function toHtml(node: Tree | string): string {
  if (typeof node === 'string') return escapeHtml(node);
  const [tag, attrs, kids] = node;
  let out = `<${name(tag)}`;
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'style') {
      // The script sets these through the CSSOM; here a style attribute, values from the script's own
      // numbers and #rrggbb colours (placeholderOf), escaped all the same.
      const css = Object.entries(v as Style)
        .map(([p, val]) => `${p}:${val}`)
        .join(';');
      out += ` style="${escapeHtml(css)}"`;
    } else out += v === true ? ` ${name(k)}` : ` ${name(k)}="${escapeHtml(typeof v === 'object' ? '' : String(v))}"`;
  }
  out += '>';
  if (VOID.has(tag)) return out;
  for (const kid of kids) if (kid) out += toHtml(kid);
  return `${out}</${tag}>`;
}

/** The widget's stylesheet, as the script injects it (same id: the script then adds no second copy). */
export function widgetStyle(): string {
  return `<style id="feedmirror-widget-style">${CSS.replace(/<\//g, '<\\/')}</style>`;
}

/**
 * The static fragment of a widget: its stylesheet and its markup, to put inside
 * `<div data-feedmirror-widget="ID">`. Without JavaScript it shows the first `options.limit` posts
 * (images with width/height, srcset/sizes, placeholder colour, alt text; links to the posts, and a
 * link to the profile past the limit); with the script it gains the lightbox, Load more and the
 * carousel's arrows.
 */
export function renderWidgetFragment(doc: WidgetDocument): string {
  return `${widgetStyle()}${toHtml(widgetTree(doc))}`;
}
