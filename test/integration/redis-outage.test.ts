import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQueue, QUEUE, redisOutage, type RedisSettings } from '../../jobs/queues.ts';
import { createLogger } from '../../src/util/logger.ts';
import { redisForTest } from '../support/services.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';
import { until } from '../support/wait.ts';

/**
 * ioredis error events go through the logger: one line when a Redis outage starts, one when it
 * ends, however many reconnection attempts fail in between (not a dump per retry).
 */
describe('Redis outage in the logs', () => {
  let proxy: TcpProxy;
  const redis = redisForTest('outage');

  beforeAll(async () => {
    const u = new URL(redis.url);
    proxy = await startTcpProxy({ host: u.hostname, port: Number(u.port || 6379) });
  });
  afterAll(async () => proxy?.close());

  it('one warning naming Redis and its address when it goes away, one line when it is back; the queue works again', async () => {
    const logs: Array<{ level: number; msg: string }> = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean))
          logs.push(JSON.parse(line) as { level: number; msg: string });
        done();
      },
    });
    const logger = createLogger({ level: 'info', destination: sink });
    const settings: RedisSettings = { url: `redis://:pw-not-logged@127.0.0.1:${proxy.port}`, prefix: redis.prefix };
    const queues = [
      createQueue(QUEUE.feedSync, settings, undefined, redisOutage(settings, logger)),
      createQueue(QUEUE.tokenRefresh, settings, undefined, redisOutage(settings, logger)),
    ];
    let rawErrors = 0;
    for (const q of queues) q.on('error', () => rawErrors++);
    try {
      await Promise.all(queues.map((q) => q.waitUntilReady()));
      await proxy.down();
      // Several failed reconnection attempts on both queues...
      await until(() => rawErrors >= 6, 'failed reconnection attempts');
      const down = logs.filter((l) => /Redis at 127\.0\.0\.1:\d+ is unreachable/.test(l.msg));
      // ...and one line about them.
      expect(down).toHaveLength(1);
      expect(down[0]!.level).toBe(40);
      expect(logs).toHaveLength(1);
      await proxy.up();
      await until(() => logs.some((l) => /is reachable again/.test(l.msg)), 'the line saying Redis is back');
      await queues[0]!.add(QUEUE.feedSync, { accountId: '1' });
      expect(logs.filter((l) => /is reachable again/.test(l.msg))).toHaveLength(1);
      expect(logs).toHaveLength(2);
      expect(JSON.stringify(logs)).not.toContain('pw-not-logged');
    } finally {
      await queues[0]!.obliterate({ force: true }).catch(() => undefined);
      await Promise.all(queues.map((q) => q.close()));
    }
  }, 60_000);
});
