/**
 * Every seed of the chaos soak that ever found a violation, with what it found. The short profile
 * (test/journeys/chaos-short.test.ts) runs the first of them on every change; a new finding adds
 * its seed here, with the defect it showed, once that defect is fixed (and a focused test of its
 * own guards the fix).
 */
export const REGRESSION_SEEDS: ReadonlyArray<{ seed: number; found: string }> = [
  {
    seed: 7,
    found:
      'an empty listing answered for two hours emptied a feed whose posts all still existed: the second empty listing an hour later "agreed" with the held removal (R-OWN-7 now also asks the profile\'s media_count)',
  },
];
