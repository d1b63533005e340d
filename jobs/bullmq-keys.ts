import type { Queue } from 'bullmq';

/**
 * BullMQ's Redis keys, read directly: the one module of feedmirror that knows their layout. Its
 * API reads a job scheduler per round trip and pages its scheduler set by rank; the comparisons of
 * every account's schedulers (a worker's start, the reconciler, verify) need all of them at a
 * cost that does not grow with a round trip per scheduler, so these three reads go under it:
 *
 *  - `<queue>:repeat`, a sorted set: each job scheduler's id, scored by its next slot;
 *  - `<queue>:repeat:<id>`, a hash per scheduler: its `every` among other fields;
 *  - `repeat:<id>:<next>`, the id of a scheduler's next job.
 *
 * test/integration/bullmq-keys.test.ts checks each read against BullMQ's own answers on real
 * Redis, so a BullMQ upgrade that moves any of them fails there rather than in production.
 */

/** Schedulers read per round trip when the schedulers are compared. */
export const SCHEDULER_PAGE = 1000;

/**
 * A queue's job schedulers, a page at a time: their ids and the next slot of each, as ZSCAN walks
 * the `repeat` set. Paging by rank (ZRANGE start..end, as getJobSchedulers pages) loses schedulers
 * while jobs run: a run moves its scheduler's score (its next slot) behind the pages not yet read,
 * every scheduler after it shifts down a rank, and one at each page boundary is never seen; a
 * comparison would then rewrite schedulers that were there, and BullMQ's upsert takes a due job out
 * of the waiting list and adds it again. ZSCAN returns every member present for the whole scan
 * (some twice: callers count each id once).
 */
export async function* schedulerPages(
  queue: Queue,
  count = SCHEDULER_PAGE,
): AsyncGenerator<Array<{ key: string; next: number }>> {
  const client = await queue.getBackend().client;
  let cursor = '0';
  do {
    const [nextCursor, flat] = (await client.runCommand('zscan', [queue.toKey('repeat'), cursor, 'COUNT', count])) as [
      string,
      string[],
    ];
    cursor = nextCursor;
    const page: Array<{ key: string; next: number }> = [];
    for (let i = 0; i + 1 < flat.length; i += 2) page.push({ key: flat[i]!, next: Number(flat[i + 1]) });
    if (page.length > 0) yield page;
  } while (cursor !== '0');
}

/**
 * The intervals of the given schedulers in one pipeline: BullMQ's getJobSchedulers sends one
 * HGETALL per scheduler, each a socket write of its own, a cost per scheduler that on a large
 * deployment outweighs the worker's syncs. undefined: the scheduler is gone, or has no interval.
 */
export async function schedulerIntervals(
  queue: Queue,
  keys: readonly string[],
): Promise<Array<{ key: string; every: number | undefined }>> {
  if (keys.length === 0) return [];
  const client = await queue.getBackend().client;
  const pipeline = client.pipeline();
  for (const id of keys) pipeline.runCommand('hget', [queue.toKey(`repeat:${id}`), 'every']);
  const replies = (await pipeline.exec()) ?? [];
  return keys.map((key, i) => {
    const every: unknown = replies[i]?.[1];
    return { key, every: typeof every === 'string' && every !== '' ? Number(every) : undefined };
  });
}

/** The id BullMQ gives a scheduler's job for its slot `next`. */
export function schedulerJobId(key: string, next: number): string {
  return `repeat:${key}:${next}`;
}

/**
 * Whether each scheduler's next job is in Redis, in one pipeline: a scheduler whose job was lost
 * never runs again, though BullMQ still reports it.
 */
export async function schedulerJobsPresent(
  queue: Queue,
  schedulers: ReadonlyArray<{ key: string; next: number }>,
): Promise<boolean[]> {
  if (schedulers.length === 0) return [];
  const client = await queue.getBackend().client;
  const pipeline = client.pipeline();
  for (const s of schedulers) pipeline.runCommand('exists', [queue.toKey(schedulerJobId(s.key, s.next))]);
  const found = (await pipeline.exec()) ?? [];
  return schedulers.map((_, i) => found[i]?.[1] === 1);
}
