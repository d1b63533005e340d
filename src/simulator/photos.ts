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
  /**
   * Words a caption about this picture uses (lower case, singular): a post given its own caption
   * shows the photo its caption talks about (photoForCaption), so the two never disagree.
   */
  subjects: readonly string[];
}

/** In the order the demo's grid shows them: neighbours differ in subject and colour. */
export const PHOTOS: readonly BundledPhoto[] = [
  {
    file: 'coffee.jpg',
    position: 'centre',
    caption: 'Espresso, still warm from the machine. Come and say hi ☕ #coffee #goodmorning #cafelife',
    subjects: ['espresso', 'coffee', 'cafe', 'café', 'cafelife', 'cup', 'saucer'],
  },
  {
    file: 'autumn-hills.jpg',
    position: 'centre',
    caption: 'Autumn has reached the hills, and soup of the day is back on the menu 🍂 #autumn #seasonal #hills',
    subjects: ['autumn', 'hill', 'meadow', 'wood', 'forest', 'fall'],
  },
  {
    file: 'dandelions.jpg',
    position: 'left',
    caption: 'Make a wish 🌼 Late sun in the meadow behind the shop. #dandelions #goldenhour #slowliving',
    subjects: ['dandelion', 'wish', 'seed', 'meadow'],
  },
  {
    file: 'estuary.jpg',
    position: 'centre',
    caption: "Low tide under the bridge on this morning's delivery run. #estuary #coast #deliveryday",
    subjects: ['estuary', 'tide', 'bridge', 'bay', 'coast', 'beach', 'sea'],
  },
  {
    file: 'fig.jpg',
    position: 'right',
    caption: 'Figs are in season: fig and almond tarts on the counter all week 🍰 #figs #seasonal #bakerylife',
    subjects: ['fig', 'tart', 'bowl'],
  },
  {
    file: 'mountain-path.jpg',
    position: 'centre',
    caption:
      'Closed on Monday: we took the long path up to the ridge. Fresh bread again on Tuesday! #hiking #dayoff #mountains',
    subjects: ['mountain', 'path', 'ridge', 'peak', 'pasture', 'hiking', 'hike'],
  },
  {
    file: 'dogs.jpg',
    position: 'top',
    caption: 'Our two shop assistants say hello 🐶 Dogs are always welcome inside. #shopdogs #dogfriendly #community',
    subjects: ['dog', 'spaniel', 'puppy', 'shopdog', 'dogfriendly', 'hut'],
  },
  {
    file: 'stream.jpg',
    position: 'centre',
    caption: 'Picnic spot of the week: the stream below the old mill. Take a loaf with you! #picnic #outdoors #weekend',
    subjects: ['stream', 'waterfall', 'river', 'brook', 'picnic', 'creek'],
  },
  {
    file: 'brushes.jpg',
    position: 'left',
    caption: 'Repainting the shop front this week. Guess the new colour 🎨 #behindthescenes #smallbusiness',
    subjects: ['paint', 'brush', 'repaint', 'repainting', 'painting', 'colour', 'color'],
  },
  {
    file: 'hill-sunset.jpg',
    position: 'centre',
    caption: 'Golden hour from the top of the hill 🌅 Thank you all for a busy week! #goldenhour #sunset #thankyou',
    subjects: ['sunset', 'goldenhour', 'summit', 'sun'],
  },
  {
    file: 'table.jpg',
    position: 'bottom',
    caption:
      'Wine night this Friday: a glass, a pallet table and live drums. A few seats left 🍷🥁 #wine #livemusic #friday',
    subjects: ['wine', 'drum', 'drums', 'music', 'livemusic', 'glass', 'bottle'],
  },
  {
    file: 'dragonfly.jpg',
    position: 'centre',
    caption: 'A visitor in the garden behind the bakery this morning. #garden #nature #summer',
    subjects: ['dragonfly', 'insect', 'garden', 'twig'],
  },
  {
    file: 'nuthatch.jpg',
    position: 'centre',
    caption: 'Our most loyal regular, up the old tree by the door every morning 🐦 #birds #nuthatch #neighbours',
    subjects: ['bird', 'nuthatch', 'birdwatching', 'tree', 'trunk'],
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

/**
 * The photo a caption talks about: the one whose subjects it names most (its words and hashtags,
 * in any case, a plural counted as its singular; ties go to the first in PHOTOS), or null when it
 * names none of them.
 */
export function photoForCaption(caption: string | null | undefined): number | null {
  if (!caption) return null;
  const words = new Set<string>();
  for (const w of caption.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    words.add(w);
    if (w.length > 3 && w.endsWith('s')) words.add(w.slice(0, -1));
  }
  let best: number | null = null;
  let hits = 0;
  PHOTOS.forEach((p, i) => {
    const n = p.subjects.filter((s) => words.has(s)).length;
    if (n > hits) [best, hits] = [i, n];
  });
  return best;
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
