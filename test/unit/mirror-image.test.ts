import { createHash } from 'node:crypto';
import zlib from 'node:zlib';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { ImageTooLargeError, InvalidImageError } from '../../src/mirror/errors.ts';
import { processImage } from '../../src/mirror/image.ts';

const solid = (width: number, height: number) => sharp({ create: { width, height, channels: 3, background: { r: 200, g: 40, b: 90 } } });

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
    const gif = await sharp({ create: { width: 50, height: 40, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } }).gif().toBuffer();
    expect((await processImage(png, opts)).original).toMatchObject({ contentType: 'image/png', ext: 'png', width: 50, height: 40 });
    expect((await processImage(webp, opts)).original).toMatchObject({ contentType: 'image/webp', ext: 'webp' });
    const fromTiff = await processImage(tiff, opts);
    expect(fromTiff.original).toMatchObject({ contentType: 'image/jpeg', ext: 'jpg', width: 50, height: 40 });
    expect((await sharp(fromTiff.original.buffer).metadata()).format).toBe('jpeg');
    const fromGif = await processImage(gif, opts);
    expect(fromGif.original).toMatchObject({ contentType: 'image/png', ext: 'png', width: 50, height: 40 });
    expect((await sharp(fromGif.original.buffer).metadata()).format).toBe('png');
  });

  it('refuses bytes that are not an image', async () => {
    await expect(processImage(Buffer.from('<html>URL signature expired</html>'), opts)).rejects.toBeInstanceOf(InvalidImageError);
    await expect(processImage(Buffer.alloc(0), opts)).rejects.toBeInstanceOf(InvalidImageError);
  });

  it('refuses SVG (script could ride along when served from our origin)', async () => {
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>');
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
    await expect(processImage(jpeg, { maxPixels: 9_999, variantWidths: [] })).rejects.toBeInstanceOf(ImageTooLargeError);
    await expect(processImage(jpeg, { maxPixels: 10_000, variantWidths: [] })).resolves.toBeTruthy();
  });

  it('refuses a truncated image', async () => {
    const jpeg = await solid(300, 300).png().toBuffer();
    await expect(processImage(jpeg.subarray(0, Math.floor(jpeg.length / 2)), opts)).rejects.toBeInstanceOf(InvalidImageError);
  });
});
