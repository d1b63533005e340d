/**
 * A strict parser of the Prometheus text exposition format (version 0.0.4), so tests, and any
 * tool of ours that reads /metrics, check what a Prometheus server would accept: declared
 * families, valid names and label escapes, numeric values, no duplicate series, contiguous
 * families, and well-formed histograms (ascending cumulative buckets ending at +Inf = _count).
 */
export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface MetricFamily {
  name: string;
  type: MetricType;
  help: string;
  samples: Sample[];
}

export class ExpositionError extends Error {
  constructor(line: number, message: string) {
    super(`metrics text line ${line}: ${message}`);
    this.name = 'ExpositionError';
  }
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set<MetricType>(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function parseValue(s: string, line: number): number {
  // Like Prometheus (Go's ParseFloat), Inf and NaN in any letter case: prom-client writes "Nan".
  if (/^\+?inf(inity)?$/i.test(s)) return Infinity;
  if (/^-inf(inity)?$/i.test(s)) return -Infinity;
  if (/^nan$/i.test(s)) return NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s))
    throw new ExpositionError(line, `not a number: ${JSON.stringify(s)}`);
  return Number(s);
}

function parseLabels(s: string, line: number): { labels: Record<string, string>; rest: string } {
  const labels: Record<string, string> = {};
  let i = 0;
  for (;;) {
    while (s[i] === ' ') i++;
    if (s[i] === '}') return { labels, rest: s.slice(i + 1) };
    const m = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(s.slice(i));
    if (!m) throw new ExpositionError(line, 'bad label name');
    const key = m[0];
    i += key.length;
    if (s[i] !== '=' || s[i + 1] !== '"') throw new ExpositionError(line, `label ${key} must be followed by ="`);
    i += 2;
    let value = '';
    for (;;) {
      const c = s[i];
      if (c === undefined) throw new ExpositionError(line, `unterminated value of label ${key}`);
      if (c === '"') break;
      if (c === '\\') {
        const n = s[i + 1];
        if (n === '\\') value += '\\';
        else if (n === '"') value += '"';
        else if (n === 'n') value += '\n';
        else throw new ExpositionError(line, `bad escape in label ${key}`);
        i += 2;
        continue;
      }
      value += c;
      i++;
    }
    i++;
    if (key in labels) throw new ExpositionError(line, `label ${key} repeated`);
    if (!LABEL.test(key)) throw new ExpositionError(line, `bad label name ${key}`);
    labels[key] = value;
    if (s[i] === ',') i++;
    else if (s[i] !== '}') throw new ExpositionError(line, 'expected , or } after a label');
  }
}

/** The family a sample name belongs to, given the declared families. */
function familyOf(name: string, families: Map<string, MetricFamily>): MetricFamily | undefined {
  const direct = families.get(name);
  if (direct) return direct;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!name.endsWith(suffix)) continue;
    const f = families.get(name.slice(0, -suffix.length));
    if (f && (f.type === 'histogram' || (f.type === 'summary' && suffix !== '_bucket'))) return f;
  }
  return undefined;
}

export function parseExposition(text: string): Map<string, MetricFamily> {
  const families = new Map<string, MetricFamily>();
  const seenSeries = new Set<string>();
  const closed = new Set<string>();
  let current: MetricFamily | undefined;
  if (text.length > 0 && !text.endsWith('\n')) throw new ExpositionError(0, 'text must end with a newline');
  const lines = text.split('\n');
  lines.forEach((raw, idx) => {
    const n = idx + 1;
    if (raw === '') return;
    if (raw.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(raw);
      if (!m) return; // a plain comment
      const [, kind, name = '', rest = ''] = m;
      if (!NAME.test(name)) throw new ExpositionError(n, `bad metric name ${name}`);
      let fam = families.get(name);
      if (fam && fam !== current) throw new ExpositionError(n, `family ${name} is not contiguous`);
      if (!fam) {
        if (current) closed.add(current.name);
        fam = { name, type: 'untyped', help: '', samples: [] };
        families.set(name, fam);
        current = fam;
      }
      if (kind === 'TYPE') {
        if (!TYPES.has(rest as MetricType)) throw new ExpositionError(n, `unknown type ${rest}`);
        if (fam.samples.length > 0) throw new ExpositionError(n, `TYPE of ${name} after its samples`);
        fam.type = rest as MetricType;
      } else {
        fam.help = rest.replace(/\\n/g, '\n').replace(/\\\\/g, '\\');
      }
      return;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{|\s)/.exec(raw);
    if (!m?.[1]) throw new ExpositionError(n, `bad sample line ${JSON.stringify(raw.slice(0, 80))}`);
    const name = m[1];
    let rest = raw.slice(name.length);
    let labels: Record<string, string> = {};
    if (rest.startsWith('{')) ({ labels, rest } = parseLabels(rest.slice(1), n));
    const parts = rest.trim().split(/\s+/);
    if (!rest.startsWith(' ') || parts.length < 1 || parts.length > 2)
      throw new ExpositionError(n, 'expected " value [timestamp]"');
    const value = parseValue(parts[0] ?? '', n);
    if (parts[1] !== undefined && !/^-?\d+$/.test(parts[1])) throw new ExpositionError(n, 'bad timestamp');
    const fam = familyOf(name, families);
    if (!fam) throw new ExpositionError(n, `sample ${name} has no # TYPE line`);
    if (fam !== current || closed.has(fam.name))
      throw new ExpositionError(n, `sample ${name} outside its family block`);
    const series = `${name}{${Object.entries(labels)
      .sort()
      .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
      .join(',')}}`;
    if (seenSeries.has(series)) throw new ExpositionError(n, `duplicate series ${series}`);
    seenSeries.add(series);
    if ((fam.type === 'counter' || name.endsWith('_count') || name.endsWith('_bucket')) && !(value >= 0)) {
      throw new ExpositionError(n, `${name} must be >= 0`);
    }
    fam.samples.push({ name, labels, value });
  });
  for (const fam of families.values()) if (fam.type === 'histogram') checkHistogram(fam);
  return families;
}

function checkHistogram(fam: MetricFamily): void {
  const groups = new Map<string, { buckets: Array<[number, number]>; count?: number; sum?: number }>();
  for (const s of fam.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    const g = groups.get(key) ?? { buckets: [] };
    groups.set(key, g);
    if (s.name === `${fam.name}_bucket`) {
      if (le === undefined) throw new ExpositionError(0, `${fam.name}_bucket without le`);
      g.buckets.push([parseValue(le, 0), s.value]);
    } else if (s.name === `${fam.name}_count`) g.count = s.value;
    else if (s.name === `${fam.name}_sum`) g.sum = s.value;
    else throw new ExpositionError(0, `unexpected sample ${s.name} in histogram ${fam.name}`);
  }
  for (const g of groups.values()) {
    const last = g.buckets.at(-1);
    if (!last || last[0] !== Infinity) throw new ExpositionError(0, `histogram ${fam.name} lacks its +Inf bucket`);
    for (let i = 1; i < g.buckets.length; i++) {
      const [prevLe, prevV] = g.buckets[i - 1]!;
      const [le, v] = g.buckets[i]!;
      if (!(le > prevLe) || v < prevV)
        throw new ExpositionError(0, `histogram ${fam.name} buckets are not ascending and cumulative`);
    }
    if (g.count !== last[1] || g.sum === undefined)
      throw new ExpositionError(
        0,
        `histogram ${fam.name}: _count must equal the +Inf bucket, and _sum must be present`,
      );
  }
}
