/**
 * Every seed of the chaos soak that ever found a violation, with what it found. The short profile
 * (test/journeys/chaos-short.test.ts) runs the first on every change; a new finding adds its seed
 * here with the defect it showed, once that defect is fixed.
 */
export const REGRESSION_SEEDS: ReadonlyArray<{ seed: number; found: string }> = [];

/** The short profile's own seed (1 simulated day, 50 accounts). */
export const SHORT_PROFILE_SEED = 7;
