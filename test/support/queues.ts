import type { Queue } from 'bullmq';
import { createQueues, type RedisSettings } from '../../jobs/queues.ts';

/**
 * Empties and closes a test's queues, so nothing it queued outlives it in the shared Redis.
 * Given the test's Redis settings instead of queue objects, it clears every queue of that prefix.
 */
export async function dropQueues(from: Record<string, Queue> | RedisSettings | undefined): Promise<void> {
  if (!from) return;
  const queues = isSettings(from) ? createQueues(from) : from;
  for (const q of Object.values(queues)) {
    await q.obliterate({ force: true }).catch(() => undefined);
    await q.close();
  }
}

function isSettings(x: Record<string, Queue> | RedisSettings): x is RedisSettings {
  return typeof (x as RedisSettings).url === 'string' && typeof (x as RedisSettings).prefix === 'string';
}
