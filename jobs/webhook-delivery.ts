import { z } from 'zod';
import type { JobsOptions } from 'bullmq';
import { deliverWebhook, type DeliverDeps, type DeliverOutcome } from '../src/webhooks/deliver.ts';
import { HOUR, MINUTE, SECOND } from '../src/util/clock.ts';
import { defineJob } from './definition.ts';

/**
 * webhook-delivery: POST one event to one endpoint (src/webhooks/deliver.ts), on a queue of its
 * own so a slow receiver never delays the feed pipeline. Payload: the delivery row's id only
 * (body and secret stay in Postgres).
 *
 * Retries: a failed attempt is tried again after 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h, 8 h
 * and 8 h: ten attempts over about 24 hours (23.7 h), then the delivery is marked failed in the
 * log. The worker's backoffStrategy holds the schedule (backoff type 'webhook').
 */
export const WEBHOOK_RETRY_DELAYS_MS: readonly number[] = [
  30 * SECOND,
  2 * MINUTE,
  10 * MINUTE,
  30 * MINUTE,
  HOUR,
  2 * HOUR,
  4 * HOUR,
  8 * HOUR,
  8 * HOUR,
];
export const WEBHOOK_BACKOFF_TYPE = 'webhook';

export const webhookDeliveryPayload = z.object({ deliveryId: z.string().regex(/^\d{1,18}$/, 'must be a delivery id') });

export const webhookDeliveryOptions: JobsOptions = {
  attempts: WEBHOOK_RETRY_DELAYS_MS.length + 1,
  backoff: { type: WEBHOOK_BACKOFF_TYPE },
  removeOnComplete: { age: 7 * 24 * 3600, count: 5000 },
  removeOnFail: { age: 30 * 24 * 3600, count: 5000 },
};

/** The Worker's backoffStrategy for the webhook queue: the delay before retry number `attemptsMade`. */
export function webhookBackoff(delays: readonly number[] = WEBHOOK_RETRY_DELAYS_MS) {
  return (attemptsMade: number, type?: string): number => {
    if (type !== WEBHOOK_BACKOFF_TYPE) return 0;
    return delays[Math.min(Math.max(attemptsMade, 1), delays.length) - 1]!;
  };
}

export const webhookDeliveryJob = defineJob({
  name: 'webhook-delivery',
  queue: 'webhooks',
  payload: webhookDeliveryPayload,
  options: webhookDeliveryOptions,
  async process(deps: DeliverDeps, { deliveryId }, job): Promise<DeliverOutcome> {
    // attemptsMade counts the attempts before this one: this is the last when none is left after it.
    const final = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    return deliverWebhook(deps, deliveryId, { final });
  },
});
