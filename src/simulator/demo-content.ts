import { HOUR } from '../util/clock.ts';
import type { PostSpec, SimAccountOptions } from './types.ts';

/**
 * What the demo's accounts post: captions a small business writes (with hashtags), photos,
 * carousels and reels, in an order that looks like a real profile. The demo creates its accounts
 * with `photos: true`, so their pictures are the bundled photographs of photos.ts (credited in
 * photos/CREDITS.md), a different one for each neighbouring post and slide. Tests that need every
 * odd shape of the platform use the deterministic mix of state.ts instead (and generated scenes).
 */

const CAPTIONS: readonly string[] = [
  'First batch of sourdough out of the oven this morning 🍞 #sourdough #bakery #morning',
  'Sunrise over the harbour on the way to work. Worth the early start. #sunrise #harbour #goodmorning',
  'Our weekend at the coast, in three pictures ☀️ #weekend #coast #summer',
  'Behind the scenes: shaping croissants, one fold at a time 🥐 #behindthescenes #croissant',
  'The hills after the rain. We bring the picnic, you bring the blanket. #hiking #outdoors',
  'New on the counter: cardamom buns. Come early, they go fast! #cardamom #newrecipe #bakerylife',
  'Golden hour by the sea 🌅 #goldenhour #seaside #nofilter',
  'Thank you for 1,000 followers! A small treat for you at the shop this Saturday 🎉 #thankyou #community',
  'Market day: flowers, bread and too much coffee. #market #saturday #local',
  'A quiet evening walk along the lake. #lake #evening #slowliving',
  'Flour, water, salt, time. That is the whole secret. #realbread #slowfood',
  'Fresh out of the oven, straight to your table 🍰 #cake #homemade #sweet',
];

/** A caption with hashtags, chosen by `seed`. */
export function captionFor(seed: number): string {
  return CAPTIONS[Math.abs(seed) % CAPTIONS.length] as string;
}

/** The kinds of the demo account's posts, newest first: photos, a carousel, a reel, a video. */
const DEMO_SHAPES: ReadonlyArray<Pick<PostSpec, 'kind' | 'slides' | 'width' | 'height'>> = [
  { kind: 'image', width: 1080, height: 1350 },
  { kind: 'carousel', slides: ['image', 'image', 'image'], width: 1080, height: 1080 },
  { kind: 'image', width: 1080, height: 1080 },
  { kind: 'reel', width: 1080, height: 1920 },
  { kind: 'image', width: 1080, height: 1350 },
  { kind: 'image', width: 1080, height: 810 },
  { kind: 'carousel', slides: ['image', 'video', 'image'], width: 1080, height: 1350 },
  { kind: 'image', width: 1080, height: 1080 },
  { kind: 'video', width: 1080, height: 1080 },
  { kind: 'image', width: 1080, height: 1350 },
];

/**
 * `count` posts for a demo account, newest first, one every 19 hours back from `now`: at least
 * one carousel and one reel once there are four posts.
 */
export function demoPosts(count: number, now: number, offset = 0): PostSpec[] {
  return Array.from({ length: count }, (_, i) => {
    const shape = DEMO_SHAPES[(i + offset) % DEMO_SHAPES.length] as PostSpec;
    // No caption: the demo's accounts post photographs, and each post says what its photo shows
    // (photos.ts; state.ts addPost).
    return { ...shape, timestamp: new Date(now - (i + 1) * 19 * HOUR) };
  });
}

/** Other accounts the demo's consent page offers (an owner may manage several). */
export const DEMO_OTHER_ACCOUNTS: ReadonlyArray<Required<Pick<SimAccountOptions, 'username' | 'name'>>> = [
  { username: 'harbour.cafe', name: 'Harbour Café' },
  { username: 'hillside.studio', name: 'Hillside Photo Studio' },
  { username: 'lakeview.flowers', name: 'Lakeview Flowers' },
];

/**
 * The owner the demo records for @demo.bakery (R-OWN-10), at a reserved example domain: with
 * OWNER_ALERTS on, its alerts and reconnect links land in the demo's outbox, never in a real inbox.
 */
export const DEMO_OWNER = { email: 'owner@demo-bakery.example', name: 'Dana Baker', language: null } as const;

/** A post of the given type as `simulator post add` makes it (a generated caption unless given). */
export function postSpecFor(
  type: 'image' | 'carousel' | 'video' | 'reel',
  caption: string | null | undefined,
  seed: number,
  photos = false,
): PostSpec {
  // A photo account's post without a caption gets its photo's (state.ts addPost).
  const text = caption === undefined && !photos ? captionFor(seed) : caption;
  if (type === 'carousel') return { kind: 'carousel', slides: ['image', 'image', 'image'], caption: text };
  if (type === 'video' || type === 'reel') return { kind: type, caption: text, width: 1080, height: 1920 };
  return { kind: 'image', caption: text, width: 1080, height: 1350 };
}
