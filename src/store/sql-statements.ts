/**
 * Split a migration's SQL into its statements, for a migration that runs outside a transaction:
 * PostgreSQL runs a query string of several statements as one implicit transaction, in which
 * CREATE INDEX CONCURRENTLY and a DO block's COMMIT are refused, so each statement is sent alone.
 *
 * A semicolon ends a statement unless it is inside a string ('...', E'...' with backslash
 * escapes), a quoted identifier ("..."), a dollar-quoted body ($$...$$, $tag$...$tag$), a line
 * comment (-- ...) or a block comment (/* ... *\/, which nest in PostgreSQL). node-postgres has no
 * splitter and a full SQL parser would be a large dependency for these few rules.
 */
export function splitStatements(sql: string): string[] {
  const out: string[] = [];
  let start = 0;
  let i = 0;
  const n = sql.length;
  const push = (end: number) => {
    const text = sql.slice(start, end).trim();
    if (text !== '' && !isOnlyComments(text)) out.push(text);
  };
  while (i < n) {
    const c = sql[i]!;
    const next = sql[i + 1];
    if (c === '-' && next === '-') {
      const eol = sql.indexOf('\n', i);
      i = eol === -1 ? n : eol + 1;
    } else if (c === '/' && next === '*') {
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (sql[i] === '/' && sql[i + 1] === '*') {
          depth++;
          i += 2;
        } else if (sql[i] === '*' && sql[i + 1] === '/') {
          depth--;
          i += 2;
        } else i++;
      }
    } else if (c === "'") {
      // E'...' (the E just before) takes backslash escapes; a doubled '' is a quote either way.
      const escapes = i > 0 && /[eE]/.test(sql[i - 1]!) && (i < 2 || !/[A-Za-z0-9_]/.test(sql[i - 2]!));
      i++;
      while (i < n) {
        if (escapes && sql[i] === '\\') i += 2;
        else if (sql[i] === "'" && sql[i + 1] === "'") i += 2;
        else if (sql[i] === "'") break;
        else i++;
      }
      i++;
    } else if (c === '"') {
      i++;
      while (i < n && !(sql[i] === '"' && sql[i + 1] !== '"')) i += sql[i] === '"' ? 2 : 1;
      i++;
    } else if (c === '$' && (i === 0 || !/[A-Za-z0-9_$]/.test(sql[i - 1]!))) {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i));
      if (tag) {
        const close = sql.indexOf(tag[0], i + tag[0].length);
        i = close === -1 ? n : close + tag[0].length;
      } else i++;
    } else if (c === ';') {
      push(i);
      start = ++i;
    } else i++;
  }
  push(n);
  return out;
}

function isOnlyComments(text: string): boolean {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .split('\n')
    .every((line) => /^\s*(--.*)?$/.test(line));
}
