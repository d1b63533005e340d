import type { Router } from 'express';
import type { Queue } from 'bullmq';
import { JOBS } from '../../../jobs/catalogue.ts';
import { enqueue } from '../../../jobs/enqueue.ts';
import { manualJobId } from '../../../jobs/manual-ids.ts';
import { requestSync } from '../../../jobs/sync-requests.ts';
import { describeRefreshOutcome, refreshFlashKind } from '../../accounts/refresh-words.ts';
import { redactText } from '../../util/redact.ts';
import type { AsyncHandler, DashboardContext } from './context.ts';

/**
 * An account's actions from the list or its page: sync now, refresh the token now, confirm a
 * held removal. Each answers with a flash on the page the form was on.
 */
export function registerAccountActionRoutes(guarded: Router, c: DashboardContext): void {
  guarded.post('/accounts/:id/sync', c.wrap(syncNow(c)));
  guarded.post('/accounts/:id/refresh', c.wrap(refreshNow(c)));
  guarded.post('/accounts/:id/confirm-removal', c.wrap(confirmRemoval(c)));
}

function syncNow(c: DashboardContext): AsyncHandler {
  const { db, queues, clock, logger } = c.deps;
  return async (req, res) => {
    const account = await c.accountParam(req, res);
    if (!account) return;
    // Recorded in PostgreSQL, then queued under a unique id: a Redis restart cannot lose it.
    const job = await requestSync({ db, queues, clock }, account.id, 'dashboard');
    logger.info({ accountId: account.id, jobId: job.id }, 'dashboard: sync queued');
    c.flashTo(
      res,
      {
        kind: 'ok',
        text: `Sync of @${account.username} queued (job ${job.id}). It runs as soon as a worker is free.`,
      },
      c.backTo(req, account),
    );
  };
}

function refreshNow(c: DashboardContext): AsyncHandler {
  const { queues, clock, logger } = c.deps;
  return async (req, res) => {
    const account = await c.accountParam(req, res);
    if (!account) return;
    // force: renew now rather than waiting for the 30-day cadence; R-TOK-5 (24 h, unexpired) still applies in the job.
    const job = await enqueue(
      queues,
      JOBS.tokenRefresh,
      { accountId: account.id, force: true },
      { jobId: manualJobId('refresh', account.id, clock) },
    );
    logger.info({ accountId: account.id, jobId: job.id }, 'dashboard: token refresh queued');
    // The outcome, not just "queued": a refresh takes a second or two when a worker is free, and
    // "not due until …" or an error is what the operator needs to see.
    const done = await waitForJob(queues.tokenRefresh, String(job.id), 8_000);
    const to = c.backTo(req, account);
    if (done.state === 'completed') {
      const outcome = done.returnvalue as Parameters<typeof describeRefreshOutcome>[0];
      c.flashTo(
        res,
        { kind: refreshFlashKind(outcome), text: `@${account.username}: ${describeRefreshOutcome(outcome)}.` },
        to,
      );
    } else if (done.state === 'failed') {
      c.flashTo(
        res,
        {
          kind: 'error',
          text: `Token refresh of @${account.username} failed: ${done.failedReason ?? 'unknown error'}`,
        },
        to,
      );
    } else {
      c.flashTo(
        res,
        {
          kind: 'ok',
          text: `Token refresh of @${account.username} queued (job ${job.id}); no worker has finished it yet (is "feedmirror worker" running?). Its outcome will show in Queues.`,
        },
        to,
      );
    }
  };
}

function confirmRemoval(c: DashboardContext): AsyncHandler {
  const { removals, logger } = c.deps;
  return async (req, res) => {
    const account = await c.accountParam(req, res);
    if (!account) return;
    if (!removals) {
      c.flashTo(
        res,
        { kind: 'error', text: 'This server cannot publish feeds (no storage): confirm with the CLI.' },
        c.backTo(req, account),
      );
      return;
    }
    // R-OWN-7: the same function as `feedmirror feeds confirm-removal`.
    const done = await removals.confirm(account.id);
    logger.info({ accountId: account.id, removed: done?.removed.length ?? 0 }, 'dashboard: held removal confirmed');
    c.flashTo(
      res,
      done
        ? {
            kind: 'ok',
            text: `Removed ${done.removed.length} posts of @${account.username}; feed ${done.publish.outcome}.`,
          }
        : { kind: 'error', text: `No removal is held for @${account.username} any more.` },
      c.backTo(req, account),
    );
  };
}

/** Wait (polling, at most `ms`) for a job to finish; its state, and its return value or failure. */
async function waitForJob(
  queue: Queue,
  id: string,
  ms: number,
): Promise<{ state: string; returnvalue?: unknown; failedReason?: string }> {
  const deadline = Date.now() + ms;
  for (;;) {
    const job = await queue.getJob(id);
    const state = job ? await job.getState() : 'unknown';
    if (state === 'completed') return { state, returnvalue: job!.returnvalue };
    if (state === 'failed') return { state, failedReason: redactText(job!.failedReason) };
    if (Date.now() >= deadline) return { state };
    await new Promise((r) => setTimeout(r, 200));
  }
}
