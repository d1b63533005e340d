import { readFile } from 'node:fs/promises';

/**
 * The photographs an account created with `photos: true` posts (the demo's accounts): freely
 * licensed pictures bundled in photos/ (authors, licences and sources in photos/CREDITS.md, made
 * by scripts/simulator-photos.ts), at most 1080 px on their longer side. images.ts crops one to
 * each post's size. Other accounts keep the generated scenes of scene.ts, which cost nothing to
 * ship and are what tests and benchmarks render by the thousand.
 */

export interface BundledPhoto {
  file: string;
  /** Which part to keep when the post's shape crops it (sharp's `position`). */
  position: 'centre' | 'left' | 'right' | 'top' | 'bottom';
}

/** In the order the demo's grid shows them: neighbours differ in subject and colour. */
export const PHOTOS: readonly BundledPhoto[] = [
  { file: 'coffee.jpg', position: 'centre' },
  { file: 'autumn-hills.jpg', position: 'centre' },
  { file: 'dandelions.jpg', position: 'left' },
  { file: 'estuary.jpg', position: 'centre' },
  { file: 'fig.jpg', position: 'right' },
  { file: 'mountain-path.jpg', position: 'centre' },
  { file: 'dogs.jpg', position: 'top' },
  { file: 'stream.jpg', position: 'centre' },
  { file: 'brushes.jpg', position: 'left' },
  { file: 'hill-sunset.jpg', position: 'centre' },
  { file: 'table.jpg', position: 'bottom' },
  { file: 'dragonfly.jpg', position: 'centre' },
  { file: 'nuthatch.jpg', position: 'centre' },
];

export const PHOTOS_DIR = new URL('./photos/', import.meta.url);

const bytes = new Map<string, Promise<Buffer>>();

/** The photo for picture number `n` (any integer: taken modulo the count), with its file's bytes (read once). */
export function bundledPhoto(n: number): { photo: BundledPhoto; bytes: Promise<Buffer> } {
  const count = PHOTOS.length;
  const photo = PHOTOS[((n % count) + count) % count] as BundledPhoto;
  let read = bytes.get(photo.file);
  if (!read) {
    read = readFile(new URL(photo.file, PHOTOS_DIR));
    // A failed read is not kept: the next request tries again.
    read.catch(() => bytes.delete(photo.file));
    bytes.set(photo.file, read);
  }
  return { photo, bytes: read };
}
