import { SECOND } from '../util/clock.ts';
import type { Simulator } from './types.ts';

/**
 * Move the simulator's clock with the wall clock, for a simulator run next to processes on the
 * system clock (the demo, `feedmirror simulator`): links' `oe` then agree with their "now".
 * Returns a function that stops following.
 */
export function followWallClock(sim: Pick<Simulator, 'clock'>): () => void {
  let last = Date.now();
  const ticker = setInterval(() => {
    const now = Date.now();
    if (now > last) sim.clock.advance(now - last);
    last = now;
  }, SECOND);
  ticker.unref();
  return () => clearInterval(ticker);
}
