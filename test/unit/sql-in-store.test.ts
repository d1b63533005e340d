import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * Every SQL statement lives in src/store (docs/architecture.md): one module per table group, so
 * a change of schema is a change of src/store and its tests. This scans src/ and jobs/ outside
 * src/store for a `.query(` call and for a string that reads as SQL, and fails on either.
 */
const ROOT = join(import.meta.dirname, '../..');
const SCANNED = ['src', 'jobs'];
const STORE = 'src/store/';

/** A statement's opening words, as written in SQL (upper case): prose that mentions them is lower case. */
const SQL =
  /\b(SELECT\s+[\w*(]|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(TABLE|DATABASE|INDEX|UNIQUE\s+INDEX)|ALTER\s+TABLE|DROP\s+(TABLE|DATABASE|INDEX)|TRUNCATE\s+\w|WITH\s+\w+\s+AS\s*\()/;

/** What of one source text runs or holds SQL: `.query(` calls and SQL-looking strings, with their lines. */
function sqlIn(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: string[] = [];
  const at = (node: ts.Node) => `${file}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`;
  const visit = (node: ts.Node) => {
    if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      node.expression.name.text === 'query'
    )
      found.push(`${at(node)} calls .query()`);
    if (
      (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateHead(node)) &&
      SQL.test(node.text)
    )
      found.push(`${at(node)} holds SQL: ${node.text.slice(0, 60)}`);
    if ((ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) && SQL.test(node.text))
      found.push(`${at(node)} holds SQL: ${node.text.slice(0, 60)}`);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function sources(): string[] {
  return SCANNED.flatMap((dir) =>
    readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .map((f) =>
        relative(ROOT, join(ROOT, dir, f))
          .split('\\')
          .join('/'),
      ),
  );
}

describe('SQL only in src/store', () => {
  it('no file of src/ or jobs/ outside src/store calls .query() or holds an SQL statement', () => {
    const files = sources().filter((f) => !f.startsWith(STORE));
    expect(files.length).toBeGreaterThan(100);
    expect(files.flatMap((f) => sqlIn(f, readFileSync(join(ROOT, f), 'utf8')))).toEqual([]);
  });

  it("the scan finds the store's own statements, and what a file outside it would hold", () => {
    const store = sources().filter((f) => f.startsWith(STORE));
    expect(store.flatMap((f) => sqlIn(f, readFileSync(join(ROOT, f), 'utf8'))).length).toBeGreaterThan(50);
    const outside = [
      "await db.query('SELECT 1');",
      'const q = `DELETE FROM posts WHERE account_id = ${id}`;',
      "const s = 'INSERT INTO accounts (id) VALUES ($1)';",
      'const t = `x ${a} UPDATE accounts SET status = 1`;',
    ].join('\n');
    expect(sqlIn('src/cli/x.ts', outside)).toEqual([
      'src/cli/x.ts:1 calls .query()',
      'src/cli/x.ts:1 holds SQL: SELECT 1',
      'src/cli/x.ts:2 holds SQL: DELETE FROM posts WHERE account_id = ',
      'src/cli/x.ts:3 holds SQL: INSERT INTO accounts (id) VALUES ($1)',
      'src/cli/x.ts:4 holds SQL:  UPDATE accounts SET status = 1',
    ]);
    // Prose that names a statement in passing is not one.
    expect(sqlIn('src/cli/y.ts', "const help = 'select the accounts to delete from the list';")).toEqual([]);
  });
});
