import { Queue, Worker, type Job } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { bullConnection } from '../../jobs/queues.ts';
import { isFirstAttempt } from '../../jobs/mirror-media.ts';
import { redisForTest } from '../support/services.ts';

/**
 * A copy's first attempt skips reading the manifest (src/mirror/copy.ts, MirrorJob.firstAttempt).
 * Whether an attempt is the first is read off BullMQ's own counters, so this runs a real job on
 * the real Redis: its first start is first, its retry is not.
 */
const redis = redisForTest('first-attempt');
const queue = new Queue('first-attempt', { connection: bullConnection(redis, false), prefix: redis.prefix });
let worker: Worker | undefined;

afterAll(async () => {
  await worker?.close();
  await queue.obliterate({ force: true }).catch(() => undefined);
  await queue.close();
});

describe('isFirstAttempt on real BullMQ jobs', () => {
  it('is true on the first start and false on the retry after a failure', async () => {
    const seen: boolean[] = [];
    const done = new Promise<void>((resolve) => {
      worker = new Worker(
        'first-attempt',
        async (job: Job) => {
          seen.push(isFirstAttempt(job));
          if (seen.length === 1) throw new Error('crash after the upload, before the bookkeeping');
          resolve();
        },
        { connection: bullConnection(redis, true), prefix: redis.prefix },
      );
    });
    await queue.add('copy', {}, { attempts: 2, backoff: { type: 'fixed', delay: 0 } });
    await done;
    expect(seen).toEqual([true, false]);
  });
});
