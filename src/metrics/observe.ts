import type { PlatformCallObserver, PlatformCallOutcome } from '../platform/http.ts';
import type { PipelineMetrics } from './index.ts';

/**
 * The bridges from the code that does the work to the counters: small functions, so the
 * platform client and the job code never import prom-client, and every caller labels alike.
 */

/** Prometheus label value of a platform operation: `media list` -> `media_list`. */
export function operationLabel(operation: string | undefined): string {
  const label = (operation ?? '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  return label || 'unknown';
}

/** A PlatformCallObserver that counts into feedmirror_platform_calls_total. */
export function platformCallObserver(metrics: Pick<PipelineMetrics, 'platformCalls'>): PlatformCallObserver {
  return {
    onCall(operation: string, outcome: PlatformCallOutcome) {
      metrics.platformCalls.inc({ operation: operationLabel(operation), outcome });
    },
  };
}

/** R-OWN-1: a job backs off because the platform rate-limited it; counted by operation. */
export function countRateLimitWait(
  metrics: Pick<PipelineMetrics, 'rateLimitWaits'> | undefined,
  operation: string | undefined,
): void {
  metrics?.rateLimitWaits.inc({ operation: operationLabel(operation) });
}

/** Seconds elapsed since a performance.now() reading (durations are real time, not the injectable clock's). */
export function secondsSince(startedMs: number): number {
  return (performance.now() - startedMs) / 1000;
}
