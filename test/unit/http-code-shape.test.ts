import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * Two rules of the HTTP layer that review alone would not hold, read from the code with the
 * TypeScript compiler:
 *  - markup is written with the `html` tag (src/util/html.ts), which escapes every value: a
 *    string or untagged template holding a tag, or a `+` that glues markup together, in a page
 *    module of src/http or the simulator's pages is refused, and so is `raw()` outside the places
 *    listed here (each says why its text is the code's own);
 *  - no function in src/http is longer than 150 lines (a router registers handlers defined
 *    beside it; a long handler is split into the steps it takes).
 */
const ROOT = join(import.meta.dirname, '../..');
const MAX_FUNCTION_LINES = 150;

/** Where raw() may appear, and what it is given: text of our own, never a value from outside. */
const RAW_ALLOWED = new Map([
  ['src/http/owner-pages.ts', 'raw(css(b))'], // our stylesheet; the brand's colours are checked #rrggbb
  ['src/simulator/oauth.ts', 'raw(CONSENT_STYLE)'], // a constant stylesheet
]);

/** Text that looks like markup but is none: each answered as text/plain, or never served. */
const NOT_MARKUP = new Map([
  ['src/http/feeds.ts', ['No such feed: the address must be /feeds/<account id>.json\n']], // a text/plain 404
]);
/** The simulator's modules that answer with HTML pages (its login, its error and post pages). */
const SIMULATOR_PAGES = ['reply.ts', 'oauth.ts', 'index.ts', 'faults.ts'].map((f) => `src/simulator/${f}`);

function filesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

function parse(file: string): ts.SourceFile {
  return ts.createSourceFile(file, readFileSync(join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
}

const lineOf = (sf: ts.SourceFile, node: ts.Node) => sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;

/** A tag, a closing tag or a doctype: text a browser would read as markup. */
const MARKUP = /<\/?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?\/?>|<!doctype/i;

function isHtmlTagged(node: ts.Node): boolean {
  const parent = node.parent;
  return ts.isTaggedTemplateExpression(parent) && ts.isIdentifier(parent.tag) && parent.tag.text === 'html';
}

function textOf(node: ts.StringLiteralLike | ts.TemplateExpression): string {
  if (ts.isTemplateExpression(node))
    return [node.head.text, ...node.templateSpans.map((s) => s.literal.text)].join('${}');
  return node.text;
}

/** Every place of a file where markup is made without the `html` tag. */
function markupOutsideTag(file: string): string[] {
  const sf = parse(file);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node)) {
      const text = textOf(node);
      if (MARKUP.test(text) && !isHtmlTagged(node) && !NOT_MARKUP.get(file)?.includes(text))
        found.push(`${file}:${lineOf(sf, node)} ${text.slice(0, 60)}`);
    }
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'raw') {
      const call = node.getText(sf);
      if (RAW_ALLOWED.get(file) !== call) found.push(`${file}:${lineOf(sf, node)} ${call} (raw() outside the list)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

describe('the HTTP layer', () => {
  const pageFiles = [...filesUnder('src/http'), ...SIMULATOR_PAGES];

  it('writes markup with the html tag only (no string, untagged template or + holding a tag)', () => {
    expect(pageFiles.length).toBeGreaterThan(30);
    expect(pageFiles.flatMap(markupOutsideTag)).toEqual([]);
  });

  it('the check finds markup outside the tag: a string, an untagged template, raw() of a value', () => {
    const sample = (code: string) => {
      const sf = ts.createSourceFile('sample.ts', code, ts.ScriptTarget.Latest, true);
      const hits: string[] = [];
      const visit = (node: ts.Node): void => {
        if (
          (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node)) &&
          MARKUP.test(textOf(node)) &&
          !isHtmlTagged(node)
        )
          hits.push(node.getText(sf));
        ts.forEachChild(node, visit);
      };
      visit(sf);
      return hits;
    };
    expect(sample('const a = `<p>${name}</p>`;')).toHaveLength(1);
    expect(sample("const a = '<td>' + name + '</td>';")).toHaveLength(2);
    expect(sample('const a = `<!doctype html>`;')).toHaveLength(1);
    expect(sample('const a = html`<p>${name}</p>`;')).toEqual([]);
    expect(sample("const a = 'a < b and c > d'; const t = 'Promise<void>';")).toHaveLength(1);
  });

  it(`has no function longer than ${MAX_FUNCTION_LINES} lines`, () => {
    const long: string[] = [];
    for (const file of filesUnder('src/http')) {
      const sf = parse(file);
      const visit = (node: ts.Node): void => {
        if (ts.isFunctionLike(node) && 'body' in node && node.body) {
          const first = lineOf(sf, node);
          const last = sf.getLineAndCharacterOfPosition(node.getEnd()).line + 1;
          const name =
            node.name?.getText(sf) ??
            (ts.isVariableDeclaration(node.parent) ? node.parent.name.getText(sf) : '(anonymous)');
          if (last - first + 1 > MAX_FUNCTION_LINES) long.push(`${file}:${first} ${name}: ${last - first + 1} lines`);
        }
        ts.forEachChild(node, visit);
      };
      visit(sf);
    }
    expect(long).toEqual([]);
  });
});
