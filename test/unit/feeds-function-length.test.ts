import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The feed pipeline reads as named steps: no function in src/feeds is longer than MAX_LINES lines.
 * A function that grows past it is split into steps named in the spec's words (src/feeds/sync.ts
 * shows how: each step is handed what the steps before it read).
 */
const MAX_LINES = 150;
const FEEDS = join(import.meta.dirname, '../../src/feeds');

interface FunctionSpan {
  file: string;
  name: string;
  lines: number;
}

/** Every function-like node of a source text (declarations, methods, arrows, expressions), with its length in lines. */
function functionSpans(file: string, text: string): FunctionSpan[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const spans: FunctionSpan[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      spans.push({ file, name: nameOf(node), lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return spans;
}

function nameOf(node: ts.Node): string {
  const named = node as { name?: ts.Node };
  if (named.name && ts.isIdentifier(named.name)) return named.name.text;
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (parent && ts.isPropertyAssignment(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  return `(anonymous, line ${node.getSourceFile().getLineAndCharacterOfPosition(node.getStart()).line + 1})`;
}

describe('src/feeds: functions of a readable size', () => {
  it(`no function in src/feeds is longer than ${MAX_LINES} lines`, () => {
    const files = readdirSync(FEEDS, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    expect(files.length).toBeGreaterThan(5);
    const spans = files.flatMap((f) => functionSpans(f, readFileSync(join(FEEDS, f), 'utf8')));
    const long = spans.filter((s) => s.lines > MAX_LINES).map((s) => `${s.file} ${s.name}: ${s.lines} lines`);
    expect(long).toEqual([]);
  });

  it('measures a function from its first line to its last, nested ones on their own', () => {
    const body = Array.from({ length: MAX_LINES }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const text = `export function long() {\n${body}\n  const inner = () => {\n    return 1;\n  };\n}\n`;
    const spans = functionSpans('x.ts', text);
    expect(spans).toEqual([
      { file: 'x.ts', name: 'long', lines: MAX_LINES + 5 },
      { file: 'x.ts', name: 'inner', lines: 3 },
    ]);
  });
});
