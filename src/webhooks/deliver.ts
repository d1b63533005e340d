import http from 'node:http';
import https from 'node:https';
import type { TokenCipher } from '../store/crypto.ts';
import type { Db } from '../store/db.ts';
import { getDelivery, getEndpoint, recordAttempt, signingSecrets } from '../store/webhooks.ts';
import type { Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import { checkEndpointUrl, publicOnlyLookup } from './address.ts';
import { DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, signatureHeader } from './signature.ts';

export interface DeliverDeps {
  db: Db;
  cipher: TokenCipher;
  clock: Clock;
  logger: Logger;
  /** WEBHOOK_ALLOW_PRIVATE: POST to private and local addresses too. */
  allowPrivate: boolean;
  /** Whole request, answer included. */
  timeoutMs: number;
}

/** A failed attempt: retried with backoff until the attempts run out. */
export class DeliveryError extends Error {
  constructor(
    message: string,
    readonly httpStatus?: number,
  ) {
    super(message);
    this.name = 'DeliveryError';
  }
}

export type DeliverOutcome = { outcome: 'delivered'; httpStatus: number } | { outcome: 'skipped'; reason: string };

/**
 * POST one delivery, signed (signature.ts), and record the attempt in the delivery log. 2xx is
 * delivered; anything else (another status, a redirect, a timeout, a refused address) is a
 * failed attempt and throws DeliveryError, so the queue retries it. A delivery already made, or
 * whose endpoint was removed, is skipped: a job delivered twice POSTs once.
 */
export async function deliverWebhook(
  deps: DeliverDeps,
  deliveryId: string,
  opts: { final: boolean },
): Promise<DeliverOutcome> {
  const delivery = await getDelivery(deps.db, deliveryId);
  if (!delivery) return { outcome: 'skipped', reason: 'no such delivery (endpoint removed?)' };
  if (delivery.status !== 'pending') return { outcome: 'skipped', reason: `already ${delivery.status}` };
  const endpoint = await getEndpoint(deps.db, delivery.endpointId);
  const now = deps.clock.now();
  const secrets = endpoint ? await signingSecrets(deps.db, deps.cipher, endpoint.id, now) : null;
  if (!endpoint || !secrets) return { outcome: 'skipped', reason: 'endpoint removed' };

  const fail = async (message: string, httpStatus?: number): Promise<never> => {
    await recordAttempt(deps.db, deliveryId, {
      at: deps.clock.now(),
      ok: false,
      error: message,
      ...(httpStatus !== undefined ? { httpStatus } : {}),
      final: opts.final,
    });
    deps.logger.warn(
      { deliveryId, endpointId: endpoint.id, event: delivery.eventType, httpStatus, final: opts.final },
      `webhook delivery failed: ${message}`,
    );
    throw new DeliveryError(message, httpStatus);
  };

  let url: URL;
  try {
    url = checkEndpointUrl(endpoint.url, deps.allowPrivate);
  } catch (err) {
    return fail((err as Error).message);
  }
  const signature = signatureHeader(
    secrets.previous ? [secrets.current, secrets.previous] : [secrets.current],
    delivery.body,
    now,
  );
  let status: number;
  try {
    status = await post(
      url,
      delivery.body,
      {
        'content-type': 'application/json',
        'user-agent': 'feedmirror-webhooks',
        [SIGNATURE_HEADER]: signature,
        [EVENT_HEADER]: delivery.eventType,
        [DELIVERY_HEADER]: delivery.eventId,
      },
      deps,
    );
  } catch (err) {
    return fail((err as Error).message);
  }
  if (status < 200 || status >= 300) return fail(`endpoint answered HTTP ${status}`, status);
  await recordAttempt(deps.db, deliveryId, { at: deps.clock.now(), ok: true, httpStatus: status });
  return { outcome: 'delivered', httpStatus: status };
}

/** One POST with node:http(s): no redirects followed, the private-address guard on the socket's own lookup. */
function post(
  url: URL,
  body: string,
  headers: Record<string, string>,
  deps: Pick<DeliverDeps, 'allowPrivate' | 'timeoutMs'>,
): Promise<number> {
  const lib = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = lib.request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        timeout: deps.timeoutMs,
        ...(deps.allowPrivate ? {} : { lookup: publicOnlyLookup }),
      },
      (res) => {
        // The answer's body is not needed: read (and drop) at most 64 KiB, then close.
        let seen = 0;
        res.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (seen > 65_536) res.destroy();
        });
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('close', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(res.statusCode ?? 0));
      },
    );
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${deps.timeoutMs} ms`)), deps.timeoutMs);
    req.on('timeout', () => req.destroy(new Error(`no answer within ${deps.timeoutMs} ms`)));
    req.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(
        new Error(
          err.name === 'PrivateAddressError' ? err.message : `could not reach ${url.host}: ${err.code ?? err.message}`,
        ),
      );
    });
    req.on('close', () => clearTimeout(timer));
    req.end(body);
  });
}
