import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * How feedmirror signs a webhook, and how a receiver checks it (docs/webhooks.md documents the same):
 *
 *   Feedmirror-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>[,v1=<hex>]
 *
 * Each v1 is HMAC-SHA256, keyed with one of the endpoint's secrets (the whole `whsec_...`
 * string), over `<t>.<raw body>`. During a secret rotation there are two v1 values (new secret
 * first); a receiver accepts the request when any one matches its secret. It refuses a `t` more
 * than REPLAY_WINDOW_SECONDS from its own clock: a captured request cannot be replayed later,
 * since changing `t` breaks the signature.
 */
export const SIGNATURE_HEADER = 'Feedmirror-Signature';
export const EVENT_HEADER = 'Feedmirror-Event';
export const DELIVERY_HEADER = 'Feedmirror-Delivery';
export const REPLAY_WINDOW_SECONDS = 300;

function hmac(secret: string, t: number, body: string): string {
  return createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');
}

/** The header value for `body` sent at `at`, signed with every secret given (current first). */
export function signatureHeader(secrets: readonly string[], body: string, at: Date): string {
  const t = Math.floor(at.getTime() / 1000);
  return [`t=${t}`, ...secrets.map((s) => `v1=${hmac(s, t, body)}`)].join(',');
}

export type VerifyResult = { ok: true; timestamp: number } | { ok: false; reason: string };

/** A receiver's check: signature by `secret` over this exact body, within the replay window. */
export function verifySignature(
  secret: string,
  header: string | null | undefined,
  body: string,
  now: Date,
  windowSeconds = REPLAY_WINDOW_SECONDS,
): VerifyResult {
  if (!header) return { ok: false, reason: `no ${SIGNATURE_HEADER} header` };
  let t: number | undefined;
  const sigs: string[] = [];
  for (const part of header.split(',')) {
    const [k, v] = part.trim().split('=', 2);
    if (k === 't' && v && /^\d+$/.test(v)) t = Number(v);
    else if (k === 'v1' && v && /^[0-9a-f]{64}$/.test(v)) sigs.push(v);
  }
  if (t === undefined) return { ok: false, reason: 'no timestamp (t=) in the signature header' };
  if (sigs.length === 0) return { ok: false, reason: 'no v1 signature in the signature header' };
  if (Math.abs(now.getTime() / 1000 - t) > windowSeconds)
    return { ok: false, reason: `timestamp outside the ${windowSeconds} s replay window` };
  const expected = Buffer.from(hmac(secret, t, body), 'hex');
  const match = sigs.some((s) => timingSafeEqual(Buffer.from(s, 'hex'), expected));
  return match ? { ok: true, timestamp: t } : { ok: false, reason: 'no signature matches this secret' };
}
