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
  /** What the small business behind a demo account writes under it, hashtags included. */
  caption: string;
}

/** In the order the demo's grid shows them: neighbours differ in subject and colour. */
export const PHOTOS: readonly BundledPhoto[] = [
  {
    file: 'coffee.jpg',
    position: 'centre',
    caption: 'Flat white, still warm from the machine. Come and say hi ☕ #coffee #goodmorning #cafelife',
  },
  {
    file: 'autumn-hills.jpg',
    position: 'centre',
    caption: 'Autumn has reached the hills, and soup of the day is back on the menu 🍂 #autumn #seasonal #hills',
  },
  {
    file: 'dandelions.jpg',
    position: 'left',
    caption: 'Make a wish 🌼 Late sun in the meadow behind the shop. #dandelions #goldenhour #slowliving',
  },
  {
    file: 'estuary.jpg',
    position: 'centre',
    caption: "Low tide under the bridge on this morning's delivery run. #estuary #coast #deliveryday",
  },
  {
    file: 'fig.jpg',
    position: 'right',
    caption: 'Figs are in season: fig and almond tarts on the counter all week 🍰 #figs #seasonal #bakerylife',
  },
  {
    file: 'mountain-path.jpg',
    position: 'centre',
    caption:
      'Closed on Monday: we took the long path up to the ridge. Fresh bread again on Tuesday! #hiking #dayoff #mountains',
  },
  {
    file: 'dogs.jpg',
    position: 'top',
    caption: 'Our two shop assistants say hello 🐶 Dogs are always welcome inside. #shopdogs #dogfriendly #community',
  },
  {
    file: 'stream.jpg',
    position: 'centre',
    caption: 'Picnic spot of the week: the stream below the old mill. Take a loaf with you! #picnic #outdoors #weekend',
  },
  {
    file: 'brushes.jpg',
    position: 'left',
    caption: 'Repainting the shop front this week. Guess the new colour 🎨 #behindthescenes #smallbusiness',
  },
  {
    file: 'hill-sunset.jpg',
    position: 'centre',
    caption: 'Golden hour from the top of the hill 🌅 Thank you all for a busy week! #goldenhour #sunset #thankyou',
  },
  {
    file: 'table.jpg',
    position: 'bottom',
    caption: 'Bread, cheese and wine evening this Friday: a few seats left 🍷 #tasting #friday #local',
  },
  {
    file: 'dragonfly.jpg',
    position: 'centre',
    caption: 'A visitor in the garden behind the bakery this morning. #garden #nature #summer',
  },
  {
    file: 'nuthatch.jpg',
    position: 'centre',
    caption: 'Our most loyal regular, first at the bird feeder every morning 🐦 #birds #morning #neighbours',
  },
];

export const PHOTOS_DIR = new URL('./photos/', import.meta.url);

const bytes = new Map<string, Promise<Buffer>>();

/**
 * Which bundled photo a picture shows: three numbers per post in the order posts were added (a
 * carousel's slides take the next ones) plus the picture's revision. Thirteen neighbouring posts
 * in a grid, and the slides of a carousel, show different photos; a changed picture (a new rev)
 * shows another one.
 */
export function photoNumber(postSeq: number, slide = 0, rev = 0): number {
  return postSeq * 3 + slide + rev;
}

/** The photo a post's cover shows, whose caption a photo account's post carries unless given one. */
export function coverPhoto(postSeq: number): BundledPhoto {
  return bundledPhoto(photoNumber(postSeq)).photo;
}

/** The photo for picture number `n` (any integer: taken modulo the count), with its file's bytes (read once). */
export function bundledPhoto(n: number): { photo: BundledPhoto; readonly bytes: Promise<Buffer> } {
  const count = PHOTOS.length;
  const photo = PHOTOS[((n % count) + count) % count] as BundledPhoto;
  return {
    photo,
    get bytes() {
      return photoBytes(photo);
    },
  };
}

function photoBytes(photo: BundledPhoto): Promise<Buffer> {
  let read = bytes.get(photo.file);
  if (!read) {
    read = readFile(new URL(photo.file, PHOTOS_DIR));
    // A failed read is not kept: the next request tries again.
    read.catch(() => bytes.delete(photo.file));
    bytes.set(photo.file, read);
  }
  return read;
}
