import { describe, expect, it } from 'vitest';
import {
  drawPost,
  FEED_MIX,
  geometricRatioForMean,
  percentile,
  postCounts,
  seededRandom,
  truncatedGeometricMean,
} from '../../bench/feeds.ts';

/**
 * The soak's realistic feeds (bench/feeds.ts): the post counts have the mean and the spread the
 * benchmark states (24 on average, 1 to 100), the mix of kinds has its shares, the same seed draws
 * the same feeds, and the lateness percentiles are nearest-rank.
 */
describe('bench feeds', () => {
  it('post counts: mean 24 within 1..100, most feeds small and a long tail, the same for the same seed', () => {
    const counts = postCounts(20_000, { mean: 24, seed: 3 });
    const mean = counts.reduce((a, b) => a + b, 0) / counts.length;
    expect(mean).toBeGreaterThan(23.3);
    expect(mean).toBeLessThan(24.7);
    expect(Math.min(...counts)).toBe(1);
    expect(Math.max(...counts)).toBeLessThanOrEqual(100);
    expect(Math.max(...counts)).toBeGreaterThan(80);
    const sorted = [...counts].sort((a, b) => a - b);
    expect(percentile(sorted, 50)).toBeLessThan(mean); // skewed: the median below the mean
    expect(postCounts(50, { mean: 24, seed: 3 })).toEqual(counts.slice(0, 50));
    expect(postCounts(50, { mean: 24, seed: 4 })).not.toEqual(counts.slice(0, 50));
  });

  it('the geometric ratio solves for the mean; an impossible mean is refused', () => {
    const q = geometricRatioForMean(24, 1, 100);
    expect(truncatedGeometricMean(q, 1, 100)).toBeCloseTo(24, 6);
    expect(() => geometricRatioForMean(60, 1, 100)).toThrow(/below 50.5/);
    expect(() => geometricRatioForMean(1, 1, 100)).toThrow(/above 1/);
  });

  it('the mix: carousels of 2-5 slides, videos and reels in their shares, the rest images', () => {
    const rnd = seededRandom(9);
    const n = 20_000;
    const kinds: Record<string, number> = {};
    const slides = new Set<number>();
    let slidesOutsideCarousels = 0;
    for (let i = 0; i < n; i++) {
      const p = drawPost(rnd);
      kinds[p.kind] = (kinds[p.kind] ?? 0) + 1;
      if (p.kind === 'carousel') slides.add(p.slides!.length);
      else if (p.slides) slidesOutsideCarousels++;
    }
    expect([...slides].sort()).toEqual([2, 3, 4, 5]);
    expect(slidesOutsideCarousels).toBe(0);
    expect(kinds.carousel! / n).toBeCloseTo(FEED_MIX.carousel, 1);
    expect(kinds.video! / n).toBeCloseTo(FEED_MIX.video, 1);
    expect(kinds.reel! / n).toBeCloseTo(FEED_MIX.reel, 1);
    expect(kinds.image! / n).toBeCloseTo(1 - FEED_MIX.carousel - FEED_MIX.video - FEED_MIX.reel, 1);
  });

  it('percentile: nearest rank, 0 for no values', () => {
    const v = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(v, 50)).toBe(50);
    expect(percentile(v, 99)).toBe(99);
    expect(percentile(v, 100)).toBe(100);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBe(0);
  });
});
