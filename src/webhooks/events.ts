import { randomBytes } from 'node:crypto';
import { insertDeliveries } from '../store/webhooks.ts';
import type { Db } from '../store/db.ts';

/**
 * The events feedmirror sends to webhook endpoints, and the outbox that records them: one
 * pending delivery row per endpoint that wants the event, in Postgres, before anything is queued
 * (a lost Redis loses no event: workers re-queue pending rows when they start).
 *
 * Body (the exact bytes signed): {"id":"evt_…","type":"feed.updated","createdAt":"…","data":{…}}
 */
export const WEBHOOK_EVENTS = [
  'feed.updated',
  'account.reauth_required',
  'token.expiring',
  'account.removed',
  'account.owner_notified',
  'account.reconnected',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENTS)[number];

export interface WebhookEventData {
  /** The feed was rewritten: which posts were added, changed (content, not just re-signed links) and removed. */
  'feed.updated': {
    accountId: string;
    feedKey: string;
    feedUrl: string;
    added: string[];
    changed: string[];
    removed: string[];
  };
  /** The token is dead: only the owner's login revives the account. */
  'account.reauth_required': { accountId: string; username: string; reason: string | null };
  /** An expiry alert threshold (14, 7, 3, 1 days) was reached; once per threshold and token life. */
  'token.expiring': { accountId: string; username: string; thresholdDays: number; expiresAt: string };
  'account.removed': { accountId: string };
  /**
   * The account's owner was emailed an alert with a reconnect link (R-OWN-14); once per alert and
   * token life. Never their address, never the link.
   */
  'account.owner_notified': {
    accountId: string;
    username: string;
    alert: 'expiry' | 'reauth';
    thresholdDays: number;
    linkExpiresAt: string;
  };
  /** An account that needed its owner is connected again (R-OWN-14): how, and its new expiry. */
  'account.reconnected': {
    accountId: string;
    username: string;
    via: 'reconnect_link' | 'invitation' | 'login' | 'exchanged' | 'imported';
    expiresAt: string;
  };
}

export type WebhookEvent = { [K in WebhookEventType]: { type: K; data: WebhookEventData[K] } }[WebhookEventType];

/** Where services report events; the job layer turns them into queued deliveries. */
export interface EventSink {
  emit(event: WebhookEvent): Promise<void>;
}

export function newEventId(): string {
  return `evt_${randomBytes(12).toString('hex')}`;
}

export function eventBody(id: string, event: WebhookEvent, at: Date): string {
  return JSON.stringify({ id, type: event.type, createdAt: at.toISOString(), data: event.data });
}

/** The outbox write: one pending delivery per subscribed endpoint. Returns the delivery ids. */
export async function recordEvent(
  db: Db,
  event: WebhookEvent,
  at: Date,
): Promise<{ eventId: string; deliveryIds: string[] }> {
  const eventId = newEventId();
  const deliveryIds = await insertDeliveries(db, {
    id: eventId,
    type: event.type,
    body: eventBody(eventId, event, at),
    at,
  });
  return { eventId, deliveryIds };
}
