import { describe, expect, it } from 'vitest';
import { scheduleOffsetMs } from '../../jobs/schedules.ts';
import { HOUR } from '../../src/util/clock.ts';

describe('schedules spread over their interval', () => {
  it('10,000 accounts fall due evenly over the hour, each at the same moment on every worker', () => {
    const ids = Array.from({ length: 10_000 }, (_, i) => (17841400000000000n + BigInt(i + 1)).toString());
    const offsets = ids.map((id) => scheduleOffsetMs(id, HOUR));
    for (const o of offsets) {
      expect(o).toBeGreaterThanOrEqual(1);
      expect(o).toBeLessThan(HOUR);
    }
    // Stable: the same id, the same offset (workers and rebuilds agree).
    expect(scheduleOffsetMs(ids[0]!, HOUR)).toBe(offsets[0]);
    // Even: every 6-minute slice of the hour holds about a tenth of the accounts (no herd).
    const slices = new Array(10).fill(0) as number[];
    for (const o of offsets) slices[Math.floor(o / (6 * 60_000))]!++;
    for (const n of slices) {
      expect(n).toBeGreaterThan(850);
      expect(n).toBeLessThan(1150);
    }
    // The busiest minute holds nowhere near all of them (it was all of them before).
    const perMinute = new Map<number, number>();
    for (const o of offsets) perMinute.set(Math.floor(o / 60_000), (perMinute.get(Math.floor(o / 60_000)) ?? 0) + 1);
    expect(Math.max(...perMinute.values())).toBeLessThan(300);
  });
});
