import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQueues, type Queues } from '../../jobs/queues.ts';
import { startWorker, type RunningWorker } from '../../jobs/worker.ts';
import { webhookEventSink } from '../../jobs/webhook-events.ts';
import type { Mailer } from '../../src/alerts/mailer.ts';
import { PlatformClient } from '../../src/platform/client.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { listDeliveries, removeEndpoint } from '../../src/store/webhooks.ts';
import { systemClock } from '../../src/util/clock.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { EndpointInputError, registerEndpoint, rotateSecret } from '../../src/webhooks/endpoints.ts';
import { DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, verifySignature } from '../../src/webhooks/signature.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { until } from '../support/wait.ts';
import { dropQueues } from '../support/queues.ts';

/**
 * Outgoing webhooks end to end. A real HTTP receiver checks each request's
 * signature the way the README tells a site to; the real worker (jobs/worker.ts) delivers from its
 * own BullMQ queue; the receiver fails on purpose to show the retries; the delivery log in
 * Postgres records every attempt. Retry delays are shortened to milliseconds here (the schedule
 * itself, 30 s to 8 h over about 24 hours, is checked in the unit test of webhookBackoff).
 */
interface Received {
  body: string;
  headers: IncomingMessage['headers'];
  verified: Record<string, boolean>;
}

const cipher = TokenCipher.fromEnv(randomBytes(32).toString('base64'));
let db: pg.Pool;
let dropDb: () => Promise<void>;
let queues: Queues;
let worker: RunningWorker;
let receiver: Server;
let base = '';
const received = new Map<string, Received[]>();
/** Per path: how many requests to answer 500 before answering 200 (Infinity: always 500). */
const failFirst = new Map<string, number>();
/** Per path: the secrets the receiver checks signatures with. */
const secretsOf = new Map<string, string[]>();

const now = () => systemClock.now();

beforeAll(async () => {
  const fresh = await freshDatabase('webhooks');
  dropDb = fresh.drop;
  db = createPool(fresh.url, { max: 5 });
  await migrate(db);
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const body = Buffer.concat(chunks).toString('utf8');
      const verified: Record<string, boolean> = {};
      for (const s of secretsOf.get(path) ?? [])
        verified[s] = verifySignature(s, req.headers[SIGNATURE_HEADER.toLowerCase()] as string, body, new Date()).ok;
      const list = received.get(path) ?? [];
      list.push({ body, headers: req.headers, verified });
      received.set(path, list);
      const fails = failFirst.get(path) ?? 0;
      res
        .writeHead(list.length <= fails ? 500 : 200, { 'content-type': 'text/plain' })
        .end(list.length <= fails ? 'boom' : 'ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  const redis = redisForTest('webhooks');
  queues = createQueues(redis);
  const platform = new PlatformClient({
    graphUrl: 'http://127.0.0.1:9',
    apiVersion: 'v25.0',
    oauthTokenUrl: 'http://127.0.0.1:9/oauth',
    logger: silentLogger,
  });
  const mailer = { send: async () => ({ delivered: 'outbox' }), close: () => undefined } as unknown as Mailer;
  worker = await startWorker({
    db,
    cipher,
    platform,
    mailer,
    clock: systemClock,
    logger: silentLogger,
    redis,
    queues,
    publicUrl: 'http://127.0.0.1:8080',
    schedules: { refreshCheckEveryMs: 3_600_000, syncEveryMs: 3_600_000 },
    refreshAfterMs: 30 * 86_400_000,
    concurrency: 2,
    sweepCron: '0 8 * * *',
    // The receiver is on 127.0.0.1: allowed here, refused by default (see below).
    webhooks: { allowPrivate: true, timeoutMs: 5_000, retryDelaysMs: [20, 20, 20, 20, 20, 20, 20, 20, 20] },
  });
}, 60_000);

afterAll(async () => {
  await worker?.close();
  await dropQueues(queues);
  receiver?.closeAllConnections();
  await new Promise((r) => (receiver ? receiver.close(r) : r(undefined)));
  await db?.end();
  await dropDb?.();
});

const sink = () => webhookEventSink({ db, queues, clock: systemClock, logger: silentLogger });

describe('outgoing webhooks', () => {
  it('a signed feed.updated reaches a real receiver; after two failures (HTTP 500) the third attempt is delivered; the log shows three attempts', async () => {
    const { endpoint, secret } = await registerEndpoint(
      { db, cipher, now: now(), allowPrivate: true },
      { url: `${base}/retry`, events: 'feed.updated', description: 'site' },
    );
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    secretsOf.set('/retry', [secret, 'whsec_wrong']);
    failFirst.set('/retry', 2);

    await sink().emit({
      type: 'feed.updated',
      data: {
        accountId: '17841400000000001',
        feedKey: 'feeds/17841400000000001.json',
        feedUrl: 'https://cdn.example/feeds/17841400000000001.json',
        added: ['1'],
        changed: ['2'],
        removed: ['3'],
      },
    });
    // Not subscribed to token events: no delivery for this endpoint.
    await sink().emit({
      type: 'token.expiring',
      data: {
        accountId: '17841400000000001',
        username: 'shop',
        thresholdDays: 7,
        expiresAt: '2026-05-01T00:00:00.000Z',
      },
    });

    await until(
      async () => (await listDeliveries(db, endpoint.id))[0]?.status === 'delivered',
      'the delivery to succeed after retries',
    );
    const got = received.get('/retry')!;
    expect(got).toHaveLength(3);
    for (const r of got) {
      // The receiver's check: the right secret verifies, a wrong one does not.
      expect(r.verified).toEqual({ [secret]: true, whsec_wrong: false });
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers[EVENT_HEADER.toLowerCase()]).toBe('feed.updated');
    }
    // Every attempt carries the same event (same id and body): receivers de-duplicate on it.
    expect(new Set(got.map((r) => r.body)).size).toBe(1);
    const body = JSON.parse(got[0]!.body) as {
      id: string;
      type: string;
      createdAt: string;
      data: Record<string, unknown>;
    };
    expect(body).toMatchObject({
      type: 'feed.updated',
      data: { accountId: '17841400000000001', added: ['1'], changed: ['2'], removed: ['3'] },
    });
    expect(got[0]!.headers[DELIVERY_HEADER.toLowerCase()]).toBe(body.id);

    const log = await listDeliveries(db, endpoint.id);
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({
      eventType: 'feed.updated',
      eventId: body.id,
      status: 'delivered',
      attempts: 3,
      lastHttpStatus: 200,
      lastError: null,
    });
    expect(log[0]!.deliveredAt).toBeInstanceOf(Date);
  });

  it('a receiver that always fails: every attempt is made, then the delivery is marked failed with the last error', async () => {
    const { endpoint, secret } = await registerEndpoint(
      { db, cipher, now: now(), allowPrivate: true },
      { url: `${base}/down` },
    );
    secretsOf.set('/down', [secret]);
    failFirst.set('/down', Infinity);
    await sink().emit({ type: 'account.removed', data: { accountId: '17841400000000009' } });
    await until(async () => (await listDeliveries(db, endpoint.id))[0]?.status === 'failed', 'the delivery to give up');
    const [row] = await listDeliveries(db, endpoint.id);
    expect(row).toMatchObject({
      status: 'failed',
      attempts: 10,
      lastHttpStatus: 500,
      lastError: 'endpoint answered HTTP 500',
      deliveredAt: null,
    });
    expect(received.get('/down')).toHaveLength(10);
    expect(received.get('/down')!.every((r) => r.verified[secret])).toBe(true);
  });

  it('rotation: both secrets sign until the overlap ends, so a receiver on either one accepts', async () => {
    const { endpoint, secret: oldSecret } = await registerEndpoint(
      { db, cipher, now: now(), allowPrivate: true },
      { url: `${base}/rotate`, events: 'account.removed' },
    );
    const rotated = await rotateSecret({ db, cipher, now: now() }, endpoint.id);
    expect(rotated!.secret).not.toBe(oldSecret);
    expect(rotated!.previousValidUntil.getTime() - now().getTime()).toBeGreaterThan(23 * 3_600_000);
    secretsOf.set('/rotate', [oldSecret, rotated!.secret]);
    await sink().emit({ type: 'account.removed', data: { accountId: '17841400000000002' } });
    await until(() => (received.get('/rotate')?.length ?? 0) === 1, 'the rotated delivery');
    const r = received.get('/rotate')![0]!;
    expect(r.verified).toEqual({ [oldSecret]: true, [rotated!.secret]: true });
    expect(String(r.headers[SIGNATURE_HEADER.toLowerCase()]).match(/v1=/g)).toHaveLength(2);
  });

  it('replay window: a signature older than 300 s is refused even with the right secret', async () => {
    const r = received.get('/retry')![2]!;
    const secret = secretsOf.get('/retry')![0]!;
    const header = r.headers[SIGNATURE_HEADER.toLowerCase()] as string;
    const t = Number(/t=(\d+)/.exec(header)![1]);
    expect(verifySignature(secret, header, r.body, new Date((t + 299) * 1000)).ok).toBe(true);
    expect(verifySignature(secret, header, r.body, new Date((t + 301) * 1000))).toEqual({
      ok: false,
      reason: 'timestamp outside the 300 s replay window',
    });
    // A body changed in transit no longer matches.
    expect(verifySignature(secret, header, r.body.replace('feed.updated', 'feed.updatex'), new Date(t * 1000)).ok).toBe(
      false,
    );
  });

  it('private addresses are refused unless allowed: at registration, and at delivery time', async () => {
    for (const url of [
      `${base}/x`,
      'http://localhost:8080/x',
      'http://10.1.2.3/x',
      'http://[::1]/x',
      'http://169.254.169.254/latest/meta-data',
      'http://192.168.0.10/x',
    ]) {
      await expect(registerEndpoint({ db, cipher, now: now(), allowPrivate: false }, { url })).rejects.toThrow(
        /private or local address/,
      );
    }
    await expect(
      registerEndpoint({ db, cipher, now: now(), allowPrivate: false }, { url: 'ftp://example.com/x' }),
    ).rejects.toBeInstanceOf(EndpointInputError);
    await expect(
      registerEndpoint(
        { db, cipher, now: now(), allowPrivate: true },
        { url: `${base}/x`, events: 'feed.updated,post.liked' },
      ),
    ).rejects.toThrow(/unknown event post\.liked/);

    // Registered while allowed, delivered by a worker that does not allow it: refused, nothing sent.
    const { deliverWebhook } = await import('../../src/webhooks/deliver.ts');
    const { endpoint } = await registerEndpoint(
      { db, cipher, now: now(), allowPrivate: true },
      { url: `${base}/private`, events: 'account.reauth_required' },
    );
    const { recordEvent } = await import('../../src/webhooks/events.ts');
    const { deliveryIds } = await recordEvent(
      db,
      { type: 'account.reauth_required', data: { accountId: '1', username: 'x', reason: null } },
      now(),
    );
    const mine = (await listDeliveries(db, endpoint.id))[0]!;
    expect(deliveryIds).toContain(mine.id);
    await expect(
      deliverWebhook(
        { db, cipher, clock: systemClock, logger: silentLogger, allowPrivate: false, timeoutMs: 2_000 },
        mine.id,
        { final: true },
      ),
    ).rejects.toThrow(/private or local address/);
    expect(received.get('/private')).toBeUndefined();
    expect((await listDeliveries(db, endpoint.id))[0]).toMatchObject({ status: 'failed', attempts: 1 });
    expect(await removeEndpoint(db, endpoint.id)).toBe(true);
  });

  it('the services emit the account events: token.expiring at a threshold and account.reauth_required once each (expiry sweep), account.removed (lifecycle)', async () => {
    const { runExpirySweep } = await import('../../src/alerts/sweep.ts');
    const { AccountLifecycle, NO_SCHEDULES } = await import('../../src/accounts/lifecycle.ts');
    const { upsertAccount } = await import('../../src/store/accounts.ts');
    const { saveToken } = await import('../../src/store/tokens.ts');
    const { ManualClock, DAY } = await import('../../src/util/clock.ts');
    const clock = new ManualClock(Date.UTC(2026, 2, 1, 8));
    const seen: Array<{ type: string; data: Record<string, unknown> }> = [];
    const events = { emit: async (e: { type: string; data: unknown }) => void seen.push(e as (typeof seen)[number]) };
    const mailer = { send: async () => ({ delivered: 'outbox' }), close: () => undefined } as unknown as Mailer;
    const add = async (id: string, username: string, expiresInMs: number) => {
      await upsertAccount(db, { id, username }, clock.now());
      await saveToken(
        db,
        cipher,
        {
          accountId: id,
          accessToken: `tok-${randomBytes(8).toString('hex')}`,
          obtainedAt: clock.now(),
          expiresAt: new Date(clock.now().getTime() + expiresInMs),
        },
        'exchanged',
      );
    };
    await add('17841400000000101', 'soon.shop', 6 * DAY + 3_600_000); // 7-day threshold due
    await add('17841400000000102', 'gone.shop', -3_600_000); // expired an hour ago
    const deps = { db, mailer, clock, logger: silentLogger, publicUrl: 'http://127.0.0.1:8080', events };
    await runExpirySweep(deps);
    await runExpirySweep(deps); // once per threshold and token life: nothing new
    // The sweep visits accounts in its own order: compare as a set.
    expect(seen.map((e) => `${e.type} ${String(e.data.accountId)}`).sort()).toEqual([
      'account.reauth_required 17841400000000102',
      'token.expiring 17841400000000101',
    ]);
    expect(seen.find((e) => e.type === 'token.expiring')!.data).toMatchObject({
      username: 'soon.shop',
      thresholdDays: 7,
    });
    expect(seen.find((e) => e.type === 'account.reauth_required')!.data).toMatchObject({ username: 'gone.shop' });

    const lifecycle = new AccountLifecycle({
      db,
      clock,
      logger: silentLogger,
      schedules: NO_SCHEDULES,
      alertReauth: async () => null,
      events,
    });
    expect((await lifecycle.apply('17841400000000101', 'removed')).changed).toBe(true);
    expect((await lifecycle.apply('17841400000000101', 'removed')).changed).toBe(false); // already gone: no second event
    expect(seen.slice(2)).toEqual([{ type: 'account.removed', data: { accountId: '17841400000000101' } }]);
  });
});
