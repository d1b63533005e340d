/**
 * The `fields=` parameter: a comma list where an edge may be expanded inline,
 * `id,caption,children{media_type,media_url,thumbnail_url}` (R-MED-3, R-MED-9).
 */
export interface FieldRequest {
  name: string;
  /** Inner list of an expansion `name{a,b}`; undefined when not expanded. */
  sub?: string[];
}

export function parseFields(raw: string | undefined): FieldRequest[] | { error: string } {
  if (raw === undefined || raw.trim() === '') return [];
  const out: FieldRequest[] = [];
  let i = 0;
  const s = raw;
  while (i < s.length) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*/.exec(s.slice(i));
    if (!m) return { error: `Syntax error "Expected name." at character ${i}: ${s}` };
    i += m[0].length;
    const field: FieldRequest = { name: m[1] as string };
    if (s[i] === '{') {
      const close = s.indexOf('}', i);
      if (close === -1)
        return { error: `Syntax error "Expected "}" instead of end of string." at character ${s.length}: ${s}` };
      const inner = s.slice(i + 1, close);
      if (inner.includes('{'))
        return { error: `Syntax error "Nested expansion is not supported here." at character ${i}: ${s}` };
      field.sub = inner
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean);
      i = close + 1;
      while (s[i] === ' ') i++;
    }
    out.push(field);
    if (i < s.length) {
      if (s[i] !== ',')
        return { error: `Syntax error "Expected end of string instead of "${s[i]}"." at character ${i}: ${s}` };
      i++;
    }
  }
  return out;
}
