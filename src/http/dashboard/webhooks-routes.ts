import type { Request, Response, Router } from 'express';
import {
  getEndpoint,
  listDeliveries,
  listEndpoints,
  removeEndpoint,
  type WebhookEndpoint,
} from '../../store/webhooks.ts';
import { EndpointInputError, registerEndpoint, rotateSecret } from '../../webhooks/endpoints.ts';
import { DASHBOARD_PATH } from '../auth/paths.ts';
import type { AsyncHandler, DashboardContext } from './context.ts';
import { deliveriesPage, secretPage, webhooksPage } from './webhooks-views.ts';

/**
 * Webhook endpoints: the list with the add form, one endpoint's delivery log, and add, rotate
 * the secret, remove. A new secret is shown once, on the page the action answers with.
 */
export function registerWebhookRoutes(guarded: Router, c: DashboardContext): void {
  guarded.get('/webhooks', c.wrap(endpointsList(c)));
  guarded.post('/webhooks', c.wrap(addEndpoint(c)));
  guarded.get('/webhooks/:id', c.wrap(deliveryLog(c)));
  guarded.post('/webhooks/:id/rotate', c.wrap(rotate(c)));
  guarded.post('/webhooks/:id/remove', c.wrap(remove(c)));
}

const WEBHOOKS = `${DASHBOARD_PATH}/webhooks`;
const ENDPOINT_ID_RE = /^wh_[a-z0-9]{8,32}$/;
const utc = (d: Date) => `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;

/** The endpoint named in the path, or a 404. */
async function endpointParam(c: DashboardContext, req: Request, res: Response): Promise<WebhookEndpoint | null> {
  const id = String(req.params.id ?? '');
  const endpoint = c.deps.webhooks && ENDPOINT_ID_RE.test(id) ? await getEndpoint(c.deps.db, id) : null;
  if (!endpoint) {
    res.status(404).type('text/plain').send('No such webhook endpoint.\n');
    return null;
  }
  return endpoint;
}

function endpointsList(c: DashboardContext): AsyncHandler {
  const { db, clock } = c.deps;
  return async (req, res) => {
    if (!c.deps.webhooks) {
      res
        .status(404)
        .type('text/plain')
        .send('Webhooks need TOKEN_ENCRYPTION_KEY (their secrets are stored encrypted).\n');
      return;
    }
    const endpoints = await listEndpoints(db);
    const now = clock.now();
    const withLast = await Promise.all(
      endpoints.map(async (e) => ({
        ...e,
        // Shown only while the previous secret still signs.
        previousValidUntil: e.previousValidUntil && e.previousValidUntil > now ? e.previousValidUntil : null,
        last: (await listDeliveries(db, e.id, 1))[0],
      })),
    );
    c.pageHeaders(res);
    res
      .type('html')
      .send(webhooksPage(withLast, { ...c.layoutOf(req, res), allowPrivate: c.deps.webhooks.allowPrivate }));
  };
}

function addEndpoint(c: DashboardContext): AsyncHandler {
  const { db, clock, logger } = c.deps;
  return async (req, res) => {
    if (!c.deps.webhooks) {
      res.status(404).type('text/plain').send('Webhooks are not available.\n');
      return;
    }
    const body = req.body as Record<string, unknown>;
    // A form field as text: a repeated field's values joined with commas, as String() would.
    const fieldText = (v: unknown): string =>
      ([] as unknown[])
        .concat(v ?? [])
        .map(String)
        .join(',');
    const events = ([] as unknown[])
      .concat(body.events ?? [])
      .map(String)
      .join(',');
    try {
      const { endpoint, secret } = await registerEndpoint(
        { db, cipher: c.deps.webhooks.cipher, now: clock.now(), allowPrivate: c.deps.webhooks.allowPrivate },
        { url: fieldText(body.url), events, description: fieldText(body.description) },
      );
      logger.info({ endpointId: endpoint.id }, 'dashboard: webhook endpoint added');
      c.pageHeaders(res);
      res.type('html').send(secretPage(endpoint, secret, `Endpoint ${endpoint.id} added.`, c.layoutOf(req, res)));
    } catch (err) {
      if (!(err instanceof EndpointInputError)) throw err;
      c.flashTo(res, { kind: 'error', text: err.message.slice(0, 400) }, WEBHOOKS);
    }
  };
}

function deliveryLog(c: DashboardContext): AsyncHandler {
  return async (req, res) => {
    const endpoint = await endpointParam(c, req, res);
    if (!endpoint) return;
    c.pageHeaders(res);
    res
      .type('html')
      .send(deliveriesPage(endpoint, await listDeliveries(c.deps.db, endpoint.id, 100), c.layoutOf(req, res)));
  };
}

function rotate(c: DashboardContext): AsyncHandler {
  const { db, clock, logger } = c.deps;
  return async (req, res) => {
    const endpoint = await endpointParam(c, req, res);
    if (!endpoint || !c.deps.webhooks) return;
    const r = await rotateSecret({ db, cipher: c.deps.webhooks.cipher, now: clock.now() }, endpoint.id);
    if (!r) {
      c.flashTo(res, { kind: 'error', text: `${endpoint.id} no longer exists.` }, WEBHOOKS);
      return;
    }
    logger.info({ endpointId: endpoint.id }, 'dashboard: webhook secret rotated');
    c.pageHeaders(res);
    const note = `New secret. The previous one also signs until ${utc(r.previousValidUntil)}, so the receiver can switch meanwhile.`;
    res.type('html').send(secretPage(endpoint, r.secret, note, c.layoutOf(req, res)));
  };
}

function remove(c: DashboardContext): AsyncHandler {
  return async (req, res) => {
    const endpoint = await endpointParam(c, req, res);
    if (!endpoint) return;
    await removeEndpoint(c.deps.db, endpoint.id);
    c.deps.logger.info({ endpointId: endpoint.id }, 'dashboard: webhook endpoint removed');
    c.flashTo(res, { kind: 'ok', text: `${endpoint.id} and its delivery log were removed.` }, WEBHOOKS);
  };
}
