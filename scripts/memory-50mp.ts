/**
 * The worker's memory when it copies the largest images it accepts, as many at once as a
 * Kubernetes worker runs: MEDIA_MAX_PIXELS (50 megapixels) photos through the mirror's image
 * pipeline (src/mirror/image.ts: the original kept, the srcset ladder encoded, the placeholder),
 * MIRROR_CONCURRENCY (6) at a time, with the settings of the image (MALLOC_ARENA_MAX=2).
 *
 *   MALLOC_ARENA_MAX=2 node --import tsx scripts/memory-50mp.ts [--at-once 6] [--rounds 3] [--formats webp]
 *     [--input-format jpeg|png|webp]
 *
 * Prints the peak RSS (sampled every 50 ms, and the kernel's high-water mark) against the
 * manifest's 1 GiB limit. The input is a photo of the simulator's scaled to 8660 x 5773 (a JPEG
 * by default, as cameras and the platform serve them; a PNG or WebP is decoded whole, where a JPEG
 * shrinks on load) and measured in a child process, so the figures are the copies' alone.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { processImage } from '../src/mirror/image.ts';
import { PHOTOS_DIR } from '../src/simulator/photos.ts';

const arg = (name: string, fallback: string) => {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? fallback : process.argv[at + 1]!;
};
const atOnce = Number(arg('at-once', '6'));
const rounds = Number(arg('rounds', '3'));
const formats = arg('formats', 'webp').split(',') as Array<'webp' | 'avif'>;
const MB = 1024 * 1024;

const inputFormat = arg('input-format', 'jpeg') as 'jpeg' | 'png' | 'webp';
const inputFile = arg('input', '');
if (!inputFile) {
  // Made here, measured in a process of its own: making a 50 MP image is not the worker's work, and
  // the kernel's high-water mark below must be the copies' alone.
  const dir = mkdtempSync(join(tmpdir(), 'fm-50mp-'));
  const file = join(dir, `input.${inputFormat}`);
  const source = readFileSync(new URL('mountain-path.jpg', PHOTOS_DIR));
  // A photo scaled up is smoother than a camera's: sensor grain (an overlay of noise) brings the
  // file to a camera's size. The decode, which is what costs memory, depends on the pixels only.
  const [w, h] = [8660, 5773];
  const grain = Buffer.alloc(w * h * 4);
  const noise = randomBytes(w * h);
  for (let i = 0; i < w * h; i++) grain.fill(noise[i]!, i * 4, i * 4 + 3).writeUInt8(28, i * 4 + 3);
  await sharp(source)
    .resize(w, h, { fit: 'fill' })
    .composite([{ input: grain, raw: { width: w, height: h, channels: 4 }, blend: 'overlay' }])
    .toFormat(inputFormat, inputFormat === 'png' ? { compressionLevel: 6 } : { quality: 88 })
    .toFile(file);
  const child = spawnSync(process.execPath, [...process.execArgv, ...process.argv.slice(1), '--input', file], {
    stdio: 'inherit',
  });
  rmSync(dir, { recursive: true, force: true });
  process.exit(child.status ?? 1);
}
const input = readFileSync(inputFile);
const baseline = process.memoryUsage().rss;
let peak = baseline;
const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
const started = performance.now();
for (let r = 0; r < rounds; r++) {
  await Promise.all(
    Array.from({ length: atOnce }, () =>
      processImage(input, {
        maxPixels: 50_000_000,
        variantWidths: [160, 240, 360, 540, 810, 1215, 1820, 2730],
        formats,
      }),
    ),
  );
}
clearInterval(sampler);
peak = Math.max(peak, process.memoryUsage().rss);
const result = {
  input: { format: inputFormat, width: 8660, height: 5773, megapixels: 50.0, mb: +(input.length / MB).toFixed(1) },
  atOnce,
  images: atOnce * rounds,
  formats,
  mallocArenaMax: process.env.MALLOC_ARENA_MAX ?? '(glibc default)',
  seconds: +((performance.now() - started) / 1000).toFixed(1),
  baselineRssMb: Math.round(baseline / MB),
  peakRssMb: Math.round(peak / MB),
  maxRssMb: Math.round((process.resourceUsage().maxRSS * 1024) / MB),
  limitMb: 1024,
};
process.stdout.write(`${JSON.stringify(result)}\n`);
process.stderr.write(
  `${result.images} ${inputFormat} images of 50 MP, ${atOnce} at once: peak RSS ${result.peakRssMb} MB (kernel high-water ${result.maxRssMb} MB) of the 1024 MB limit, in ${result.seconds} s\n`,
);
