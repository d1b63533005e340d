import { describe, expect, it } from 'vitest';
import { ManualClock, MINUTE } from '../../src/util/clock.ts';
import { slowdownMs } from '../../src/platform/pacing.ts';
import { AccountCallPacer } from '../../jobs/call-pacer.ts';
import { parseUsage } from '../../src/platform/rate-limit.ts';
import { UsageMeter } from '../../src/simulator/usage.ts';

describe('R-OWN-1: pacing and slow-down', () => {
  it('an account gets its calls per hour, then a wait until the oldest leaves the hour; another account is unaffected', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 10));
    const pacer = new AccountCallPacer({ callsPerHour: 3, prefix: 'unit', clock });
    expect([await pacer.take('a'), await pacer.take('a'), await pacer.take('a')]).toEqual([0, 0, 0]);
    expect(await pacer.take('a')).toBe(3_600_000);
    expect(await pacer.take('b')).toBe(0);
  });

  it('the hour rolls: calls at the end of one clock hour still count at the start of the next', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 10, 59));
    const pacer = new AccountCallPacer({ callsPerHour: 3, prefix: 'unit', clock });
    for (let i = 0; i < 3; i++) expect(await pacer.take('a')).toBe(0);
    clock.advance(2 * MINUTE); // 11:01: a fixed window would have reset at 11:00
    expect(await pacer.take('a')).toBe(58 * MINUTE);
    clock.advance(58 * MINUTE); // 11:59: the 10:59 calls have left the hour
    expect([await pacer.take('a'), await pacer.take('a'), await pacer.take('a'), await pacer.take('a')]).toEqual([
      0,
      0,
      0,
      60 * MINUTE,
    ]);
  });

  it('slows down only past the threshold, more the closer usage is to 100%', () => {
    expect(slowdownMs(79, 30_000)).toBe(0);
    expect(slowdownMs(80, 30_000)).toBeGreaterThan(0);
    expect(slowdownMs(90, 30_000)).toBe(15_000);
    expect(slowdownMs(100, 30_000)).toBe(30_000);
    expect(slowdownMs(150, 30_000)).toBe(30_000);
    expect(slowdownMs(95, 0)).toBe(0);
  });

  it('the app share of usage is X-App-Usage alone; one busy account does not make the app look busy', () => {
    const h = new Headers({
      'x-app-usage': '{"call_count":12}',
      'x-business-use-case-usage': '{"1":[{"call_count":95}]}',
    });
    const u = parseUsage(h, new Date())!;
    expect(u.appPercent).toBe(12);
    expect(u.maxPercent).toBe(95);
  });

  it('the simulator throttles a user past its calls (17) and the app past its own (4), with the time to regain access', () => {
    let now = 0;
    const m = new UsageMeter(() => now, { callsPerUserHour: 2, appCallsPerHour: 3, windowMs: 60_000 });
    m.count('u1');
    now = 10_000;
    m.count('u1');
    expect(m.check('u1')).toEqual({ code: 17, regainMinutes: 50_000 / 60_000 });
    expect(m.check('u2')).toBeUndefined();
    m.count('u2');
    expect(m.check('u3')?.code).toBe(4);
    expect(JSON.parse(m.headers('u2')['x-app-usage']!).call_count).toBe(100);
    now = 60_001; // the first call left the window
    expect(m.check('u1')).toBeUndefined();
  });
});
