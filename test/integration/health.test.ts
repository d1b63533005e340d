import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Queue } from 'bullmq';
import express from 'express';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { healthRoutes, STORAGE_PROBE_EVERY_MS, type HealthDeps } from '../../src/http/health.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { parseExposition } from '../../src/metrics/exposition.ts';
import { createMetrics } from '../../src/metrics/index.ts';
import { createStorage, type ObjectStorage } from '../../src/storage/index.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { S3RVER_CREDENTIALS, startS3, type TestS3 } from '../support/s3.ts';
import { freePort } from '../support/closed-port.ts';

/**
 * /healthz, /readyz and /metrics against real Redis, Postgres and an S3 API (s3rver). A
 * dependency "down" is a real one: a closed port, a stopped s3rver, or a port that accepts and
 * never answers (to prove the per-check timeout).
 */
const SECRET_PASSWORD = 'sup3r-s3cret-pw';

let s3: TestS3;
let storage: ObjectStorage;
let db: { url: string; drop: () => Promise<void> };
let pool: pg.Pool;
let redis: Redis;
let redisPrefix = '';
let redisUrl = '';
let closedPort = 0;
let silent: TcpServer;
let silentPort = 0;
const silentSockets = new Set<Socket>();
const cleanups: Array<() => unknown> = [];

async function serve(deps: HealthDeps): Promise<string> {
  const app = express();
  app.use(healthRoutes(deps));
  const server: Server = createHttpServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function downPool(port: number): pg.Pool {
  const p = new pg.Pool({
    connectionString: `postgres://postgres:${SECRET_PASSWORD}@127.0.0.1:${port}/feedmirror`,
    connectionTimeoutMillis: 5_000,
  });
  p.on('error', () => {});
  cleanups.push(() => p.end());
  return p;
}

function downRedis(port: number): Redis {
  // No offline queue and no reconnect: a PING on a dead connection fails at once instead of waiting.
  const r = new Redis(`redis://:${SECRET_PASSWORD}@127.0.0.1:${port}`, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    lazyConnect: true,
  });
  r.on('error', () => {});
  cleanups.push(() => r.disconnect());
  return r;
}

beforeAll(async () => {
  s3 = await startS3('feedmirror-health');
  storage = createStorage(
    loadConfig({ STORAGE_URL: `s3://${s3.bucket}/h`, S3_ENDPOINT: s3.endpoint, S3_FORCE_PATH_STYLE: 'true' }),
    {
      credentials: S3RVER_CREDENTIALS,
      maxAttempts: 1,
      requestTimeoutMs: 2_000,
    },
  );
  db = await freshDatabase('health');
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const r = redisForTest('health');
  redisPrefix = r.prefix;
  redisUrl = r.url;
  redis = new Redis(r.url, { maxRetriesPerRequest: 1 });
  closedPort = await freePort();
  // Accepts TCP connections and never says a word: a hung dependency.
  silent = createTcpServer((sock) => {
    silentSockets.add(sock);
    sock.on('close', () => silentSockets.delete(sock));
  });
  await new Promise<void>((res) => silent.listen(0, '127.0.0.1', res));
  silentPort = (silent.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  for (const s of silentSockets) s.destroy();
  await new Promise<void>((r) => silent?.close(() => r()));
  await pool?.end();
  redis?.disconnect();
  await db?.drop();
  await s3?.close();
});

async function readyz(base: string): Promise<{
  status: number;
  body: { status: string; down: string[]; checks: Record<string, { ok: boolean; reason?: string }> };
  text: string;
  cache: string | null;
}> {
  const res = await fetch(`${base}/readyz`);
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text), text, cache: res.headers.get('cache-control') };
}

function expectNoSecrets(text: string): void {
  expect(text).not.toContain(SECRET_PASSWORD);
  expect(text).not.toMatch(/postgres:\/\/|redis:\/\/|127\.0\.0\.1|S3RVER/);
}

describe('health endpoints', () => {
  it('/healthz answers 200 without touching any dependency', async () => {
    const base = await serve({ redis: downRedis(closedPort), db: downPool(closedPort), storage });
    const res = await fetch(`${base}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('/readyz is 200 when Redis, Postgres and storage all answer', async () => {
    const base = await serve({ redis, db: pool, storage });
    const r = await readyz(base);
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('ready');
    expect(r.body.down).toEqual([]);
    expect(Object.keys(r.body.checks).sort()).toEqual(['postgres', 'redis', 'storage']);
    expect(Object.values(r.body.checks).every((c) => c.ok)).toBe(true);
    expect(r.cache).toBe('no-store');
  });

  it('Postgres down on its own: 503 naming postgres only, no URL or password in the body (R-TOK-11)', async () => {
    const base = await serve({ redis, db: downPool(closedPort), storage });
    const r = await readyz(base);
    expect(r.status).toBe(503);
    expect(r.body.down).toEqual(['postgres']);
    expect(r.body.checks.postgres).toMatchObject({ ok: false, reason: 'ECONNREFUSED' });
    expect(r.body.checks.redis?.ok).toBe(true);
    expect(r.body.checks.storage?.ok).toBe(true);
    expectNoSecrets(r.text);
  });

  it('Redis down on its own: 503 naming redis only, no URL or password in the body (R-TOK-11)', async () => {
    const base = await serve({ redis: downRedis(closedPort), db: pool, storage });
    const r = await readyz(base);
    expect(r.status).toBe(503);
    expect(r.body.down).toEqual(['redis']);
    expect(r.body.checks.redis?.ok).toBe(false);
    expect(r.body.checks.postgres?.ok).toBe(true);
    expectNoSecrets(r.text);
  });

  it('storage down on its own: 503 naming storage; ready again when it comes back (at the next probe, a minute on)', async () => {
    const clock = new ManualClock(new Date());
    const base = await serve({ redis, db: pool, storage, clock });
    await s3.stop();
    try {
      const r = await readyz(base);
      expect(r.status).toBe(503);
      expect(r.body.down).toEqual(['storage']);
      expect(r.body.checks.storage).toMatchObject({ ok: false, reason: 'ECONNREFUSED' });
      expectNoSecrets(r.text);
    } finally {
      await s3.start();
    }
    clock.advance(STORAGE_PROBE_EVERY_MS);
    const again = await readyz(base);
    expect(again.status).toBe(200);
  });

  it('a dependency that accepts and never answers is reported down after the timeout, the others still answer', async () => {
    const base = await serve({ redis, db: downPool(silentPort), storage, timeoutMs: 300 });
    const r = await readyz(base);
    expect(r.status).toBe(503);
    expect(r.body.down).toEqual(['postgres']);
    expect(r.body.checks.postgres).toMatchObject({ ok: false, reason: 'timeout' });
    expect(r.body.checks.redis?.ok).toBe(true);
  });

  it('everything down at once: 503 naming all three', async () => {
    await s3.stop();
    try {
      const base = await serve({ redis: downRedis(closedPort), db: downPool(closedPort), storage });
      const r = await readyz(base);
      expect(r.status).toBe(503);
      expect([...r.body.down].sort()).toEqual(['postgres', 'redis', 'storage']);
      expectNoSecrets(r.text);
    } finally {
      await s3.start();
    }
  });

  it('/metrics serves Prometheus text with real BullMQ job counts, parsed strictly', async () => {
    const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
    const queue = new Queue('feed-sync', { connection, prefix: redisPrefix });
    cleanups.push(async () => {
      await queue.obliterate({ force: true });
      await queue.close();
      // A connection handed to BullMQ stays ours to close.
      await connection.quit();
    });
    await queue.add('sync', { accountId: 'acc-1' });
    await queue.add('sync', { accountId: 'acc-2' }, { delay: 3_600_000 });
    const metrics = createMetrics({ queues: [queue] });
    metrics.imagesCopied.inc(2);
    const base = await serve({ redis, db: pool, storage, metrics });
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const families = parseExposition(await res.text());
    const jobs = families.get('feedmirror_jobs')?.samples ?? [];
    expect(jobs.find((s) => s.labels.queue === 'feed-sync' && s.labels.state === 'waiting')?.value).toBe(1);
    expect(jobs.find((s) => s.labels.queue === 'feed-sync' && s.labels.state === 'delayed')?.value).toBe(1);
    expect(families.get('feedmirror_images_copied_total')?.samples[0]?.value).toBe(2);
    expect(families.has('feedmirror_process_resident_memory_bytes')).toBe(true);
  });

  it('/metrics is absent when no metrics are given', async () => {
    const base = await serve({ redis });
    expect((await fetch(`${base}/metrics`)).status).toBe(404);
  });
});
