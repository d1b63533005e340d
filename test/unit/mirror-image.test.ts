import { createHash } from 'node:crypto';
import zlib from 'node:zlib';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { ImageTooLargeError, InvalidImageError } from '../../src/mirror/errors.ts';
import { thumbHashToAverageRGBA, thumbHashToApproximateAspectRatio } from 'thumbhash';
import { processImage, variantLadder } from '../../src/mirror/image.ts';
import { loadConfig } from '../../src/config.ts';

const solid = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: { r: 200, g: 40, b: 90 } } });

/** A PNG whose header declares width x height, made by patching a tiny real PNG's IHDR (no pixels behind it). */
async function pngDeclaring(width: number, height: number): Promise<Buffer> {
  const png = Buffer.from(await solid(1, 1).png().toBuffer());
  // signature(8) | length(4) 'IHDR'(4) width(4) height(4) ... crc over type+data (17 bytes)
  png.writeUInt32BE(width, 16);
  png.writeUInt32BE(height, 20);
  png.writeUInt32BE(zlib.crc32(png.subarray(12, 29)) >>> 0, 29);
  return png;
}

const opts = { maxPixels: 50_000_000, variantWidths: [320, 640, 1080] };

describe('processImage', () => {
  it('R-CNV-11: measures a JPEG, keeps it byte for byte and makes WebP variants without enlargement', async () => {
    const jpeg = await solid(800, 1000).jpeg().toBuffer();
    const out = await processImage(jpeg, opts);
    expect(out.original.buffer.equals(jpeg)).toBe(true);
    expect(out.original).toMatchObject({ contentType: 'image/jpeg', ext: 'jpg', width: 800, height: 1000 });
    expect(out.original.sha256).toBe(createHash('sha256').update(jpeg).digest('hex'));
    // 1080 >= 800: skipped (no enlargement).
    expect(out.variants.map((v) => [v.width, v.height])).toEqual([
      [320, 400],
      [640, 800],
    ]);
    for (const v of out.variants) {
      const m = await sharp(v.buffer).metadata();
      expect(m.format).toBe('webp');
      expect([m.width, m.height]).toEqual([v.width, v.height]);
      expect(v.contentType).toBe('image/webp');
    }
  });

  it('R-CNV-11: width and height are measured after EXIF orientation', async () => {
    // Stored 600x400, orientation 6 (rotate 90°): displayed 400x600.
    const jpeg = await solid(600, 400).jpeg().withMetadata({ orientation: 6 }).toBuffer();
    const out = await processImage(jpeg, { maxPixels: 1e7, variantWidths: [200] });
    expect([out.original.width, out.original.height]).toEqual([400, 600]);
    expect([out.variants[0]?.width, out.variants[0]?.height]).toEqual([200, 300]);
  });

  it('keeps PNG and WebP originals; re-encodes TIFF to JPEG and transparent GIF to PNG', async () => {
    const png = await solid(50, 40).png().toBuffer();
    const webp = await solid(50, 40).webp().toBuffer();
    const tiff = await solid(50, 40).tiff().toBuffer();
    const gif = await sharp({
      create: { width: 50, height: 40, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } },
    })
      .gif()
      .toBuffer();
    expect((await processImage(png, opts)).original).toMatchObject({
      contentType: 'image/png',
      ext: 'png',
      width: 50,
      height: 40,
    });
    expect((await processImage(webp, opts)).original).toMatchObject({ contentType: 'image/webp', ext: 'webp' });
    const fromTiff = await processImage(tiff, opts);
    expect(fromTiff.original).toMatchObject({ contentType: 'image/jpeg', ext: 'jpg', width: 50, height: 40 });
    expect((await sharp(fromTiff.original.buffer).metadata()).format).toBe('jpeg');
    const fromGif = await processImage(gif, opts);
    expect(fromGif.original).toMatchObject({ contentType: 'image/png', ext: 'png', width: 50, height: 40 });
    expect((await sharp(fromGif.original.buffer).metadata()).format).toBe('png');
  });

  it('refuses bytes that are not an image', async () => {
    await expect(processImage(Buffer.from('<html>URL signature expired</html>'), opts)).rejects.toBeInstanceOf(
      InvalidImageError,
    );
    await expect(processImage(Buffer.alloc(0), opts)).rejects.toBeInstanceOf(InvalidImageError);
  });

  it('refuses SVG (script could ride along when served from our origin)', async () => {
    const svg = Buffer.from(
      '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>',
    );
    await expect(processImage(svg, opts)).rejects.toThrow(/unsupported image format svg/);
  });

  it('refuses a decompression bomb from its header, before decoding', async () => {
    const bomb = await pngDeclaring(20000, 20000);
    expect(bomb.length).toBeLessThan(200);
    const meta = await sharp(bomb, { limitInputPixels: false }).metadata();
    expect([meta.width, meta.height]).toEqual([20000, 20000]);
    const err = await processImage(bomb, opts).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImageTooLargeError);
    expect((err as ImageTooLargeError).pixels).toBe(400_000_000);
  });

  it('refuses a real image above maxPixels', async () => {
    const jpeg = await solid(100, 100).jpeg().toBuffer();
    await expect(processImage(jpeg, { maxPixels: 9_999, variantWidths: [] })).rejects.toBeInstanceOf(
      ImageTooLargeError,
    );
    await expect(processImage(jpeg, { maxPixels: 10_000, variantWidths: [] })).resolves.toBeTruthy();
  });

  it('refuses a truncated image', async () => {
    const jpeg = await solid(300, 300).png().toBuffer();
    await expect(processImage(jpeg.subarray(0, Math.floor(jpeg.length / 2)), opts)).rejects.toBeInstanceOf(
      InvalidImageError,
    );
  });

  it('the default ladder steps about 1.5x from 160 px to the original, never upscaled, none within 15% of it', () => {
    const ladder = loadConfig({}).MEDIA_VARIANT_WIDTHS;
    for (let i = 1; i < ladder.length; i++) expect(ladder[i]! / ladder[i - 1]!).toBeCloseTo(1.5, 1);
    expect(ladder[0]).toBe(160);
    expect(variantLadder(1080, ladder)).toEqual([160, 240, 360, 540, 810]);
    expect(variantLadder(1440, ladder)).toEqual([160, 240, 360, 540, 810, 1215]);
    // 1215 is within 15% of 1300: the original serves that step.
    expect(variantLadder(1300, ladder)).toEqual([160, 240, 360, 540, 810]);
    expect(variantLadder(150, ladder)).toEqual([]);
  });

  it('a dominant colour and a ThumbHash from the same decode, matching the image', async () => {
    const jpeg = await solid(800, 1000).jpeg().toBuffer();
    const { placeholder } = await processImage(jpeg, opts);
    // solid() is rgb(200, 40, 90); JPEG and the histogram bins of stats() move it a little.
    const [r, g, b] = [1, 3, 5].map((i) => parseInt(placeholder.color.slice(i, i + 2), 16));
    expect(placeholder.color).toMatch(/^#[0-9a-f]{6}$/);
    expect(Math.abs(r! - 200) + Math.abs(g! - 40) + Math.abs(b! - 90)).toBeLessThan(40);
    const hash = Buffer.from(placeholder.thumbhash, 'base64');
    expect(hash.length).toBeLessThan(40);
    const avg = thumbHashToAverageRGBA(hash);
    expect(Math.abs(avg.r * 255 - 200)).toBeLessThan(20);
    // Portrait, as the image (0.8): ThumbHash keeps the aspect ratio approximately.
    expect(thumbHashToApproximateAspectRatio(hash)).toBeGreaterThan(0.7);
    expect(thumbHashToApproximateAspectRatio(hash)).toBeLessThan(0.95);
  });

  it('a greyscale or transparent image gets a placeholder too', async () => {
    const grey = await sharp({
      create: { width: 300, height: 200, channels: 3, background: { r: 128, g: 128, b: 128 } },
    })
      .toColourspace('b-w')
      .jpeg()
      .toBuffer();
    expect((await sharp(grey).metadata()).channels).toBe(1);
    const g = await processImage(grey, { ...opts, variantWidths: [160] });
    expect(g.placeholder.color).toMatch(/^#[0-9a-f]{6}$/);
    expect(g.variants.map((v) => v.width)).toEqual([160]);
    const clear = await sharp({
      create: { width: 200, height: 200, channels: 4, background: { r: 10, g: 200, b: 10, alpha: 0.5 } },
    })
      .png()
      .toBuffer();
    expect((await processImage(clear, { ...opts, variantWidths: [160] })).placeholder.thumbhash.length).toBeGreaterThan(
      10,
    );
  });

  it('a 16-bit PNG gets 8-bit variants and a placeholder of its colour', async () => {
    const deep = await sharp({
      create: { width: 400, height: 300, channels: 3, background: { r: 20, g: 120, b: 220 } },
    })
      .png()
      .toColourspace('rgb16')
      .toBuffer();
    expect((await sharp(deep).metadata()).depth).toBe('ushort');
    const out = await processImage(deep, { ...opts, variantWidths: [160] });
    expect(out.variants.map((v) => v.width)).toEqual([160]);
    const [r, g, b] = [1, 3, 5].map((i) => parseInt(out.placeholder.color.slice(i, i + 2), 16));
    expect(Math.abs(r! - 20) + Math.abs(g! - 120) + Math.abs(b! - 220)).toBeLessThan(30);
  });

  it('MEDIA_VARIANT_FORMATS webp,avif encodes every width in both', async () => {
    const jpeg = await solid(600, 600).jpeg().toBuffer();
    const out = await processImage(jpeg, { maxPixels: 1e7, variantWidths: [160, 240], formats: ['webp', 'avif'] });
    expect(out.variants.map((v) => [v.width, v.contentType, v.ext])).toEqual([
      [160, 'image/webp', 'webp'],
      [160, 'image/avif', 'avif'],
      [240, 'image/webp', 'webp'],
      [240, 'image/avif', 'avif'],
    ]);
    for (const v of out.variants)
      expect((await sharp(v.buffer).metadata()).format).toBe(v.ext === 'avif' ? 'heif' : 'webp');
  });
});
