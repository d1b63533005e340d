import v8 from 'node:v8';

/**
 * How far V8 lets the heap grow past what survived the last full collection before it collects
 * again. V8's own default is dynamic and generous (up to about 4x when allocation is fast): a
 * worker that churns through downloads, JSON and sharp results reaches a large heap made mostly
 * of garbage. A fixed 30% keeps the peak close to what is really live at the same CPU cost
 * (`npm run bench`, docs/benchmarks.md): it is a growth rate, not a cap, so a worker that truly
 * needs more heap still gets it. 0 leaves V8's default.
 *
 * The flag is not one NODE_OPTIONS accepts, hence setFlagsFromString; V8 reads it at every
 * full collection, so setting it at start-up takes effect for the process's whole life.
 */
export function applyHeapGrowthPercent(percent: number): void {
  if (percent > 0) v8.setFlagsFromString(`--heap-growing-percent=${Math.round(percent)}`);
}
