import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import type { FeedDeps } from '../../src/feeds/deps.ts';
import { mirrorLimitsFromConfig } from '../../src/mirror/copy.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { createStorage } from '../../src/storage/index.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { getFeedPublication } from '../../src/store/posts.ts';
import { createLogger } from '../../src/util/logger.ts';
import { activeTraceIds, addSpans, inSpan, startTracing, tracingOn, type Tracing } from '../../src/util/tracing.ts';
import { startFeedWorkers, type RunningFeedWorkers } from '../../jobs/feed-workers.ts';
import { createQueue, QUEUE } from '../../jobs/queues.ts';
import { disableJobTelemetry, enableJobTelemetry, telemetryOptions } from '../../jobs/telemetry.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { until } from '../support/wait.ts';
import { importSimAccount } from '../support/accounts.ts';
import { simPlatformClient } from '../support/sim-platform.ts';

interface ExportedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
}

/** An OTLP/HTTP receiver in this process: what the exporter posts to /v1/traces, as JSON. */
async function startReceiver(): Promise<{ url: string; spans: ExportedSpan[]; close: () => Promise<void> }> {
  const spans: ExportedSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: ExportedSpan[] }> }>;
        };
        for (const rs of body.resourceSpans ?? [])
          for (const ss of rs.scopeSpans ?? []) spans.push(...(ss.spans ?? []));
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('tracing (OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  it('off: nothing is wrapped, no span is made, log lines carry no ids', async () => {
    expect(tracingOn()).toBe(false);
    const target = { put: async () => 1 };
    const put = target.put;
    expect(addSpans(target, 'storage', ['put']).put).toBe(put);
    expect(await inSpan('x', {}, async () => activeTraceIds())).toEqual({});
    expect(telemetryOptions()).toEqual({});
  });

  describe('on', () => {
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    let tracing: Tracing;
    let sim: Simulator;
    let db: pg.Pool;
    let drop: () => Promise<void>;
    let workers: RunningFeedWorkers | undefined;
    const redis = redisForTest('tracing');
    const lines: string[] = [];
    let accountId = '';

    beforeAll(async () => {
      receiver = await startReceiver();
      tracing = await startTracing({ endpoint: receiver.url, serviceName: 'feedmirror-test' });
      await enableJobTelemetry();
      sim = await startSimulator();
      const database = await freshDatabase('tracing');
      drop = database.drop;
      db = addSpans(createPool(database.url, { max: 5 }), 'db', ['query']);
      await migrate(db);
      const config = loadConfig({
        STORAGE_URL: mkdtempSync(join(tmpdir(), 'fm-tracing-')),
        MEDIA_ALLOWED_HOSTS: sim.imageHost,
        MEDIA_VARIANT_WIDTHS: '160',
        MEDIA_PUBLIC_URL: 'http://media.test',
      });
      const storage = addSpans(createStorage(config), 'storage', ['put', 'get', 'head', 'delete']);
      const logger = createLogger({ level: 'info', destination: { write: (s: string) => void lines.push(s) } });
      const cipher = TokenCipher.fromEnv(randomBytes(32).toString('base64'));
      const platform = simPlatformClient(sim, { maxRetries: 0 });
      const deps: FeedDeps = {
        db,
        cipher,
        platform,
        storage,
        limits: mirrorLimitsFromConfig(config),
        clock: sim.clock,
        logger,
      };
      const acc = sim.createAccount({ username: 'traced.shop', posts: [{ kind: 'image', width: 120, height: 150 }] });
      accountId = acc.id;
      await importSimAccount(db, cipher, sim, acc);
      workers = await startFeedWorkers({ ...deps, redis });
    }, 60_000);

    afterAll(async () => {
      await workers?.close();
      for (const name of [QUEUE.feedSync, QUEUE.mirrorMedia, QUEUE.publishFeed]) {
        const q = createQueue(name, redis);
        await q.obliterate({ force: true }).catch(() => undefined);
        await q.close();
      }
      disableJobTelemetry();
      if (tracingOn()) await tracing.shutdown();
      await receiver?.close();
      await sim?.close();
      await db?.end();
      await drop?.();
    });

    it('a sync job traced through BullMQ: platform, storage and database spans in its trace, and log lines with its trace id', async () => {
      const queue = createQueue(QUEUE.feedSync, redis);
      await queue.add('feed-sync', { accountId });
      await until(
        async () => (await getFeedPublication(db, accountId))?.demo === false,
        'the feed to be published',
        30_000,
      );
      await queue.close();
      await tracing.shutdown(); // flushes every span to the receiver
      disableJobTelemetry();

      const names = receiver.spans.map((s) => s.name);
      const listing = receiver.spans.find((s) => s.name === 'platform media list');
      expect(listing, `spans: ${[...new Set(names)].join(', ')}`).toBeDefined();
      // BullMQ's own span of the sync job, and the listing inside it (same trace).
      const syncSpans = receiver.spans.filter((s) => s.name.includes(QUEUE.feedSync) && s.traceId === listing!.traceId);
      expect(syncSpans.length, `spans: ${[...new Set(names)].join(', ')}`).toBeGreaterThan(0);
      expect(receiver.spans.some((s) => s.name === 'db query' && s.traceId === listing!.traceId)).toBe(true);
      expect(names).toContain('storage put');
      // The copy and the publish run as jobs of the same flow: their spans are in the trace too.
      const traceOfPut = receiver.spans.filter((s) => s.name === 'storage put').map((s) => s.traceId);
      expect(traceOfPut).toContain(listing!.traceId);
      // Log lines written inside a span carry its ids.
      const logged = lines.map((l) => JSON.parse(l) as { msg: string; trace_id?: string; span_id?: string });
      const withIds = logged.filter((l) => l.trace_id);
      expect(withIds.length).toBeGreaterThan(0);
      const exported = new Set(receiver.spans.map((s) => s.traceId));
      for (const l of withIds) expect(exported.has(l.trace_id!)).toBe(true);
    }, 60_000);
  });
});
