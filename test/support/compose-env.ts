/**
 * Docker Compose's reading of an env file and of `environment:` values, for the subset of the
 * format feedmirror's files use, following compose's documented rules (docs.docker.com/compose/
 * how-tos/environment-variables/variable-interpolation/#env-file-syntax): `#` lines and blank
 * lines are skipped; `KEY=VALUE`, optionally after `export `; unquoted values are trimmed and end
 * at ` #`; single quotes are literal; double quotes allow \n \t \" \\ escapes; `${VAR}`,
 * `${VAR:-default}` and `${VAR-default}` are interpolated outside single quotes. No container
 * engine runs here, so the compose files are checked through this reading.
 */
export function parseComposeEnvFile(text: string, vars: Record<string, string> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=(.*)$/.exec(line);
    if (!m) throw new Error(`line ${i + 1}: not KEY=VALUE: ${raw}`);
    const key = m[1]!;
    const rest = m[2]!.trim();
    let value: string;
    if (rest.startsWith("'")) {
      const end = rest.indexOf("'", 1);
      if (end === -1) throw new Error(`line ${i + 1}: unterminated single quote`);
      value = rest.slice(1, end);
    } else if (rest.startsWith('"')) {
      let j = 1;
      value = '';
      for (; j < rest.length && rest[j] !== '"'; j++) {
        if (rest[j] === '\\' && j + 1 < rest.length) {
          const c = rest[++j]!;
          value += c === 'n' ? '\n' : c === 't' ? '\t' : c;
        } else value += rest.charAt(j);
      }
      if (j >= rest.length) throw new Error(`line ${i + 1}: unterminated double quote`);
      value = interpolate(value, { ...vars, ...out });
    } else {
      const hash = rest.search(/\s#/);
      value = interpolate((hash === -1 ? rest : rest.slice(0, hash)).trim(), { ...vars, ...out });
    }
    out[key] = value;
  });
  return out;
}

/** Compose's `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `$VAR` and `$$` (a literal $). */
export function interpolate(value: string, vars: Record<string, string | undefined>): string {
  return value.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (all, braced?: string, op?: string, def?: string, bare?: string) => {
      if (all === '$$') return '$';
      const name = (braced ?? bare)!;
      const v = vars[name];
      if (op === ':-') return v === undefined || v === '' ? (def ?? '') : v;
      if (op === '-') return v === undefined ? (def ?? '') : v;
      return v ?? '';
    },
  );
}
