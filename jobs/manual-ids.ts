import { randomBytes } from 'node:crypto';
import type { Clock } from '../src/util/clock.ts';

/**
 * A job id for an operator's "now" (CLI, dashboard): unique, so it never collides with (or is
 * swallowed by) a scheduled run, and readable in the queue view.
 */
export function manualJobId(kind: 'sync' | 'refresh', accountId: string, clock: Clock): string {
  return `manual-${kind}-${accountId}-${clock.now().getTime()}-${randomBytes(3).toString('hex')}`;
}

/** Whether a job id was made by manualJobId for this kind (a scheduler's jobs never are). */
export const isManualJobId = (kind: 'sync' | 'refresh', jobId: string): boolean => jobId.startsWith(`manual-${kind}-`);
