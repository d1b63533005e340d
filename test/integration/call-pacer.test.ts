import type { Cluster, Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { AccountCallPacer } from '../../jobs/call-pacer.ts';
import { redisClient } from '../../jobs/queues.ts';
import { HOUR, ManualClock, MINUTE } from '../../src/util/clock.ts';
import { redisForTest } from '../support/services.ts';

/**
 * R-OWN-1 on the real Redis: the rolling hour is one log for every worker, and it survives a
 * clock hour's turn (a fixed window would not).
 */
const redis = redisForTest('pacer');
const connections: Array<Redis | Cluster> = [];
const connect = () => {
  const c = redisClient(redis);
  connections.push(c);
  return c;
};

afterAll(async () => {
  const c = connect();
  const keys = await c.keys(`${redis.prefix}:*`);
  if (keys.length) await c.del(...keys);
  for (const x of connections) await x.quit();
});

describe('AccountCallPacer on Redis', () => {
  it('two workers share one rolling hour per account, and the wait is exact', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 10, 59, 30));
    const a = new AccountCallPacer({ callsPerHour: 3, prefix: redis.prefix, redis: connect, clock });
    const b = new AccountCallPacer({ callsPerHour: 3, prefix: redis.prefix, redis: connect, clock });
    expect(await a.take('acc1')).toBe(0);
    clock.advance(10_000);
    expect(await b.take('acc1')).toBe(0);
    expect(await a.take('acc1')).toBe(0);
    clock.advance(60_000); // 11:00:40, past the clock hour
    // Worker b is refused what worker a used: the oldest call (10:59:30) leaves at 11:59:30.
    expect(await b.take('acc1')).toBe(HOUR - 70_000);
    expect(await b.take('acc2')).toBe(0);
    clock.advance(HOUR - 70_000);
    expect(await a.take('acc1')).toBe(0);
    expect(await b.take('acc1')).toBe(10_000); // the next oldest leaves 10 s later
  });

  it('keeps nothing for an account after its hour: the log expires', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
    const pacer = new AccountCallPacer({
      callsPerHour: 5,
      prefix: redis.prefix,
      redis: connect,
      windowMs: 10 * MINUTE,
      clock,
    });
    expect(await pacer.take('acc3')).toBe(0);
    const ttl = await connect().pttl(`${redis.prefix}:platform-pace:acc3`);
    expect(ttl).toBeGreaterThan(9 * MINUTE);
    expect(ttl).toBeLessThanOrEqual(10 * MINUTE);
  });

  it("an app's hold ends by the hold clock (the platform's time), not by the key's time in Redis, and only for that app (R-OWN-1)", async () => {
    const clock = new ManualClock(new Date('2026-07-01T10:00:00Z'));
    const a = new AccountCallPacer({ callsPerHour: 3, prefix: redis.prefix, redis: connect, holdClock: clock });
    const b = new AccountCallPacer({ callsPerHour: 3, prefix: redis.prefix, redis: connect, holdClock: clock });
    await a.holdApp('client-a', HOUR);
    // Shared by every worker, for that app alone; a shorter hold never shortens it.
    expect(await b.appHeldFor('client-a')).toBe(HOUR);
    expect(await b.appHeldFor('client-b')).toBe(0);
    await b.holdApp('client-a', MINUTE);
    expect(await a.appHeldFor('client-a')).toBe(HOUR);
    // The platform's hour passes on the clock (a compressed run moves it in seconds): the hold is
    // over although Redis still keeps the key until its real-time clean-up.
    clock.advance(HOUR - MINUTE);
    expect(await a.appHeldFor('client-a')).toBe(MINUTE);
    clock.advance(MINUTE);
    expect(await a.appHeldFor('client-a')).toBe(0);
    expect(await connect().pttl(`${redis.prefix}:platform-app-hold:client-a`)).toBeGreaterThan(0);
  });
});
