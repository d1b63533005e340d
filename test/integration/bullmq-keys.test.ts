import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schedulerIntervals, schedulerJobId, schedulerJobsPresent, schedulerPages } from '../../jobs/bullmq-keys.ts';
import { createQueues, type Queues } from '../../jobs/queues.ts';
import { scheduleAccount, syncSchedulerId, unscheduleAccount, type ScheduleSettings } from '../../jobs/schedules.ts';
import { HOUR, MINUTE } from '../../src/util/clock.ts';
import { redisForTest } from '../support/services.ts';
import { dropQueues } from '../support/queues.ts';

/**
 * jobs/bullmq-keys.ts reads BullMQ's Redis keys directly (its scheduler set, each scheduler's
 * hash, a scheduler's next job id). Against real Redis, every read here must answer what BullMQ's
 * own API answers: a BullMQ upgrade that moves a key fails here.
 */
const settings: ScheduleSettings = { refreshCheckEveryMs: 6 * HOUR, syncEveryMs: HOUR };
/** A scheduler offset of its own per id, as the accounts' schedules have. */
const offsetOf = (id: string) => 1 + ((Number(id) * 7919) % (HOUR - 2));
let queues: Queues;

beforeAll(() => {
  queues = createQueues(redisForTest('bullmq-keys'));
});

afterAll(async () => {
  await dropQueues(queues);
});

describe("BullMQ's keys, read directly", () => {
  it("reads each scheduler's id, next slot and interval as BullMQ's own getJobSchedulers does, a page at a time", async () => {
    for (const id of ['2101', '2102', '2103']) await scheduleAccount(queues, id, settings);
    await scheduleAccount(queues, '2104', { ...settings, syncEveryMs: 5 * MINUTE });
    for (const q of [queues.feedSync, queues.tokenRefresh]) {
      const bullmq = (await q.getJobSchedulers(0, -1)).map((s) => [s.key, s.every, s.next]).sort();
      const ours: Array<[string, number | undefined, number]> = [];
      for await (const page of schedulerPages(q, 2)) {
        const every = new Map(
          (
            await schedulerIntervals(
              q,
              page.map((s) => s.key),
            )
          ).map((s) => [s.key, s.every]),
        );
        ours.push(...page.map((s) => [s.key, every.get(s.key), s.next] as [string, number | undefined, number]));
      }
      expect(ours.sort()).toEqual(bullmq);
      expect(bullmq.length).toBeGreaterThanOrEqual(4);
    }
    expect((await schedulerIntervals(queues.feedSync, [syncSchedulerId('2104')]))[0]?.every).toBe(5 * MINUTE);
    expect(await schedulerIntervals(queues.feedSync, ['feed-sync:no-such-account'])).toEqual([
      { key: 'feed-sync:no-such-account', every: undefined },
    ]);
    for (const id of ['2101', '2102', '2103', '2104']) await unscheduleAccount(queues, id);
  });

  it('sees every scheduler while jobs run and move their schedulers to their next slot mid-scan', async () => {
    // 300 schedulers: past Redis's small-set encoding (128), where a scan walks in pages. Paging by
    // rank loses one scheduler at each page boundary per run that moved behind it.
    const ids = Array.from({ length: 300 }, (_, i) => String(2200 + i));
    const q = queues.feedSync;
    for (const id of ids)
      await q.upsertJobScheduler(syncSchedulerId(id), { every: HOUR, offset: offsetOf(id) }, { name: 'feed-sync' });
    const client = await q.getBackend().client;
    const seen = new Set<string>();
    let pages = 0;
    for await (const page of schedulerPages(q, 50)) {
      for (const s of page) seen.add(s.key);
      // What a worker's runs do between two reads: each scheduler just read moves to its next slot.
      if (pages++ === 0)
        for (const s of page) await client.runCommand('zadd', [q.toKey('repeat'), s.next + HOUR, s.key]);
    }
    expect(pages).toBeGreaterThan(1);
    expect([...seen].filter((k) => ids.includes(k.slice('feed-sync:'.length))).length).toBe(300);
    for (const id of ids) await q.removeJobScheduler(syncSchedulerId(id));
  });

  it("names a scheduler's next job as BullMQ does, and tells whether that job is still in Redis", async () => {
    await scheduleAccount(queues, '2301', settings);
    await scheduleAccount(queues, '2302', settings);
    const q = queues.feedSync;
    const schedulers = await Promise.all(
      ['2301', '2302'].map(async (id) => {
        const s = await q.getJobScheduler(syncSchedulerId(id));
        return { key: s!.key, next: s!.next! };
      }),
    );
    // The id is BullMQ's: getJob finds the scheduler's next job under it.
    for (const s of schedulers) expect((await q.getJob(schedulerJobId(s.key, s.next)))?.name).toBe('feed-sync');
    expect(await schedulerJobsPresent(q, schedulers)).toEqual([true, true]);
    // 2302's next job is lost as Redis loses data (BullMQ will not remove a scheduler's job): its
    // hash and its place in the delayed set. Its scheduler stays.
    const lost = schedulerJobId(schedulers[1]!.key, schedulers[1]!.next);
    const client = await q.getBackend().client;
    await client
      .pipeline()
      .runCommand('del', [q.toKey(lost)])
      .runCommand('zrem', [q.toKey('delayed'), lost])
      .exec();
    expect(await q.getJobScheduler(syncSchedulerId('2302'))).toBeTruthy();
    expect(await schedulerJobsPresent(q, schedulers)).toEqual([true, false]);
    expect(await schedulerJobsPresent(q, [])).toEqual([]);
    for (const id of ['2301', '2302']) await unscheduleAccount(queues, id);
  });
});
