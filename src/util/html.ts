/**
 * HTML that is escaped unless the code says otherwise: every page of feedmirror (the dashboard,
 * the login page, the owner pages, the simulator's) is built with the `html` tag.
 *
 *   html`<p class="${cls}">${text}</p>`   text and attribute values are escaped (& < > " ')
 *   html`<ul>${items.map((i) => html`<li>${i}</li>`)}</ul>`   a nested `html` passes as markup;
 *                                          an array is joined (nothing between its items)
 *   raw(css)                               markup or text the code vouches for (a stylesheet, a
 *                                          constant): the only way in unescaped
 *   join(list, html`<br>`)                 items with markup between them
 *   ${false}, ${null}, ${undefined}        nothing (`${cond && html`…`}` works; a 0 prints "0")
 *
 * Where a value lands decides what it may be, read from the template's own text:
 *  - in an attribute's value (`name="${v}"`, `name='${v}'`) it is text: escaped, an Html value
 *    too (markup never belongs there);
 *  - written without quotes (`name=${v}`) it is quoted for you;
 *  - at the start of a URL attribute (href, src, action, formaction...) a value with a scheme
 *    other than http, https or mailto becomes `about:invalid` (no `javascript:` link);
 *  - between attributes (`<input ${v}>`) only attribute names pass (` checked`), or Html;
 *    anything else there is a mistake in the code and throws.
 * The result is an `Html`; a page function returns `String(page)` (a plain string for
 * `res.send`, which would otherwise serialise an object as JSON).
 */

const TRUSTED = Symbol('feedmirror html');

/** Markup made by `html`, `raw` or `join`: interpolated as is. Nothing else can make one. */
export class Html {
  readonly #text: string;
  constructor(token: symbol, text: string) {
    if (token !== TRUSTED) throw new TypeError('Html is made by html`…`, raw() or join(), not new Html()');
    this.#text = text;
  }
  toString(): string {
    return this.#text;
  }
}

/** What a template accepts: text and numbers (escaped), markup, nothing, or a list of these. */
export type HtmlValue = string | number | false | null | undefined | Html | readonly HtmlValue[];

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text for HTML: the five characters that can end a text node or an attribute value, escaped. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
}

/** Markup or text the code vouches for, inserted unescaped. Never pass it a value from outside. */
export function raw(text: string): Html {
  return new Html(TRUSTED, text);
}

/** The values, each rendered like an interpolation, with `separator` (markup or text) between them. */
export function join(values: readonly HtmlValue[], separator: Html | string): Html {
  const sep = separator instanceof Html ? separator.toString() : escapeHtml(separator);
  return new Html(TRUSTED, values.map((v) => textOf(v)).join(sep));
}

/** Where an interpolation sits, read from the static text before it. */
type Slot =
  | { kind: 'text' }
  | { kind: 'value'; url: boolean }
  | { kind: 'unquoted'; url: boolean }
  | { kind: 'between-attributes' };

/** Attributes whose value is a URL a browser follows or loads. */
const URL_ATTRIBUTES = new Set(['href', 'src', 'action', 'formaction', 'poster', 'cite', 'background', 'xlink:href']);

/**
 * The slot of each interpolation of a template, found once per template (the strings array is
 * the same object at every call of one template literal). A small scanner: text, inside a tag,
 * inside a quoted attribute value; comments and the contents of <script>/<style> count as text.
 */
const slotsCache = new WeakMap<TemplateStringsArray, Slot[]>();

function slotsOf(strings: TemplateStringsArray): Slot[] {
  const cached = slotsCache.get(strings);
  if (cached) return cached;
  const slots: Slot[] = [];
  let state: 'text' | 'tag' | 'dq' | 'sq' = 'text';
  // The attribute name last read in a tag; `ended` once a space, / or = follows it.
  let attr = '';
  let ended = false;
  for (let i = 0; i < strings.length; i++) {
    const s = strings[i] as string;
    for (let j = 0; j < s.length; j++) {
      const c = s[j] as string;
      if (state === 'text') {
        if (c === '<' && /[A-Za-z]/.test(s[j + 1] ?? '')) {
          state = 'tag';
          attr = '';
          ended = false;
        }
      } else if (state === 'tag') {
        if (c === '>') state = 'text';
        else if (c === '"') state = 'dq';
        else if (c === "'") state = 'sq';
        else if (/[\s/=]/.test(c)) ended = true;
        else {
          if (ended) attr = '';
          ended = false;
          attr += c.toLowerCase();
        }
      } else if ((state === 'dq' && c === '"') || (state === 'sq' && c === "'")) {
        state = 'tag';
        attr = '';
        ended = false;
      }
    }
    if (i < strings.length - 1) slots.push(slotAt(state, attr, s));
    // An unquoted value is quoted by the render: the next static text goes on inside the tag.
    if (state === 'tag' && /=\s*$/.test(s)) {
      attr = '';
      ended = false;
    }
  }
  slotsCache.set(strings, slots);
  return slots;
}

/** A fragment that starts inside a tag (` class="${c}"`, nested in a bigger template) shows as text: its attributes still count. */
const ATTRIBUTE_IN_TEXT = /[\s"']([A-Za-z_:][-A-Za-z0-9_:.]*)=(["']?)$/;

function slotAt(state: 'text' | 'tag' | 'dq' | 'sq', attr: string, before: string): Slot {
  if (state === 'dq' || state === 'sq')
    return { kind: 'value', url: URL_ATTRIBUTES.has(attr) && /=\s*["']$/.test(before) };
  if (state === 'tag')
    return /=\s*$/.test(before) ? { kind: 'unquoted', url: URL_ATTRIBUTES.has(attr) } : { kind: 'between-attributes' };
  const m = ATTRIBUTE_IN_TEXT.exec(before);
  if (!m) return { kind: 'text' };
  const url = URL_ATTRIBUTES.has((m[1] as string).toLowerCase());
  return m[2] ? { kind: 'value', url } : { kind: 'unquoted', url };
}

/** A value as markup in a text slot: text escaped, Html as is, lists joined. */
function textOf(v: HtmlValue): string {
  if (v === null || v === undefined || v === false) return '';
  if (v instanceof Html) return v.toString();
  if (Array.isArray(v)) return (v as readonly HtmlValue[]).map(textOf).join('');
  return escapeHtml(String(v));
}

/** A value as the plain text of an attribute (an Html value's text too: markup has no place there). */
function plainOf(v: HtmlValue): string {
  if (v === null || v === undefined || v === false) return '';
  if (Array.isArray(v)) return (v as readonly HtmlValue[]).map(plainOf).join('');
  return String(v);
}

/** A value as attribute text: everything escaped. */
function attributeTextOf(v: HtmlValue): string {
  return escapeHtml(plainOf(v));
}

const SAFE_SCHEME = /^(?:https?|mailto):/i;
const ANY_SCHEME = /^[a-z][a-z0-9+.-]*:/i;

/** A URL attribute's value: relative, or http(s)/mailto; anything else (javascript:, data:...) goes nowhere. */
function urlTextOf(v: HtmlValue): string {
  const text = plainOf(v);
  // Browsers skip control characters and spaces in a scheme ("java\tscript:").
  // By code point, not grapheme: only control characters and spaces are dropped.
  // eslint-disable-next-line @typescript-eslint/no-misused-spread
  const bare = [...text].filter((c) => c.charCodeAt(0) > 0x20).join('');
  return ANY_SCHEME.test(bare) && !SAFE_SCHEME.test(bare) ? 'about:invalid' : escapeHtml(text);
}

/** Between attributes: attribute names alone (` checked`, ` selected`), or markup the code made. */
function betweenAttributesOf(v: HtmlValue): string {
  if (v instanceof Html) return v.toString();
  const text = attributeTextOf(v);
  if (!/^[\sA-Za-z-]*$/.test(text))
    throw new TypeError(
      `html: ${JSON.stringify(text.slice(0, 40))} between a tag's attributes (write name="\${value}")`,
    );
  return text;
}

/** The tag: a template whose interpolations are escaped for where they land (see the top of this file). */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  const slots = slotsOf(strings);
  let out = strings[0] as string;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    const slot = slots[i] as Slot;
    if (slot.kind === 'text') out += textOf(v);
    else if (slot.kind === 'value') out += slot.url ? urlTextOf(v) : attributeTextOf(v);
    else if (slot.kind === 'unquoted') out += `"${slot.url ? urlTextOf(v) : attributeTextOf(v)}"`;
    else out += betweenAttributesOf(v);
    out += strings[i + 1] as string;
  }
  return new Html(TRUSTED, out);
}
