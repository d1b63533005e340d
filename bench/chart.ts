import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Small SVG line charts for the benchmark's figures (docs/benchmarks.md shows them). Hand-written:
 * a few dozen lines of SVG need no charting library, and the output is plain text a diff can read.
 */
export interface Series {
  name: string;
  points: ReadonlyArray<readonly [number, number]>;
  color?: string;
}

export interface ChartSpec {
  title: string;
  xLabel: string;
  yLabel: string;
  series: readonly Series[];
  /** Horizontal reference lines (a target), labelled. */
  marks?: ReadonlyArray<{ y: number; label: string }>;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#17becf'];
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

export function lineChart(spec: ChartSpec): string {
  // The legend's column is as wide as its longest name (about 7 px a character at 12 px).
  const legend = Math.max(150, 32 + 7 * Math.max(0, ...spec.series.map((s) => s.name.length)));
  const W = 570 + legend;
  const H = 360;
  const m = { l: 64, r: legend, t: 36, b: 48 };
  const pw = W - m.l - m.r;
  const ph = H - m.t - m.b;
  const all = spec.series.flatMap((s) => s.points);
  const xMax = niceMax(Math.max(...all.map((p) => p[0]), 1));
  const yMax = niceMax(Math.max(...all.map((p) => p[1]), ...(spec.marks ?? []).map((k) => k.y), 1) * 1.05);
  const x = (v: number) => m.l + (v / xMax) * pw;
  const y = (v: number) => m.t + ph - (v / yMax) * ph;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
  );
  out.push(`<rect width="${W}" height="${H}" fill="#fff"/>`);
  out.push(`<text x="${W / 2}" y="20" text-anchor="middle" font-size="14">${esc(spec.title)}</text>`);
  for (let i = 0; i <= 5; i++) {
    const vy = (yMax * i) / 5;
    const vx = (xMax * i) / 5;
    out.push(`<line x1="${m.l}" x2="${m.l + pw}" y1="${y(vy)}" y2="${y(vy)}" stroke="#eee"/>`);
    out.push(`<text x="${m.l - 6}" y="${y(vy) + 4}" text-anchor="end">${+vy.toFixed(2)}</text>`);
    out.push(`<text x="${x(vx)}" y="${m.t + ph + 16}" text-anchor="middle">${+vx.toFixed(2)}</text>`);
  }
  out.push(
    `<line x1="${m.l}" x2="${m.l}" y1="${m.t}" y2="${m.t + ph}" stroke="#333"/><line x1="${m.l}" x2="${m.l + pw}" y1="${m.t + ph}" y2="${m.t + ph}" stroke="#333"/>`,
  );
  out.push(`<text x="${m.l + pw / 2}" y="${H - 10}" text-anchor="middle">${esc(spec.xLabel)}</text>`);
  out.push(
    `<text transform="translate(16 ${m.t + ph / 2}) rotate(-90)" text-anchor="middle">${esc(spec.yLabel)}</text>`,
  );
  for (const k of spec.marks ?? []) {
    out.push(`<line x1="${m.l}" x2="${m.l + pw}" y1="${y(k.y)}" y2="${y(k.y)}" stroke="#999" stroke-dasharray="4 3"/>`);
    out.push(`<text x="${m.l + pw + 4}" y="${y(k.y) + 4}" fill="#666">${esc(k.label)}</text>`);
  }
  spec.series.forEach((s, i) => {
    const color = s.color ?? COLORS[i % COLORS.length];
    const pts = s.points.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(' ');
    out.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${pts}"/>`);
    if (s.points.length <= 40)
      for (const p of s.points)
        out.push(`<circle cx="${x(p[0]).toFixed(1)}" cy="${y(p[1]).toFixed(1)}" r="3" fill="${color}"/>`);
    out.push(`<rect x="${m.l + pw + 8}" y="${m.t + 8 + i * 18}" width="12" height="3" fill="${color}"/>`);
    out.push(`<text x="${m.l + pw + 24}" y="${m.t + 12 + i * 18}">${esc(s.name)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}

export async function writeChart(path: string, spec: ChartSpec): Promise<string> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, lineChart(spec));
  return path;
}

/** Worker RSS over a scale run, one series per phase. */
export async function writeMemoryChart(
  points: ReadonlyArray<{ atSeconds: number; rssMb: number; phase: string }>,
  path: string,
  title: string,
): Promise<string> {
  const phases = [...new Set(points.map((p) => p.phase))];
  return writeChart(path, {
    title,
    xLabel: 'seconds since the start of the run',
    yLabel: 'worker RSS (MB)',
    series: phases.map((ph) => ({
      name: ph,
      points: points.filter((p) => p.phase === ph).map((p) => [p.atSeconds, p.rssMb] as const),
    })),
    marks: [{ y: 300, label: 'target 300 MB' }],
  });
}
