import { setTimeout as delay } from 'node:timers/promises';

/**
 * Wait until work done elsewhere (another process, a queue) is visible. This polls for a
 * condition; it never stands in for moving time, which goes through the injectable clock.
 */
export async function until(
  condition: () => Promise<boolean> | boolean,
  what: string,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await delay(20);
  }
}
