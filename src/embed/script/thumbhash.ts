/*! thumbHashToRGBA of the thumbhash package by Evan Wallace (MIT, github.com/evanw/thumbhash), in TypeScript. */
export function thumbHashToRGBA(hash: number[]): { w: number; h: number; rgba: Uint8ClampedArray } {
  const { PI, min, max, cos, round } = Math;
  const header24 = hash[0]! | (hash[1]! << 8) | (hash[2]! << 16);
  const header16 = hash[3]! | (hash[4]! << 8);
  const l_dc = (header24 & 63) / 63;
  const p_dc = ((header24 >> 6) & 63) / 31.5 - 1;
  const q_dc = ((header24 >> 12) & 63) / 31.5 - 1;
  const l_scale = ((header24 >> 18) & 31) / 31;
  const hasAlpha = header24 >> 23;
  const p_scale = ((header16 >> 3) & 63) / 63;
  const q_scale = ((header16 >> 9) & 63) / 63;
  const isLandscape = header16 >> 15;
  const lx = max(3, isLandscape ? (hasAlpha ? 5 : 7) : header16 & 7);
  const ly = max(3, isLandscape ? header16 & 7 : hasAlpha ? 5 : 7);
  const a_dc = hasAlpha ? (hash[5]! & 15) / 15 : 1;
  const a_scale = (hash[5]! >> 4) / 15;
  const ac_start = hasAlpha ? 6 : 5;
  let ac_index = 0;
  const decodeChannel = (nx: number, ny: number, scale: number): number[] => {
    const ac = [];
    for (let cy = 0; cy < ny; cy++)
      for (let cx = cy ? 0 : 1; cx * ny < nx * (ny - cy); cx++) {
        ac.push((((hash[ac_start + (ac_index >> 1)]! >> ((ac_index & 1) << 2)) & 15) / 7.5 - 1) * scale);
        ac_index++;
      }
    return ac;
  };
  const l_ac = decodeChannel(lx, ly, l_scale);
  const p_ac = decodeChannel(3, 3, p_scale * 1.25);
  const q_ac = decodeChannel(3, 3, q_scale * 1.25);
  const a_ac = hasAlpha ? decodeChannel(5, 5, a_scale) : [];
  const ratio = thumbHashRatio(hash);
  const w = round(ratio > 1 ? 32 : 32 * ratio);
  const h = round(ratio > 1 ? 32 / ratio : 32);
  const rgba = new Uint8ClampedArray(w * h * 4);
  const fx: number[] = [];
  const fy: number[] = [];
  for (let y = 0, i = 0; y < h; y++) {
    for (let x = 0; x < w; x++, i += 4) {
      let l = l_dc;
      let p = p_dc;
      let q = q_dc;
      let a = a_dc;
      let cx, cy, j, n, fy2;
      for (cx = 0, n = max(lx, hasAlpha ? 5 : 3); cx < n; cx++) fx[cx] = cos((PI / w) * (x + 0.5) * cx);
      for (cy = 0, n = max(ly, hasAlpha ? 5 : 3); cy < n; cy++) fy[cy] = cos((PI / h) * (y + 0.5) * cy);
      for (cy = 0, j = 0; cy < ly; cy++)
        for (cx = cy ? 0 : 1, fy2 = fy[cy]! * 2; cx * ly < lx * (ly - cy); cx++, j++) l += l_ac[j]! * fx[cx]! * fy2;
      for (cy = 0, j = 0; cy < 3; cy++)
        for (cx = cy ? 0 : 1, fy2 = fy[cy]! * 2; cx < 3 - cy; cx++, j++) {
          const f = fx[cx]! * fy2;
          p += p_ac[j]! * f;
          q += q_ac[j]! * f;
        }
      if (hasAlpha)
        for (cy = 0, j = 0; cy < 5; cy++)
          for (cx = cy ? 0 : 1, fy2 = fy[cy]! * 2; cx < 5 - cy; cx++, j++) a += a_ac[j]! * fx[cx]! * fy2;
      const b = l - (2 / 3) * p;
      const r = (3 * l - b + q) / 2;
      const g = r - q;
      rgba[i] = max(0, 255 * min(1, r));
      rgba[i + 1] = max(0, 255 * min(1, g));
      rgba[i + 2] = max(0, 255 * min(1, b));
      rgba[i + 3] = max(0, 255 * min(1, a));
    }
  }
  return { w, h, rgba };
}

function thumbHashRatio(hash: number[]): number {
  const header = hash[3]!;
  const hasAlpha = hash[2]! & 0x80;
  const isLandscape = hash[4]! & 0x80;
  const lx = isLandscape ? (hasAlpha ? 5 : 7) : header & 7;
  const ly = isLandscape ? header & 7 : hasAlpha ? 5 : 7;
  return lx / ly;
}

/** The ThumbHash drawn as a PNG data: URL (a page's `img-src data:` allows it), or null. */
export function thumbHashDataUrl(hash: number[]): string | null {
  try {
    const img = thumbHashToRGBA(hash);
    const canvas = document.createElement('canvas');
    canvas.width = img.w;
    canvas.height = img.h;
    const ctx = canvas.getContext('2d');
    if (!ctx) return null;
    const data = ctx.createImageData(img.w, img.h);
    data.data.set(img.rgba);
    ctx.putImageData(data, 0, 0);
    return canvas.toDataURL();
  } catch {
    return null;
  }
}
