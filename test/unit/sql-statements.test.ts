import { describe, expect, it } from 'vitest';
import { splitStatements } from '../../src/store/sql-statements.ts';
import { migrationHeader } from '../../src/store/migrate.ts';

describe('splitStatements (migrations outside a transaction)', () => {
  it('splits at semicolons and drops empty and comment-only pieces', () => {
    expect(splitStatements('-- head\nCREATE TABLE a (id int);\n\n  SELECT 1 ;\n-- tail\n')).toEqual([
      '-- head\nCREATE TABLE a (id int)',
      'SELECT 1',
    ]);
  });

  it('keeps semicolons inside strings, quoted names, dollar quotes and comments', () => {
    const sql = [
      "INSERT INTO t VALUES ('a;b', 'it''s; here', E'back\\'; slash;');",
      'SELECT "odd;""name" FROM t;',
      'DO $body$ BEGIN PERFORM 1; PERFORM $$;$$; END $body$;',
      'SELECT 1 /* a; /* nested; */ still; */ + 1;',
      'SELECT 2 -- trailing; comment\n;',
      'CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql;',
    ].join('\n');
    expect(splitStatements(sql)).toEqual([
      "INSERT INTO t VALUES ('a;b', 'it''s; here', E'back\\'; slash;')",
      'SELECT "odd;""name" FROM t',
      'DO $body$ BEGIN PERFORM 1; PERFORM $$;$$; END $body$',
      'SELECT 1 /* a; /* nested; */ still; */ + 1',
      'SELECT 2 -- trailing; comment',
      'CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql',
    ]);
  });

  it('a positional parameter or a name with $ is not a dollar quote', () => {
    expect(splitStatements('SELECT $1; SELECT a$b FROM t;')).toEqual(['SELECT $1', 'SELECT a$b FROM t']);
  });
});

describe('migrationHeader', () => {
  it('reads compatible-with and transaction from the leading comments only', () => {
    expect(
      migrationHeader(
        '-- What it does.\n-- compatible-with: 018_compact_posts_and_copies.sql\n-- transaction: none\nSELECT 1;\n-- compatible-with: 001_x.sql\n',
      ),
    ).toEqual({ compatibleWith: '018_compact_posts_and_copies.sql', transactional: false });
    expect(migrationHeader('CREATE TABLE a (id int);\n-- transaction: none\n')).toEqual({ transactional: true });
  });

  it('refuses a transaction mode it does not know', () => {
    expect(() => migrationHeader('-- transaction: each\nSELECT 1;')).toThrow('"-- transaction: each" is not a header');
  });
});
