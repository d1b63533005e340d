import { describe, expect, it } from 'vitest';
import type { Job, Queue } from 'bullmq';
import { z } from 'zod';
import { JOBS, checkQueueCoverage, jobsOfQueue, queueProcessor } from '../../jobs/catalogue.ts';
import { dailyJobId, enqueue } from '../../jobs/enqueue.ts';
import { manualJobId } from '../../jobs/manual-ids.ts';
import { defineJob } from '../../jobs/definition.ts';
import { QUEUE, type QueueKey } from '../../jobs/queues.ts';
import { ManualClock } from '../../src/util/clock.ts';

/** A queue double that records what was added (the catalogue's own logic is under test, not BullMQ). */
function recordingQueue() {
  const added: Array<{ name: string; data: unknown; opts: unknown }> = [];
  const queue = {
    add: async (name: string, data: unknown, opts: unknown) => (
      added.push({ name, data, opts }),
      { id: '1', name, data } as unknown as Job
    ),
  };
  return { queue: queue as unknown as Queue, added };
}

describe('job catalogue', () => {
  it('has a definition for every queue and one definition per job name', () => {
    for (const key of Object.keys(QUEUE) as QueueKey[]) expect(jobsOfQueue(key).size, key).toBeGreaterThan(0);
    const names = Object.values(JOBS).map((d) => d.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it('refuses two definitions of one name on a queue', () => {
    const a = defineJob({
      name: 'x',
      queue: 'maintenance',
      payload: z.object({}),
      options: {},
      process: async () => 1,
    });
    expect(() => jobsOfQueue('maintenance', [a, a])).toThrow(/two job definitions named x/);
  });

  it("the worker's start-up check refuses a queue with job definitions that no worker runs", () => {
    const every = Object.keys(QUEUE) as QueueKey[];
    expect(() => checkQueueCoverage(every)).not.toThrow();
    const withoutPublish = every.filter((k) => k !== 'publishFeed');
    expect(() => checkQueueCoverage(withoutPublish)).toThrow(
      /queue publish-feed has jobs \(publish-feed\) but no worker runs it/,
    );
    // A process may leave a queue to others on purpose (no feed pipeline, no webhook queue).
    expect(() => checkQueueCoverage(withoutPublish, ['publishFeed'])).not.toThrow();
  });

  it("the worker's start-up check refuses a worker whose queue has no job definitions", () => {
    const every = Object.keys(QUEUE) as QueueKey[];
    const withoutWebhookJobs = Object.values(JOBS).filter((d) => d.queue !== 'webhooks');
    expect(() => checkQueueCoverage(every, [], withoutWebhookJobs)).toThrow(
      /a worker runs queue webhook-delivery, which has no job definitions/,
    );
    expect(() =>
      checkQueueCoverage(
        every.filter((k) => k !== 'webhooks'),
        [],
        withoutWebhookJobs,
      ),
    ).not.toThrow();
  });

  it("enqueues with the definition's options and a validated payload", async () => {
    const { queue, added } = recordingQueue();
    await enqueue({ feedSync: queue }, JOBS.feedSync, { accountId: '17841400000000001' }, { jobId: 'j1' });
    expect(added).toEqual([
      { name: 'feed-sync', data: { accountId: '17841400000000001' }, opts: { ...JOBS.feedSync.options, jobId: 'j1' } },
    ]);
    // The CLI, the dashboard and the scheduler share these options (they used to drift: 30 s vs 60 s).
    expect(JOBS.feedSync.options).toMatchObject({ attempts: 3, backoff: { type: 'exponential', delay: 60_000 } });
  });

  it('refuses a malformed payload before anything reaches Redis', async () => {
    const { queue, added } = recordingQueue();
    await expect(enqueue({ feedSync: queue }, JOBS.feedSync, { accountId: '../etc' })).rejects.toThrow(/account id/);
    await expect(enqueue({}, JOBS.feedSync, { accountId: '1' })).rejects.toThrow(/queue feed-sync is not open/);
    expect(added).toEqual([]);
  });

  it('fails a job of unknown name, or with a malformed payload, without retrying', async () => {
    const run = queueProcessor('maintenance', {});
    await expect(run({ name: 'nope', data: {} } as Job)).rejects.toMatchObject({ name: 'UnrecoverableError' });
    const runSync = queueProcessor('feedSync', {});
    await expect(runSync({ name: 'feed-sync', data: { accountId: 'a/b' } } as Job)).rejects.toThrow(
      /malformed payload: accountId/,
    );
  });

  it('names daily and manual jobs from the clock', () => {
    const clock = new ManualClock(new Date('2026-11-23T08:00:00Z'));
    expect(dailyJobId(JOBS.expirySweep, clock.now())).toBe('expiry-sweep-2026-11-23');
    expect(manualJobId('sync', '42', clock)).toMatch(/^manual-sync-42-1795420800000-[0-9a-f]{6}$/);
  });
});
