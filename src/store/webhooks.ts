import { randomBytes } from 'node:crypto';
import type { TokenCipher } from './crypto.ts';
import { withTransaction, type Db } from './db.ts';

/**
 * The webhook_endpoints and webhook_deliveries tables (migrations/007_webhooks.sql). Secrets are
 * sealed with the token cipher (AES-256-GCM under TOKEN_ENCRYPTION_KEY), bound to the endpoint
 * id, and leave this module only to sign a delivery or to be shown once to the operator.
 */

export interface WebhookEndpoint {
  id: string;
  url: string;
  /** Event types it receives; empty = every event. */
  events: string[];
  description: string;
  createdAt: Date;
  /** Until when the previous secret still signs (a rotation); null when there is none. */
  previousValidUntil: Date | null;
}

/** The secrets that sign a delivery now: the current one, and the previous one during a rotation. */
export interface SigningSecrets {
  current: string;
  previous?: string;
}

interface EndpointRow {
  id: string;
  url: string;
  events: string[];
  description: string;
  secret_key_id: string;
  secret: Buffer;
  previous_key_id: string | null;
  previous_secret: Buffer | null;
  previous_valid_until: Date | null;
  created_at: Date;
}

/** The binding (GCM additional data) a webhook signing secret is sealed under. */
export const webhookSecretBinding = (id: string) => `webhook:${id}`;
const bind = webhookSecretBinding;

function toEndpoint(r: EndpointRow): WebhookEndpoint {
  return {
    id: r.id,
    url: r.url,
    events: r.events,
    description: r.description,
    createdAt: r.created_at,
    previousValidUntil: r.previous_valid_until,
  };
}

/** A new signing secret: 32 random bytes, `whsec_` + base64url, as receivers paste it into their env. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

export function newEndpointId(): string {
  return `wh_${randomBytes(8).toString('hex')}`;
}

export async function createEndpoint(
  db: Db,
  cipher: TokenCipher,
  input: { url: string; events: string[]; description?: string; at: Date },
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  const id = newEndpointId();
  const secret = newWebhookSecret();
  const sealed = cipher.encrypt(secret, bind(id));
  const { rows } = await db.query<EndpointRow>(
    `INSERT INTO webhook_endpoints (id, url, events, description, secret_key_id, secret, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
    [id, input.url, input.events, input.description ?? '', sealed.keyId, sealed.ciphertext, input.at],
  );
  return { endpoint: toEndpoint(rows[0]!), secret };
}

export async function listEndpoints(db: Db): Promise<WebhookEndpoint[]> {
  const { rows } = await db.query<EndpointRow>('SELECT * FROM webhook_endpoints ORDER BY created_at, id');
  return rows.map(toEndpoint);
}

export async function getEndpoint(db: Db, id: string): Promise<WebhookEndpoint | null> {
  const { rows } = await db.query<EndpointRow>('SELECT * FROM webhook_endpoints WHERE id = $1', [id]);
  return rows[0] ? toEndpoint(rows[0]) : null;
}

export async function removeEndpoint(db: Db, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM webhook_endpoints WHERE id = $1', [id]);
  return (rowCount ?? 0) > 0;
}

/**
 * Rotate: a new current secret; the old one keeps signing (a second signature in the header)
 * until `previousValidUntil`, so receivers can switch at their own pace. Returns the new secret.
 */
export async function rotateEndpointSecret(
  db: Db,
  cipher: TokenCipher,
  id: string,
  previousValidUntil: Date,
): Promise<string | null> {
  return withTransaction(db, async (c) => {
    const { rows } = await c.query<EndpointRow>('SELECT * FROM webhook_endpoints WHERE id = $1 FOR UPDATE', [id]);
    const r = rows[0];
    if (!r) return null;
    const secret = newWebhookSecret();
    const sealed = cipher.encrypt(secret, bind(id));
    await c.query(
      `UPDATE webhook_endpoints SET secret_key_id = $2, secret = $3, previous_key_id = $4, previous_secret = $5, previous_valid_until = $6 WHERE id = $1`,
      [id, sealed.keyId, sealed.ciphertext, r.secret_key_id, r.secret, previousValidUntil],
    );
    return secret;
  });
}

/** The secrets that sign now (the previous one only while its rotation window lasts). */
export async function signingSecrets(
  db: Db,
  cipher: TokenCipher,
  id: string,
  now: Date,
): Promise<SigningSecrets | null> {
  const { rows } = await db.query<EndpointRow>('SELECT * FROM webhook_endpoints WHERE id = $1', [id]);
  const r = rows[0];
  if (!r) return null;
  const current = cipher.decrypt({ keyId: r.secret_key_id, ciphertext: r.secret }, bind(id));
  const previousLive =
    r.previous_secret &&
    r.previous_key_id &&
    r.previous_valid_until &&
    r.previous_valid_until.getTime() > now.getTime();
  return previousLive
    ? { current, previous: cipher.decrypt({ keyId: r.previous_key_id!, ciphertext: r.previous_secret! }, bind(id)) }
    : { current };
}

/** `keys rotate`: re-seal every webhook secret not sealed with the current key. */
export async function rotateWebhookKeys(db: Db, cipher: TokenCipher): Promise<{ rotated: number }> {
  return withTransaction(db, async (c) => {
    const { rows } = await c.query<EndpointRow>(
      'SELECT * FROM webhook_endpoints WHERE secret_key_id <> $1 OR (previous_key_id IS NOT NULL AND previous_key_id <> $1) ORDER BY id FOR UPDATE',
      [cipher.currentKeyId],
    );
    for (const r of rows) {
      const cur = cipher.encrypt(
        cipher.decrypt({ keyId: r.secret_key_id, ciphertext: r.secret }, bind(r.id)),
        bind(r.id),
      );
      const prev =
        r.previous_key_id && r.previous_secret
          ? cipher.encrypt(
              cipher.decrypt({ keyId: r.previous_key_id, ciphertext: r.previous_secret }, bind(r.id)),
              bind(r.id),
            )
          : null;
      await c.query(
        'UPDATE webhook_endpoints SET secret_key_id = $2, secret = $3, previous_key_id = $4, previous_secret = $5 WHERE id = $1',
        [r.id, cur.keyId, cur.ciphertext, prev?.keyId ?? null, prev?.ciphertext ?? null],
      );
    }
    return { rotated: rows.length };
  });
}

// ---- deliveries ----

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface WebhookDelivery {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  body: string;
  status: DeliveryStatus;
  attempts: number;
  lastHttpStatus: number | null;
  lastError: string | null;
  createdAt: Date;
  lastAttemptAt: Date | null;
  deliveredAt: Date | null;
}

interface DeliveryRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  body: string;
  status: DeliveryStatus;
  attempts: number;
  last_http_status: number | null;
  last_error: string | null;
  created_at: Date;
  last_attempt_at: Date | null;
  delivered_at: Date | null;
}

function toDelivery(r: DeliveryRow): WebhookDelivery {
  return {
    id: String(r.id),
    endpointId: r.endpoint_id,
    eventId: r.event_id,
    eventType: r.event_type,
    body: r.body,
    status: r.status,
    attempts: r.attempts,
    lastHttpStatus: r.last_http_status,
    lastError: r.last_error,
    createdAt: r.created_at,
    lastAttemptAt: r.last_attempt_at,
    deliveredAt: r.delivered_at,
  };
}

/**
 * One pending delivery per endpoint that wants this event type (the outbox). Idempotent per
 * (endpoint, event id). Returns the ids of the deliveries created.
 */
export async function insertDeliveries(
  db: Db,
  event: { id: string; type: string; body: string; at: Date },
): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    // account_id: the account the event is about, so its health and page find its deliveries.
    `INSERT INTO webhook_deliveries (endpoint_id, event_id, event_type, body, created_at, account_id)
     SELECT e.id, $1, $2, $3, $4, ($3::text)::jsonb -> 'data' ->> 'accountId' FROM webhook_endpoints e
      WHERE cardinality(e.events) = 0 OR $2 = ANY (e.events)
     ON CONFLICT (endpoint_id, event_id) DO NOTHING
     RETURNING id`,
    [event.id, event.type, event.body, event.at],
  );
  return rows.map((r) => String(r.id));
}

export async function getDelivery(db: Db, id: string): Promise<WebhookDelivery | null> {
  const { rows } = await db.query<DeliveryRow>('SELECT * FROM webhook_deliveries WHERE id = $1', [id]);
  return rows[0] ? toDelivery(rows[0]) : null;
}

/** The delivery log of one endpoint, newest first. */
export async function listDeliveries(db: Db, endpointId: string, limit = 50): Promise<WebhookDelivery[]> {
  const { rows } = await db.query<DeliveryRow>(
    'SELECT * FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY id DESC LIMIT $2',
    [endpointId, limit],
  );
  return rows.map(toDelivery);
}

/** Deliveries still to be made: what a worker re-queues at start (Redis may have lost them). */
export async function listPendingDeliveryIds(db: Db, limit = 10_000): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM webhook_deliveries WHERE status = 'pending' ORDER BY id LIMIT $1`,
    [limit],
  );
  return rows.map((r) => String(r.id));
}

/** Record one attempt: its outcome; `final` marks a failure with no retry left. */
export async function recordAttempt(
  db: Db,
  id: string,
  a: { at: Date; ok: boolean; httpStatus?: number; error?: string; final?: boolean },
): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries SET attempts = attempts + 1, last_attempt_at = $2, last_http_status = $3, last_error = $4,
       status = CASE WHEN $5 THEN 'delivered' WHEN $6 THEN 'failed' ELSE 'pending' END,
       delivered_at = CASE WHEN $5 THEN $2 ELSE delivered_at END
     WHERE id = $1`,
    [id, a.at, a.httpStatus ?? null, a.ok ? null : (a.error ?? null), a.ok, !a.ok && a.final === true],
  );
}
