import { Job, PRIORITY_LIMIT, type JobsOptions } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { JOBS } from '../../jobs/catalogue.ts';
import { copyPriority, DEFAULT_FLOW_SETTINGS, LAST_PRIORITY, syncFlow } from '../../jobs/feed-sync.ts';
import { clampPriority, JobOptionsError, withinLimits } from '../../jobs/job-options.ts';
import { mirrorJobOptions } from '../../jobs/mirror-media.ts';
import { publishJobOptions } from '../../jobs/publish-feed.ts';
import type { SyncResult } from '../../src/feeds/sync.ts';
import { DAY, MINUTE } from '../../src/util/clock.ts';

/**
 * R-OWN-9: every option a job definition or a flow builder can produce passes BullMQ's own check
 * (Job.validateOptions, the one `Queue.add` and `FlowProducer.add` run before writing anything),
 * not a copy of its limits.
 */
function bullmqAccepts(name: string, opts: JobsOptions): void {
  // A Job needs its queue only to add or move itself; validating its options touches nothing.
  const queue = {
    opts: {},
    qualifiedName: 'bull:check',
    toKey: (k: string) => `bull:check:${k}`,
  } as unknown as ConstructorParameters<typeof Job>[0];
  const job = new Job(queue, name, { accountId: '17841400000000001' }, opts);
  (job as unknown as { validateOptions(d: { data: string }): void }).validateOptions({
    data: JSON.stringify(job.data),
  });
}

const now = new Date('2026-06-01T12:00:00Z');
const deadlines: Array<Date | null> = [
  null,
  new Date(Number.NaN),
  new Date(now.getTime() - 30 * DAY), // long dead
  now,
  new Date(now.getTime() + MINUTE / 2),
  new Date(now.getTime() + 3 * DAY),
  new Date(now.getTime() + 10 * 365 * DAY), // far beyond every bucket
  new Date(8.64e15), // the last date JavaScript knows
];

describe('job options within BullMQ limits (R-OWN-9)', () => {
  it("BullMQ's own check refuses 2^21 (what a copy of a link without oe used to get): the test can fail", () => {
    expect(() => bullmqAccepts('mirror-media', { priority: 2 ** 21 })).toThrow(/Priority should be between 0 and/);
    expect(PRIORITY_LIMIT).toBe(2 ** 21 - 1);
  });

  it("every catalogue definition's options pass BullMQ's check", () => {
    for (const def of Object.values(JOBS)) {
      expect(() => bullmqAccepts(def.name, def.options), def.name).not.toThrow();
      expect(withinLimits(def.name, def.options)).toEqual(def.options);
    }
    for (const settings of [
      { attempts: 1, backoffMs: 0 },
      { attempts: 50, backoffMs: 3_600_000 },
    ]) {
      expect(() => bullmqAccepts('mirror-media', mirrorJobOptions(settings))).not.toThrow();
      expect(() => bullmqAccepts('publish-feed', publishJobOptions(settings))).not.toThrow();
    }
  });

  it('every copy priority a deadline can give is an integer within 1..PRIORITY_LIMIT, unknown expiry last', () => {
    for (const d of deadlines) {
      const p = copyPriority(d, now);
      expect(Number.isInteger(p), String(d)).toBe(true);
      expect(p).toBeGreaterThanOrEqual(1);
      expect(p).toBeLessThanOrEqual(PRIORITY_LIMIT);
      expect(() => bullmqAccepts('mirror-media', { priority: p })).not.toThrow();
    }
    expect(copyPriority(null, now)).toBe(LAST_PRIORITY);
    expect(LAST_PRIORITY).toBe(PRIORITY_LIMIT);
  });

  it("every job of a sync's flow passes BullMQ's check, whatever its copies' deadlines", () => {
    const result: Extract<SyncResult, { outcome: 'synced' }> = {
      outcome: 'synced',
      accountId: '17841400000000001',
      complete: true,
      pages: 1,
      calls: 1,
      posts: deadlines.length,
      newPosts: deadlines.length,
      changedPosts: 0,
      renewedVideos: 0,
      dropped: [],
      pruned: [],
      copies: deadlines.map((deadline, i) => ({
        accountId: '17841400000000001',
        mediaId: `1790000000000000${i}`,
        slot: 'cover',
        deadline,
      })),
      feedDue: false,
      feedMissing: false,
    };
    const flow = syncFlow({ url: 'redis://127.0.0.1:6379', prefix: 'check' }, result, now, DEFAULT_FLOW_SETTINGS);
    expect(() => bullmqAccepts(flow.name, flow.opts!)).not.toThrow();
    expect(flow.children).toHaveLength(deadlines.length);
    for (const child of flow.children!) expect(() => bullmqAccepts(child.name, child.opts!)).not.toThrow();
  });

  it('withinLimits clamps a priority into range and names what BullMQ would refuse', () => {
    expect(withinLimits('x', { priority: 2 ** 21 }).priority).toBe(PRIORITY_LIMIT);
    expect(withinLimits('x', { priority: 1e12 }).priority).toBe(PRIORITY_LIMIT);
    expect(withinLimits('x', { priority: -5 }).priority).toBe(1);
    expect(withinLimits('x', { priority: 2.5 }).priority).toBe(3);
    expect(withinLimits('x', { priority: 0 }).priority).toBe(0); // BullMQ's "no priority"
    expect(clampPriority(Number.POSITIVE_INFINITY)).toBe(PRIORITY_LIMIT);
    for (const p of [2 ** 21, 1e12, -5, 2.5, Number.NaN])
      expect(() => bullmqAccepts('x', withinLimits('x', { priority: p }))).not.toThrow();
    expect(() => withinLimits('x', { jobId: '123' })).toThrow(JobOptionsError);
    expect(() => withinLimits('x', { jobId: 'a:b' })).toThrow(/job x: a job id cannot contain ':'/);
    expect(() => withinLimits('x', { ignoreDependencyOnFailure: true, failParentOnFailure: true })).toThrow(
      /cannot be used together/,
    );
    expect(() => withinLimits('x', { backoff: { type: 'exponential', delay: 10, jitter: 2 } })).toThrow(/jitter/);
    expect(() => withinLimits('x', { attempts: 0 })).toThrow(/attempts/);
  });
});
