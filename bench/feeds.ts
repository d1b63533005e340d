/**
 * Realistic feeds for the soak (bench/scale.ts): how many posts each account has, what kind each
 * post is, and the small statistics the soak reports. Pure functions of a seeded random source, so
 * a run can be repeated and the unit test (test/unit/bench-feeds.test.ts) can check them fast.
 */

/** A small seeded PRNG (mulberry32): the same seed draws the same feeds. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Mean of the geometric distribution P(k) ∝ q^(k-1) truncated to [min, max]. */
export function truncatedGeometricMean(q: number, min: number, max: number): number {
  let total = 0;
  let weighted = 0;
  let w = 1;
  for (let k = min; k <= max; k++) {
    total += w;
    weighted += w * k;
    w *= q;
  }
  return weighted / total;
}

/**
 * The ratio q of a geometric distribution truncated to [min, max] whose mean is `mean` (bisection):
 * many small feeds and a long tail of large ones, as business accounts' recent posts are.
 */
export function geometricRatioForMean(mean: number, min: number, max: number): number {
  if (!(mean > min && mean < (min + max) / 2))
    throw new Error(`a truncated geometric mean must be above ${min} and below ${(min + max) / 2}`);
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (truncatedGeometricMean(mid, min, max) < mean) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** Posts per account: a geometric distribution truncated to [min, max] with the given mean. */
export function postCounts(n: number, opts: { mean: number; min?: number; max?: number; seed?: number }): number[] {
  const min = opts.min ?? 1;
  const max = opts.max ?? 100;
  const q = geometricRatioForMean(opts.mean, min, max);
  // Inverse CDF over the (at most 100) weights.
  const cdf: number[] = [];
  let total = 0;
  let w = 1;
  for (let k = min; k <= max; k++) {
    total += w;
    cdf.push(total);
    w *= q;
  }
  const rnd = seededRandom(opts.seed ?? 1);
  return Array.from({ length: n }, () => {
    const u = rnd() * total;
    let i = 0;
    while (cdf[i]! < u) i++;
    return min + i;
  });
}

export type FeedPostKind = 'image' | 'carousel' | 'video' | 'reel';
export type FeedSlideKind = 'image' | 'video';

/** The share of each kind of post (the rest are single images). */
export const FEED_MIX = { carousel: 0.2, video: 0.08, reel: 0.12 } as const;
/** Of a carousel's slides, the share that are videos; a carousel has 2 to 5 slides. */
export const CAROUSEL_VIDEO_SLIDES = 0.15;

export interface FeedPost {
  kind: FeedPostKind;
  slides?: FeedSlideKind[];
}

/** One post drawn from the mix. */
export function drawPost(rnd: () => number): FeedPost {
  const u = rnd();
  if (u < FEED_MIX.carousel) {
    const n = 2 + Math.floor(rnd() * 4);
    return {
      kind: 'carousel',
      slides: Array.from({ length: n }, () => (rnd() < CAROUSEL_VIDEO_SLIDES ? 'video' : 'image')),
    };
  }
  if (u < FEED_MIX.carousel + FEED_MIX.video) return { kind: 'video' };
  if (u < FEED_MIX.carousel + FEED_MIX.video + FEED_MIX.reel) return { kind: 'reel' };
  return { kind: 'image' };
}

/** The p-th percentile (nearest rank) of an ascending array; 0 when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}
