import { compareSchedules, type ReconcileDeps } from './reconcile.ts';
import { scheduleAccount, unscheduleAccount } from './schedules.ts';
import type { ScheduleCheck } from '../src/verify/verify.ts';

/**
 * The schedules as `feedmirror verify` sees them: the reconciler's own comparison
 * (compareSchedules), and the operations that connect and remove use to repair them
 * (scheduleAccount, unscheduleAccount). The CLI and the worker's daily verify pass this in; the
 * checker itself never touches BullMQ.
 */
export function scheduleCheck(deps: Pick<ReconcileDeps, 'db' | 'queues' | 'schedules'>): ScheduleCheck {
  return {
    async compare() {
      return (await compareSchedules(deps)).map((d) => ({
        kind: d.kind,
        accountId: d.accountId,
        schedulerId: d.id,
      }));
    },
    async repair(d) {
      if (d.kind === 'stray') await unscheduleAccount(deps.queues, d.accountId);
      else await scheduleAccount(deps.queues, d.accountId, deps.schedules);
    },
  };
}
