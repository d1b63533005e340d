import sharp, { type Sharp } from 'sharp';
import { bundledPhoto, PHOTOS } from '../../src/simulator/photos.ts';

/**
 * Which bundled photograph (src/simulator/photos/) a JPEG shows, as a person would tell: both
 * reduced to 16×16 (the photo cropped to the JPEG's shape first, as the simulator crops it), then
 * the mean absolute difference per channel value (0..255). A cropped and re-encoded photo is a few
 * units from its original; a generated scene, or another photo, is tens of units from every photo.
 */
export async function closestPhoto(jpeg: Buffer): Promise<{ file: string; diff: number }> {
  const { width, height } = await sharp(jpeg).metadata();
  const tiny = (img: Sharp) => img.resize(16, 16, { fit: 'fill' }).removeAlpha().raw().toBuffer();
  const seen = await tiny(sharp(jpeg));
  let best = { file: '', diff: Number.POSITIVE_INFINITY };
  for (let n = 0; n < PHOTOS.length; n++) {
    const { photo, bytes } = bundledPhoto(n);
    const small = await sharp(await bytes)
      .resize(128, Math.max(1, Math.round((128 * height) / width)), { fit: 'cover', position: photo.position })
      .toBuffer();
    const ref = await tiny(sharp(small));
    let sum = 0;
    for (let i = 0; i < seen.length; i++) sum += Math.abs(seen[i]! - ref[i]!);
    const diff = sum / seen.length;
    if (diff < best.diff) best = { file: photo.file, diff };
  }
  return best;
}
