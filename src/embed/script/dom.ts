/**
 * Markup as data, [tag, attributes, children]: the server writes it as HTML (src/embed/markup.ts)
 * and the browser turns it into DOM here, so both render the same markup. A string child is text,
 * never HTML (R-EMB-5): nothing here parses markup.
 */
export type Kid = Tree | string | null | false | undefined;
export type Style = Record<string, string>;
export type AttrValue = string | number | boolean | null | undefined | Style;
export type Attrs = Record<string, AttrValue>;
export type Tree = [tag: string, attrs: Attrs, kids: Kid[]];

export function h(tag: string, attrs?: Attrs, kids?: Kid[]): Tree {
  return [tag, attrs || {}, kids || []];
}

/** Null, undefined and false leave an attribute out, true is a bare attribute; styles go through the CSSOM. */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the element its tree makes
export function toDom<T extends HTMLElement = HTMLElement>(n: Tree): T {
  const e = document.createElement(n[0]);
  const a = n[1];
  for (const k in a) {
    const v = a[k];
    if (v === null || v === undefined || v === false) continue;
    if (k === 'style') for (const p in v as Style) e.style.setProperty(p, (v as Style)[p]!);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const kid of n[2]) if (kid) e.appendChild(typeof kid === 'string' ? document.createTextNode(kid) : toDom(kid));
  return e as T;
}

/** An element with a class and a text (never HTML). */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  cls?: string,
  text?: unknown,
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null && text !== '') node.textContent = String(text);
  return node;
}

/** A link that opens in a new tab and tells the other page nothing of this one. */
export function link(href: string | null, cls: string, kids: Kid[], label?: string): Tree {
  return h('a', { class: cls, href, target: '_blank', rel: 'noopener noreferrer', 'aria-label': label }, kids);
}

/** One quiet line where the embed could not be loaded. */
export function showError(container: Element): void {
  container.textContent = '';
  container.appendChild(el('p', 'fmw fmw-error', 'This feed could not be loaded right now.'));
}
