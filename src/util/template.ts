/**
 * A deliberately tiny template language for the emails (src/alerts/templates.ts), small enough
 * to read in one sitting and strict enough that an operator's override fails at start-up rather
 * than in the middle of an alert:
 *
 *   {{name}}  {{brand.name}}           a value; in HTML mode always escaped
 *   {{#if name}} ... {{else}} ... {{/if}}   a value that is present (not undefined, null, false or '')
 *   {{#unless name}} ... {{/unless}}
 *
 * Nothing else: no loops, no helpers, no unescaped output except values the code itself marks
 * as already-HTML (`safeHtml`, used only for the layout's body). A name the template may not use,
 * an unclosed or stray block or a lone `{{` is a TemplateSyntaxError with the line it is on.
 */

export class TemplateSyntaxError extends Error {
  override readonly name = 'TemplateSyntaxError';
  constructor(
    readonly detail: string,
    readonly line: number,
  ) {
    super(`line ${line}: ${detail}`);
  }
}

/** HTML the code built itself (already escaped); a template cannot make one. */
export class SafeHtml {
  constructor(readonly html: string) {}
}
export const safeHtml = (html: string) => new SafeHtml(html);

export type TemplateValue = string | number | boolean | null | undefined | Date | SafeHtml | TemplateScope;
export interface TemplateScope {
  [key: string]: TemplateValue;
}

type Node =
  | { t: 'text'; s: string }
  | { t: 'var'; path: string }
  | { t: 'if'; path: string; negate: boolean; yes: Node[]; no: Node[] };

export interface CompiledTemplate {
  render(scope: TemplateScope): string;
  /** Every name the template reads. */
  readonly names: ReadonlySet<string>;
}

export function escapeHtml(s: string): string {
  return s.replace(
    /[&<>"'`]/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' })[c] as string,
  );
}

const NAME = /^[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z][A-Za-z0-9_]*)*$/;

/**
 * Parse `source`. `known` says which names the template may use (anything else is a syntax error:
 * a typo in an override must not silently print nothing). `mode` html escapes every value.
 */
export function compileTemplate(
  source: string,
  opts: { mode: 'html' | 'text'; known: ReadonlySet<string> },
): CompiledTemplate {
  const names = new Set<string>();
  const root: Node[] = [];
  const stack: Array<{ node: Extract<Node, { t: 'if' }>; inElse: boolean; line: number; kind: 'if' | 'unless' }> = [];
  const target = () => {
    const top = stack.at(-1);
    return top ? (top.inElse ? top.node.no : top.node.yes) : root;
  };
  const lineAt = (i: number) => source.slice(0, i).split('\n').length;
  const useName = (path: string, at: number) => {
    if (!NAME.test(path)) throw new TemplateSyntaxError(`"${path}" is not a name`, lineAt(at));
    if (!opts.known.has(path))
      throw new TemplateSyntaxError(
        `unknown name {{${path}}} (this template knows: ${[...opts.known].sort().join(', ')})`,
        lineAt(at),
      );
    names.add(path);
  };
  let i = 0;
  while (i < source.length) {
    const open = source.indexOf('{{', i);
    const strayClose = source.indexOf('}}', i);
    if (strayClose !== -1 && (open === -1 || strayClose < open))
      throw new TemplateSyntaxError('"}}" without a matching "{{"', lineAt(strayClose));
    if (open === -1) {
      target().push({ t: 'text', s: source.slice(i) });
      break;
    }
    if (open > i) target().push({ t: 'text', s: source.slice(i, open) });
    const close = source.indexOf('}}', open + 2);
    if (close === -1) throw new TemplateSyntaxError('"{{" is never closed with "}}"', lineAt(open));
    const tag = source.slice(open + 2, close).trim();
    if (tag.includes('{{')) throw new TemplateSyntaxError('"{{" is never closed with "}}"', lineAt(open));
    const block = /^#(if|unless)\s+(\S+)$/.exec(tag);
    const end = /^\/(if|unless)$/.exec(tag);
    if (block) {
      useName(block[2]!, open);
      const node: Extract<Node, { t: 'if' }> = {
        t: 'if',
        path: block[2]!,
        negate: block[1] === 'unless',
        yes: [],
        no: [],
      };
      target().push(node);
      stack.push({ node, inElse: false, line: lineAt(open), kind: block[1] as 'if' | 'unless' });
    } else if (tag === 'else') {
      const top = stack.at(-1);
      if (!top || top.inElse) throw new TemplateSyntaxError('{{else}} outside an {{#if}}', lineAt(open));
      top.inElse = true;
    } else if (end) {
      const top = stack.pop();
      if (!top) throw new TemplateSyntaxError(`{{/${end[1]}}} without an opening {{#${end[1]}}}`, lineAt(open));
      if (top.kind !== end[1])
        throw new TemplateSyntaxError(`{{/${end[1]}}} closes the {{#${top.kind}}} of line ${top.line}`, lineAt(open));
    } else if (tag.startsWith('#') || tag.startsWith('/') || tag.startsWith('{') || tag.startsWith('>')) {
      throw new TemplateSyntaxError(
        `unsupported tag {{${tag}}} (only {{name}}, {{#if}}, {{#unless}}, {{else}})`,
        lineAt(open),
      );
    } else {
      useName(tag, open);
      target().push({ t: 'var', path: tag });
    }
    i = close + 2;
  }
  const unclosed = stack.at(-1);
  if (unclosed)
    throw new TemplateSyntaxError(`{{#${unclosed.kind} ${unclosed.node.path}}} is never closed`, unclosed.line);

  const html = opts.mode === 'html';
  const show = (v: TemplateValue): string => {
    if (v === undefined || v === null || v === false) return '';
    if (v instanceof SafeHtml) return html ? v.html : v.html;
    if (v instanceof Date) return html ? escapeHtml(v.toISOString()) : v.toISOString();
    if (typeof v === 'object') return '';
    return html ? escapeHtml(String(v)) : String(v);
  };
  const run = (nodes: Node[], scope: TemplateScope): string => {
    let out = '';
    for (const n of nodes) {
      if (n.t === 'text') out += n.s;
      else if (n.t === 'var') out += show(lookup(scope, n.path));
      else out += run(present(lookup(scope, n.path)) !== n.negate ? n.yes : n.no, scope);
    }
    return out;
  };
  return { render: (scope) => run(root, scope), names };
}

function lookup(scope: TemplateScope, path: string): TemplateValue {
  let v: TemplateValue = scope;
  for (const part of path.split('.')) {
    if (v === null || typeof v !== 'object' || v instanceof SafeHtml || v instanceof Date) return undefined;
    v = Object.hasOwn(v, part) ? v[part] : undefined;
  }
  return v;
}

function present(v: TemplateValue): boolean {
  return !(v === undefined || v === null || v === false || v === '');
}
