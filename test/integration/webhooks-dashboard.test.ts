import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerFromContext, type RunningWorkerProcess } from '../../src/cli/start/worker.ts';
import { webhookEventSink } from '../../jobs/webhook-events.ts';
import { verifySignature, SIGNATURE_HEADER } from '../../src/webhooks/signature.ts';
import {
  nonLoopbackAddress,
  startServeForTest,
  type ServedForTest,
  stopServe,
  operatorSession,
} from '../security/support.ts';
import { until } from '../support/wait.ts';

/**
 * Item 5 from the operator's side: an endpoint added in the dashboard gets its secret
 * shown once, `feedmirror worker` (the real worker, in process) delivers a signed event to a real
 * receiver, and the endpoint's delivery log page shows the delivery. Served as in production: 0.0.0.0, reached through the non-loopback address.
 */
let serve: ServedForTest;
let worker: RunningWorkerProcess;
let receiver: Server;
let hookUrl = '';
const bodies: Array<{ body: string; signature: string }> = [];
// Retries are shown in webhooks.test.ts (with a shortened schedule); the real worker waits 30 s first.
let failures = 0;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push({
        body: Buffer.concat(chunks).toString('utf8'),
        signature: String(req.headers[SIGNATURE_HEADER.toLowerCase()] ?? ''),
      });
      if (failures-- > 0) res.writeHead(503).end('busy');
      else res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '0.0.0.0', r));
  hookUrl = `http://${nonLoopbackAddress()}:${(receiver.address() as AddressInfo).port}/hooks/feedmirror`;
  serve = await startServeForTest('webhooks-dash', { WEBHOOK_ALLOW_PRIVATE: 'true', TRUST_PROXY: '1' });
  worker = await startWorkerFromContext(serve.ctx);
}, 60_000);

afterAll(async () => {
  await worker?.close();
  await stopServe(serve);
  receiver?.closeAllConnections();
  await new Promise((r) => (receiver ? receiver.close(r) : r(undefined)));
});

describe('webhooks in the dashboard', () => {
  it('add an endpoint (secret shown once); the worker delivers a signed event; the delivery log page shows it; rotate signs with both; remove; CSRF required', async () => {
    const cookie = await operatorSession(serve, '198.51.100.20');
    const get = (path: string) =>
      fetch(`${serve.url}${path}`, { headers: { cookie, 'x-forwarded-for': '198.51.100.20' } });
    const page = await get('/dashboard/webhooks');
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('Add an endpoint');
    // No inline script or style attribute in the page (the CSP allows neither).
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)|\sstyle="/);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(html)![1]!;

    const added = await fetch(`${serve.url}/dashboard/webhooks`, {
      method: 'POST',
      headers: {
        cookie,
        origin: serve.url,
        'content-type': 'application/x-www-form-urlencoded',
        'x-forwarded-for': '198.51.100.20',
      },
      body: new URLSearchParams([
        ['_csrf', csrf],
        ['url', hookUrl],
        ['events', 'feed.updated'],
        ['events', 'account.removed'],
        ['description', 'marketing site'],
      ]),
    });
    expect(added.status).toBe(200);
    const secret = /id="secret" readonly size="70" value="(whsec_[A-Za-z0-9_-]+)"/.exec(await added.text())?.[1];
    expect(secret).toBeTruthy();
    const list = await (await get('/dashboard/webhooks')).text();
    const id = /data-endpoint-id="(wh_[a-z0-9]+)"/.exec(list)![1]!;
    expect(list).toContain(hookUrl);
    expect(list).not.toContain(secret!); // shown once, never again

    await webhookEventSink({
      db: serve.ctx.db,
      queues: serve.ctx.queues,
      clock: serve.ctx.clock,
      logger: serve.ctx.logger,
    }).emit({ type: 'account.removed', data: { accountId: '17841400000000042' } });
    await until(
      async () => (await (await get(`/dashboard/webhooks/${id}`)).text()).includes('data-status="delivered"'),
      'the delivery to show as delivered',
      30_000,
    );
    expect(bodies).toHaveLength(1);
    for (const b of bodies) expect(verifySignature(secret!, b.signature, b.body, new Date()).ok).toBe(true);
    const log = await (await get(`/dashboard/webhooks/${id}`)).text();
    expect(log).toContain('account.removed');
    expect(log).toMatch(/data-status="delivered"><td>[^<]+<\/td><td>account\.removed/);
    expect(log).toMatch(/<td>1<\/td>\s*<td>HTTP 204<\/td>/);

    // Rotate from the dashboard: a new secret shown once; the next delivery is signed by both.
    const post = (path: string) =>
      fetch(`${serve.url}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          cookie,
          origin: serve.url,
          'content-type': 'application/x-www-form-urlencoded',
          'x-forwarded-for': '198.51.100.20',
        },
        body: new URLSearchParams({ _csrf: csrf }),
      });
    const rotated = await post(`/dashboard/webhooks/${id}/rotate`);
    expect(rotated.status).toBe(200);
    const newSecret = /id="secret" readonly size="70" value="(whsec_[A-Za-z0-9_-]+)"/.exec(await rotated.text())?.[1];
    expect(newSecret).toBeTruthy();
    expect(newSecret).not.toBe(secret);
    await webhookEventSink({
      db: serve.ctx.db,
      queues: serve.ctx.queues,
      clock: serve.ctx.clock,
      logger: serve.ctx.logger,
    }).emit({ type: 'account.removed', data: { accountId: '17841400000000043' } });
    await until(() => bodies.length === 2, 'the second delivery', 30_000);
    expect(verifySignature(secret!, bodies[1]!.signature, bodies[1]!.body, new Date()).ok).toBe(true);
    expect(verifySignature(newSecret!, bodies[1]!.signature, bodies[1]!.body, new Date()).ok).toBe(true);
    expect(await (await get('/dashboard/webhooks')).text()).toMatch(/previous secret signs until/);

    // Remove: gone from the list, its log page 404s.
    const removed = await post(`/dashboard/webhooks/${id}/remove`);
    expect(removed.status).toBe(303);
    expect(await (await get('/dashboard/webhooks')).text()).not.toContain(id);
    expect((await get(`/dashboard/webhooks/${id}`)).status).toBe(404);
    // Without the CSRF token, nothing happens.
    const forged = await fetch(`${serve.url}/dashboard/webhooks`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        cookie,
        origin: serve.url,
        'content-type': 'application/x-www-form-urlencoded',
        'x-forwarded-for': '198.51.100.20',
      },
      body: new URLSearchParams({ url: hookUrl }),
    });
    expect(forged.status).toBe(403);
  }, 60_000);
});
