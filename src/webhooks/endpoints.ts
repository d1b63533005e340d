import type { TokenCipher } from '../store/crypto.ts';
import type { Db } from '../store/db.ts';
import { createEndpoint, rotateEndpointSecret, type WebhookEndpoint } from '../store/webhooks.ts';
import { liveWorkers } from '../store/worker-settings.ts';
import { DAY } from '../util/clock.ts';
import { assertPublicHost, checkEndpointUrl } from './address.ts';
import { WEBHOOK_EVENTS, type WebhookEventType } from './events.ts';

/** How long the previous secret keeps signing after a rotation: receivers have a day to switch. */
export const ROTATION_OVERLAP_MS = DAY;

export class EndpointInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EndpointInputError';
  }
}

/** A comma list of event types; empty or `*` = every event. */
export function parseEventList(raw: string | undefined): WebhookEventType[] {
  const list = (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (list.length === 0 || (list.length === 1 && list[0] === '*')) return [];
  const bad = list.filter((e) => !(WEBHOOK_EVENTS as readonly string[]).includes(e));
  if (bad.length)
    throw new EndpointInputError(`unknown event ${bad.join(', ')}; events are ${WEBHOOK_EVENTS.join(', ')}`);
  return [...new Set(list)] as WebhookEventType[];
}

/**
 * Register an endpoint from the dashboard or the CLI: the URL checked (http(s), no credentials,
 * no private address unless WEBHOOK_ALLOW_PRIVATE, its name resolved to see), a new secret made.
 * The secret is returned to be shown once; afterwards it is only ever used to sign.
 */
export async function registerEndpoint(
  deps: { db: Db; cipher: TokenCipher; now: Date; allowPrivate: boolean },
  input: { url: string; events?: string; description?: string },
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  let url: URL;
  try {
    url = checkEndpointUrl(input.url.trim(), deps.allowPrivate);
    if (!deps.allowPrivate) await assertPublicHost(url.hostname);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new EndpointInputError(code ? `cannot resolve ${input.url.trim()}: ${code}` : (err as Error).message);
  }
  if (deps.allowPrivate && (await isPrivate(url))) {
    // R-SET-1: the workers deliver with their own WEBHOOK_ALLOW_PRIVATE. A private endpoint that
    // this process allows but a running worker refuses would fail every delivery: say so now.
    const refusing = (await liveWorkers(deps.db)).filter((w) => !w.settings.WEBHOOK_ALLOW_PRIVATE);
    if (refusing.length)
      throw new EndpointInputError(
        `webhook URL ${url.origin} is a private or local address: WEBHOOK_ALLOW_PRIVATE=true here, but ${refusing.length === 1 ? 'a running worker refuses' : `${refusing.length} running workers refuse`} to deliver to it; set WEBHOOK_ALLOW_PRIVATE=true in the workers' environment and restart them, then add it again`,
      );
  }
  const description = (input.description ?? '').trim().slice(0, 200);
  return createEndpoint(deps.db, deps.cipher, {
    url: url.href,
    events: parseEventList(input.events),
    description,
    at: deps.now,
  });
}

/** Would the address guard refuse this URL without WEBHOOK_ALLOW_PRIVATE? */
async function isPrivate(url: URL): Promise<boolean> {
  try {
    checkEndpointUrl(url.href, false);
    await assertPublicHost(url.hostname);
    return false;
  } catch {
    return true;
  }
}

/** A new secret; the old one keeps signing for ROTATION_OVERLAP_MS. null when there is no such endpoint. */
export async function rotateSecret(
  deps: { db: Db; cipher: TokenCipher; now: Date },
  id: string,
): Promise<{ secret: string; previousValidUntil: Date } | null> {
  const previousValidUntil = new Date(deps.now.getTime() + ROTATION_OVERLAP_MS);
  const secret = await rotateEndpointSecret(deps.db, deps.cipher, id, previousValidUntil);
  return secret ? { secret, previousValidUntil } : null;
}
