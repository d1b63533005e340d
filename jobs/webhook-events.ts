import type { Db } from '../src/store/db.ts';
import { recordEvent, type EventSink, type WebhookEvent } from '../src/webhooks/events.ts';
import { listPendingDeliveryIds } from '../src/store/webhooks.ts';
import type { Clock } from '../src/util/clock.ts';
import type { Logger } from '../src/util/logger.ts';
import { enqueue } from './enqueue.ts';
import type { Queues } from './queues.ts';
import { webhookDeliveryJob } from './webhook-delivery.ts';

/**
 * Webhook events from any process (worker, serve, CLI): recorded in Postgres (the outbox), then
 * one webhook-delivery job each through the catalogue's enqueue.
 */
/** One job per delivery, its id derived from the row: queuing it twice is a no-op. */
export async function enqueueDeliveries(
  queues: Pick<Queues, 'webhooks'>,
  deliveryIds: readonly string[],
): Promise<void> {
  for (const deliveryId of deliveryIds) {
    await enqueue(queues, webhookDeliveryJob, { deliveryId }, { jobId: `delivery-${deliveryId}` });
  }
}

/**
 * Where services report events (publish, the expiry sweep, account removal): the outbox rows
 * first, then their jobs. Never throws: an event that cannot be recorded is logged, and must not
 * fail the work that caused it (the feed is published either way); rows recorded but not queued
 * are queued again by requeuePendingDeliveries.
 */
export function webhookEventSink(deps: {
  db: Db;
  /** Without the webhook queue (a token-only worker) events are recorded, and queued by the next worker's start. */
  queues: Partial<Pick<Queues, 'webhooks'>>;
  clock: Clock;
  logger: Logger;
}): EventSink {
  return {
    async emit(event: WebhookEvent) {
      try {
        const { eventId, deliveryIds } = await recordEvent(deps.db, event, deps.clock.now());
        if (deliveryIds.length > 0)
          deps.logger.info({ eventId, type: event.type, deliveries: deliveryIds.length }, 'webhook event recorded');
        const webhooks = deps.queues.webhooks;
        if (webhooks) await enqueueDeliveries({ webhooks }, deliveryIds);
      } catch (err) {
        deps.logger.error({ err, type: event.type }, 'could not record or queue a webhook event');
      }
    },
  };
}

/** State in Redis can be lost: every pending delivery in Postgres gets its job back (no-op when it has one). */
export async function requeuePendingDeliveries(db: Db, queues: Pick<Queues, 'webhooks'>): Promise<number> {
  const ids = await listPendingDeliveryIds(db);
  await enqueueDeliveries(queues, ids);
  return ids.length;
}
