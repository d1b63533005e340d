import { describe, expect, it } from 'vitest';
import { Html, escapeHtml, html, join, raw } from '../../src/util/html.ts';

/**
 * The `html` tag every page is built with (src/util/html.ts): a value is escaped unless the code
 * marks it as markup, and where it lands (text, an attribute's value, a URL attribute, between
 * attributes) decides what it may be.
 */
const EVIL = `<script>alert(1)</script>"'&`;
const ESCAPED = '&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;';

describe('html`…`', () => {
  it('escapes text: the five characters that can end a text node or an attribute value', () => {
    expect(String(html`<p>${EVIL}</p>`)).toBe(`<p>${ESCAPED}</p>`);
    expect(escapeHtml(EVIL)).toBe(ESCAPED);
  });

  it('passes nested html and raw() as markup, and renders nothing for false, null and undefined', () => {
    const inner = html`<b>${EVIL}</b>`;
    expect(String(html`<p>${inner}${raw('<i>ok</i>')}${false}${null}${undefined}</p>`)).toBe(
      `<p><b>${ESCAPED}</b><i>ok</i></p>`,
    );
    expect(String(html`<p>${0} ${12.5}</p>`)).toBe('<p>0 12.5</p>');
  });

  it('joins arrays (nested ones too), escaping their strings; join() puts markup between items', () => {
    expect(String(html`<ul>${['<a>', html`<li>b</li>`, ['c', [html`<hr>`]]]}</ul>`)).toBe(
      '<ul>&lt;a&gt;<li>b</li>c<hr></ul>',
    );
    expect(String(join(['a<', html`<b>b</b>`], html`<br>`))).toBe('a&lt;<br><b>b</b>');
    expect(String(join(['a', 'b<'], ', <'))).toBe('a, &lt;b&lt;');
  });

  it('escapes attribute values, an Html value too (markup never belongs in an attribute)', () => {
    expect(String(html`<input value="${EVIL}" title='${EVIL}'>`)).toBe(`<input value="${ESCAPED}" title='${ESCAPED}'>`);
    expect(String(html`<input value="${html`<b>x</b>`}">`)).toBe('<input value="&lt;b&gt;x&lt;/b&gt;">');
  });

  it('quotes an unquoted attribute value, so a space cannot start another attribute', () => {
    expect(String(html`<input value=${'a onfocus=alert(1)'} required>`)).toBe(
      '<input value="a onfocus=alert(1)" required>',
    );
    // In a fragment that starts inside a tag (nested in a bigger template) as well.
    expect(String(html` class=${'a onclick=x'}`)).toBe(' class="a onclick=x"');
  });

  it('sends a URL attribute whose value starts with another scheme than http(s) or mailto nowhere', () => {
    const bad = [
      'javascript:alert(1)',
      'JaVaScRiPt:alert(1)',
      ' java\tscript:alert(1)',
      'data:text/html,x',
      'vbscript:x',
    ];
    for (const url of bad) expect(String(html`<a href="${url}">x</a>`)).toBe('<a href="about:invalid">x</a>');
    expect(String(html`<img src=${'javascript:x'}>`)).toBe('<img src="about:invalid">');
    expect(String(html`<form action='${'javascript:x'}'>`)).toBe(`<form action='about:invalid'>`);
    expect(String(html` href="${'javascript:x'}"`)).toBe(' href="about:invalid"');
    expect(String(html`<a title="t" href = "${'javascript:x'}">`)).toBe('<a title="t" href = "about:invalid">');
    expect(String(html`<a data-href="${'javascript:x'}" title="${'javascript:x'}">`)).toBe(
      '<a data-href="javascript:x" title="javascript:x">',
    );
    const good = [
      'https://x.example/a?b=1&c=2',
      'http://x',
      'mailto:a@b.example',
      '/dashboard',
      '#owner',
      '?layout=grid',
    ];
    for (const url of good) expect(String(html`<a href="${url}">x</a>`)).toBe(`<a href="${escapeHtml(url)}">x</a>`);
    // Only the start of the value names a scheme: a value after a fixed prefix is text.
    expect(String(html`<a href="mailto:${'x@y.example'}">x</a>`)).toBe('<a href="mailto:x@y.example">x</a>');
    expect(String(html`<a href="/p/${'javascript:x'}">x</a>`)).toBe('<a href="/p/javascript:x">x</a>');
    // data-* attributes are not followed by the browser.
    expect(String(html`<div data-src="${'data:x'}"></div>`)).toBe('<div data-src="data:x"></div>');
  });

  it('between attributes takes attribute names alone, or markup; anything else is a mistake that throws', () => {
    const on = true as boolean;
    expect(String(html`<input type="checkbox"${on ? ' checked' : ''}>`)).toBe('<input type="checkbox" checked>');
    expect(String(html`<button${html` class="${'a"b'}"`}>`)).toBe('<button class="a&quot;b">');
    expect(() => html`<img ${'onerror=alert(1)'}>`).toThrow(/between a tag's attributes/);
  });

  it('reads the text of script and style elements, comments and the doctype as text', () => {
    expect(String(html`<!doctype html><!-- ${'<x>'} --><style>a{b:"c"}</style><p title="${'"'}">${'<'}</p>`)).toBe(
      '<!doctype html><!-- &lt;x&gt; --><style>a{b:"c"}</style><p title="&quot;">&lt;</p>',
    );
  });

  it('Html is made by the tag, raw() and join() only', () => {
    expect(() => new Html(Symbol('feedmirror html'), '<script>')).toThrow(TypeError);
    expect(html`x` instanceof Html).toBe(true);
  });
});
