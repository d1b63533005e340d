import { createHash } from 'node:crypto';

/**
 * Generated pictures that look like photographs at a glance: a sky with its light, a sun or a
 * moon, clouds, and a landscape under it (the sea with the sun's reflection, rolling hills,
 * mountains over a lake, or a field with trees), each with a palette of its own time of day,
 * chosen from a hash of the picture's key so every post and slide differs. Pure SVG text: no
 * binary in the repository, no licence to carry. Nothing written on them (a visitor sees no id;
 * images.ts puts the key in the JPEG's EXIF description instead).
 */

interface Palette {
  skyTop: string;
  skyHorizon: string;
  sun: string;
  glow: string;
  land: [string, string, string];
  water: [string, string];
  cloud: string;
  moon?: boolean;
}

const PALETTES: readonly Palette[] = [
  // dawn
  {
    skyTop: '#36466f',
    skyHorizon: '#f6b27a',
    sun: '#fff1c9',
    glow: '#ffcf8a',
    land: ['#6b5b7b', '#4a3f5c', '#2e2a3d'],
    water: ['#c98f7a', '#3b3f5e'],
    cloud: '#f7d3c2',
  },
  // clear noon
  {
    skyTop: '#2f7fd8',
    skyHorizon: '#cfe8fb',
    sun: '#fffdf0',
    glow: '#ffffff',
    land: ['#7fa36b', '#5b8a4f', '#3d6b3a'],
    water: ['#6fb1d6', '#1f5f8b'],
    cloud: '#ffffff',
  },
  // golden hour
  {
    skyTop: '#3b3a7a',
    skyHorizon: '#ffb347',
    sun: '#fff0b3',
    glow: '#ff9a3c',
    land: ['#a0643c', '#6e4530', '#3a2620'],
    water: ['#e09150', '#40304f'],
    cloud: '#ffc48a',
  },
  // dusk
  {
    skyTop: '#1c1f4a',
    skyHorizon: '#f0706a',
    sun: '#ffd6a0',
    glow: '#ff7f6e',
    land: ['#4b3b60', '#33294a', '#1d1830'],
    water: ['#b5606a', '#1f1c3a'],
    cloud: '#f49a8e',
  },
  // overcast
  {
    skyTop: '#7f8ea3',
    skyHorizon: '#dfe4ea',
    sun: '#f4f6f8',
    glow: '#eef1f4',
    land: ['#8a9a84', '#6d7f6a', '#4f5f4f'],
    water: ['#a9b6c2', '#5d6f7f'],
    cloud: '#f2f4f6',
  },
  // blue hour with a moon
  {
    skyTop: '#0b1230',
    skyHorizon: '#3d5a8c',
    sun: '#f3f1e4',
    glow: '#8fa6d1',
    land: ['#27365a', '#1b2644', '#10182e'],
    water: ['#4a6594', '#0d1530'],
    cloud: '#55688f',
    moon: true,
  },
];

type Kind = 'sea' | 'hills' | 'lake' | 'field';
const KINDS: readonly Kind[] = ['sea', 'hills', 'lake', 'field'];

/** A deterministic stream of numbers in [0, 1) from a key. */
function randomFrom(key: string): () => number {
  let block = 0;
  let buf = createHash('sha256').update(key).digest();
  let i = 0;
  return () => {
    if (i + 4 > buf.length) {
      block += 1;
      buf = createHash('sha256').update(`${key}#${block}`).digest();
      i = 0;
    }
    const v = buf.readUInt32BE(i) / 0x1_0000_0000;
    i += 4;
    return v;
  };
}

const f = (n: number) => n.toFixed(1);

/** A smooth ridge from left to right around `base` (y), closed down to the bottom edge. */
function ridge(rand: () => number, w: number, h: number, base: number, amp: number, points: number): string {
  const step = w / points;
  const ys = Array.from({ length: points + 1 }, () => base + (rand() - 0.5) * 2 * amp);
  let d = `M0,${f(ys[0] as number)}`;
  for (let i = 1; i <= points; i++) {
    const x0 = (i - 1) * step;
    const x1 = i * step;
    const y0 = ys[i - 1] as number;
    const y1 = ys[i] as number;
    d += ` C${f(x0 + step / 2)},${f(y0)} ${f(x1 - step / 2)},${f(y1)} ${f(x1)},${f(y1)}`;
  }
  return `${d} L${f(w)},${f(h)} L0,${f(h)} Z`;
}

/** Jagged peaks for mountains. */
function peaks(rand: () => number, w: number, base: number, amp: number, count: number): string {
  const step = w / count;
  let d = `M0,${f(base)}`;
  for (let i = 0; i < count; i++) {
    const x = i * step;
    d += ` L${f(x + step * (0.3 + rand() * 0.4))},${f(base - amp * (0.4 + rand() * 0.6))} L${f(x + step)},${f(base - amp * rand() * 0.25)}`;
  }
  return `${d} L${f(w)},${f(base)} Z`;
}

/** The SVG of the scene for `key`, `w` × `h` user units. */
export function sceneSvg(key: string, w: number, h: number): string {
  const rand = randomFrom(key);
  const p = PALETTES[Math.floor(rand() * PALETTES.length)] as Palette;
  const kind = KINDS[Math.floor(rand() * KINDS.length)] as Kind;
  const horizon = h * (0.5 + rand() * 0.18);
  const sunX = w * (0.2 + rand() * 0.6);
  const sunY = horizon - h * (0.08 + rand() * 0.25);
  const sunR = Math.min(w, h) * (0.04 + rand() * 0.04);
  const parts: string[] = [];
  const defs: string[] = [
    `<linearGradient id="sky" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="${p.skyTop}"/><stop offset="1" stop-color="${p.skyHorizon}"/></linearGradient>`,
    `<radialGradient id="glow" cx="${f(sunX)}" cy="${f(sunY)}" r="${f(Math.max(w, h) * 0.45)}" gradientUnits="userSpaceOnUse"><stop offset="0" stop-color="${p.glow}" stop-opacity="0.75"/><stop offset="1" stop-color="${p.glow}" stop-opacity="0"/></radialGradient>`,
    `<linearGradient id="water" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="${p.water[0]}"/><stop offset="1" stop-color="${p.water[1]}"/></linearGradient>`,
    `<radialGradient id="vignette" cx="0.5" cy="0.5" r="0.75"><stop offset="0.6" stop-color="#000" stop-opacity="0"/><stop offset="1" stop-color="#000" stop-opacity="0.45"/></radialGradient>`,
  ];
  parts.push(`<rect width="${w}" height="${h}" fill="url(#sky)"/>`);
  parts.push(`<rect width="${w}" height="${h}" fill="url(#glow)"/>`);
  // The sun (or the moon) and a few soft clouds.
  parts.push(`<circle cx="${f(sunX)}" cy="${f(sunY)}" r="${f(sunR)}" fill="${p.sun}"/>`);
  if (p.moon)
    parts.push(
      `<circle cx="${f(sunX - sunR * 0.3)}" cy="${f(sunY - sunR * 0.2)}" r="${f(sunR * 0.25)}" fill="${p.glow}" opacity="0.5"/>`,
    );
  const clouds = 2 + Math.floor(rand() * 4);
  for (let i = 0; i < clouds; i++) {
    const cx = rand() * w;
    const cy = horizon * (0.1 + rand() * 0.6);
    const rx = w * (0.08 + rand() * 0.14);
    const ry = rx * (0.18 + rand() * 0.12);
    const o = (0.25 + rand() * 0.35).toFixed(2);
    parts.push(
      `<g fill="${p.cloud}" opacity="${o}"><ellipse cx="${f(cx)}" cy="${f(cy)}" rx="${f(rx)}" ry="${f(ry)}"/><ellipse cx="${f(cx + rx * 0.4)}" cy="${f(cy - ry * 0.6)}" rx="${f(rx * 0.55)}" ry="${f(ry * 0.9)}"/></g>`,
    );
  }
  if (kind === 'sea') {
    parts.push(`<rect y="${f(horizon)}" width="${w}" height="${f(h - horizon)}" fill="url(#water)"/>`);
    // The sun's glitter on the water: short bright strokes under it, wider towards the shore.
    const strokes = 14 + Math.floor(rand() * 10);
    for (let i = 0; i < strokes; i++) {
      const t = rand();
      const y = horizon + (h - horizon) * t * t;
      const half = sunR * (0.6 + t * 3) * (0.5 + rand());
      const x = sunX + (rand() - 0.5) * sunR * (1 + t * 4);
      parts.push(
        `<rect x="${f(x - half)}" y="${f(y)}" width="${f(half * 2)}" height="${f(Math.max(1, h * 0.004 * (1 + t * 2)))}" fill="${p.sun}" opacity="${(0.35 + rand() * 0.4).toFixed(2)}"/>`,
      );
    }
    // A headland on one side.
    const left = rand() < 0.5;
    const hw = w * (0.25 + rand() * 0.25);
    const hx = left ? 0 : w - hw;
    parts.push(
      `<path d="M${f(hx)},${f(horizon + 1)} Q${f(hx + hw / 2)},${f(horizon - h * (0.04 + rand() * 0.06))} ${f(hx + hw)},${f(horizon + 1)} Z" fill="${p.land[2]}"/>`,
    );
  } else if (kind === 'lake') {
    parts.push(`<path d="${peaks(rand, w, horizon, h * 0.3, 3 + Math.floor(rand() * 3))}" fill="${p.land[0]}"/>`);
    parts.push(`<path d="${peaks(rand, w, horizon, h * 0.18, 4 + Math.floor(rand() * 3))}" fill="${p.land[1]}"/>`);
    parts.push(`<rect y="${f(horizon)}" width="${w}" height="${f(h - horizon)}" fill="url(#water)" opacity="0.95"/>`);
    parts.push(
      `<rect x="${f(sunX - sunR)}" y="${f(horizon + 2)}" width="${f(sunR * 2)}" height="${f((h - horizon) * 0.6)}" fill="${p.sun}" opacity="0.18"/>`,
    );
    parts.push(`<path d="${ridge(rand, w, h, h * 0.9, h * 0.03, 3)}" fill="${p.land[2]}"/>`);
  } else {
    // Hills (and, for a field, trees on the nearest one), further ones paler.
    parts.push(`<path d="${ridge(rand, w, h, horizon - h * 0.04, h * 0.05, 4)}" fill="${p.land[0]}" opacity="0.85"/>`);
    parts.push(`<path d="${ridge(rand, w, h, horizon + h * 0.06, h * 0.06, 3)}" fill="${p.land[1]}"/>`);
    const near = horizon + h * 0.2;
    parts.push(`<path d="${ridge(rand, w, h, near, h * 0.05, 2)}" fill="${p.land[2]}"/>`);
    if (kind === 'field') {
      const trees = 3 + Math.floor(rand() * 6);
      for (let i = 0; i < trees; i++) {
        const x = rand() * w;
        const r = Math.min(w, h) * (0.035 + rand() * 0.04);
        const y = near - r * 0.5 + (rand() - 0.5) * h * 0.04;
        parts.push(
          `<rect x="${f(x - r * 0.12)}" y="${f(y)}" width="${f(r * 0.24)}" height="${f(r * 1.4)}" fill="${p.land[2]}"/><circle cx="${f(x)}" cy="${f(y - r * 0.3)}" r="${f(r)}" fill="${p.land[1]}"/>`,
        );
      }
    }
  }
  parts.push(`<rect width="${w}" height="${h}" fill="url(#vignette)"/>`);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}"><defs>${defs.join('')}</defs>${parts.join('')}</svg>`;
}

/** A profile picture: a disc of colour with the account's initials, as many small businesses use. */
export function avatarSvg(key: string, name: string, size: number): string {
  const rand = randomFrom(`avatar:${key}`);
  const p = PALETTES[Math.floor(rand() * PALETTES.length)] as Palette;
  const initials =
    name
      .split(/[\s._-]+/)
      .filter(Boolean)
      .slice(0, 2)
      .map((w) => (Array.from(w)[0] ?? '').toUpperCase())
      .join('') || '?';
  const esc = initials.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size}">` +
    `<defs><linearGradient id="a" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="${p.skyHorizon}"/><stop offset="1" stop-color="${p.skyTop}"/></linearGradient></defs>` +
    `<rect width="${size}" height="${size}" fill="url(#a)"/>` +
    `<text x="50%" y="50%" dy="0.35em" text-anchor="middle" font-family="sans-serif" font-weight="bold" font-size="${Math.round(size * 0.38)}" fill="#ffffff">${esc}</text>` +
    `</svg>`
  );
}
