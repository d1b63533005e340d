import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis, type RedisClient } from '../../jobs/queues.ts';
import { createApp } from '../../src/http/app.ts';
import { widgetViewsDigestKey, type WidgetViewsDeps } from '../../src/http/widget-views.ts';
import { upsertAccount } from '../../src/store/accounts.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { insertWidget } from '../../src/store/widgets.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { createLogger } from '../../src/util/logger.ts';
import { widgetOptionsSchema } from '../../src/schema/widget-document.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';

/**
 * R-WID-7, the views beacon of `serve` against real PostgreSQL and Redis: several serve processes
 * (each its own app, router and Redis connection, as separate processes have) count against the
 * same windows; one client can neither inflate a widget's count past its own bound nor use up the
 * widget's budget so that other visitors go uncounted; a restarted process keeps the windows; and
 * while Redis is unreachable a view is answered at once (204) and goes uncounted, then counting
 * resumes when Redis is back.
 */
const WIDGET = 'w_viewsaaaaa';
const OTHER = 'w_viewsbbbbb';
const THIRD = 'w_viewsccccc';
const clock = new ManualClock(new Date('2026-03-02T10:00:00Z'));
const lines: string[] = [];
const logger = createLogger({
  level: 'info',
  destination: new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  }),
});
let db: pg.Pool;
let drop: () => Promise<void>;
let redis: ReturnType<typeof redisForTest>;
const clients: RedisClient[] = [];
const servers: Server[] = [];
let proxy: TcpProxy;

/** One `serve` process: its own app, router and Redis connection; the same database and prefix. */
async function serveProcess(
  over: Partial<WidgetViewsDeps> & { redisUrl?: string } = {},
): Promise<{ url: string; close: () => Promise<void> }> {
  const client = createRedis({ url: over.redisUrl ?? redis.url });
  client.on('error', () => {});
  clients.push(client);
  // As in a serve process that has been up a moment: its Redis connection is ready.
  if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
  const app = createApp({
    logger,
    trustProxy: 1,
    widgetViews: {
      db,
      clock,
      logger,
      perMinute: 5,
      perClientPerHour: 3,
      redis: client,
      prefix: redis.prefix,
      digestKey: widgetViewsDigestKey('a session secret of at least thirty-two characters'),
      ...over,
    },
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  servers.push(server);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      client.disconnect();
    },
  };
}

/** A view from `client` (its address, as the proxy in front names it). */
function view(base: string, widget: string, client: string, method: 'POST' | 'GET' = 'POST') {
  return fetch(`${base}/w/${widget}/view`, { method, headers: { 'x-forwarded-for': client } });
}

async function counted(widget: string): Promise<number> {
  const { rows } = await db.query<{ count: string }>('SELECT count FROM widget_views WHERE widget_id = $1', [widget]);
  return rows.reduce((n, r) => n + Number(r.count), 0);
}

beforeAll(async () => {
  const fresh = await freshDatabase('widgetviews');
  drop = fresh.drop;
  db = createPool(fresh.url, { max: 4 });
  await migrate(db);
  redis = redisForTest('widget-views');
  await upsertAccount(db, { id: '17841400000000901', username: 'views.shop' }, clock.now());
  for (const id of [WIDGET, OTHER, THIRD])
    await insertWidget(
      db,
      { id, name: id, layout: 'grid', options: widgetOptionsSchema.parse({}), accountIds: ['17841400000000901'] },
      clock.now(),
    );
  const u = new URL(redis.url);
  proxy = await startTcpProxy({ host: u.hostname, port: Number(u.port || 6379) });
}, 60_000);

afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
  for (const c of clients) c.disconnect();
  await proxy?.close();
  const cleanup = createRedis({ url: redis.url });
  const keys = await cleanup.keys(`${redis.prefix}:*`);
  if (keys.length) await cleanup.del(...keys);
  cleanup.disconnect();
  await db?.end();
  await drop?.();
});

describe('widget views (R-WID-7): shared, bounded per client, kept across restarts, never an error', () => {
  it('one client counts at most its bound and cannot use up the widget’s budget; two serve processes share the windows; a restart keeps them', async () => {
    const a = await serveProcess();
    const b = await serveProcess();
    // One client hammers the widget through both processes: 3 count (its bound), the rest are answered.
    for (let i = 0; i < 12; i++) expect((await view(i % 2 ? a.url : b.url, WIDGET, '198.51.100.7')).status).toBe(204);
    expect(await counted(WIDGET)).toBe(3);
    // The same client from another address of its IPv6 /64 is the same client (R-NET-3).
    expect((await view(a.url, WIDGET, '2001:db8:1:2::1')).status).toBe(204);
    expect((await view(b.url, WIDGET, '2001:db8:1:2::ffff')).status).toBe(204);
    expect((await view(a.url, WIDGET, '2001:db8:1:2::42')).status).toBe(204);
    expect((await view(b.url, WIDGET, '2001:db8:1:2::43')).status).toBe(204);
    expect(await counted(WIDGET)).toBe(5);
    // The widget's budget (5 a minute) is one for both processes: a third visitor is not counted.
    expect((await view(a.url, WIDGET, '203.0.113.9')).status).toBe(204);
    expect(await counted(WIDGET)).toBe(5);
    // Another widget has its own budget; the hammering client still has its bound there.
    for (let i = 0; i < 4; i++) await view(b.url, OTHER, '198.51.100.7', 'GET');
    expect(await counted(OTHER)).toBe(3);

    // A process restarts: the windows are in Redis, not in the process that went away.
    await a.close();
    const a2 = await serveProcess();
    await view(a2.url, OTHER, '198.51.100.7');
    expect(await counted(OTHER)).toBe(3);
    await view(a2.url, OTHER, '192.0.2.10');
    expect(await counted(OTHER)).toBe(4);
    // No address and no digest of one is kept in a key, and every key expires.
    const probe = createRedis({ url: redis.url });
    const keys = await probe.keys(`${redis.prefix}:widget-views:*`);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.join(' ')).not.toMatch(/198\.51|203\.0|2001:db8|192\.0/);
    for (const k of keys) expect(await probe.pttl(k)).toBeGreaterThan(0);
    probe.disconnect();
    await b.close();
    await a2.close();
  });

  it('while Redis is unreachable a view is answered 204 at once and not counted; counting resumes when it is back', async () => {
    const before = await counted(THIRD);
    const p = await serveProcess({ redisUrl: `redis://127.0.0.1:${proxy.port}` });
    expect((await view(p.url, THIRD, '192.0.2.20')).status).toBe(204);
    expect(await counted(THIRD)).toBe(before + 1);
    await proxy.down();
    const started = Date.now();
    for (let i = 0; i < 5; i++) expect((await view(p.url, THIRD, `192.0.2.${30 + i}`)).status).toBe(204);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await counted(THIRD)).toBe(before + 1);
    // Said once for the outage, not once per view.
    expect(lines.filter((l) => l.includes('widget views are not counted for now'))).toHaveLength(1);
    await proxy.up();
    await expect
      .poll(
        async () => {
          await view(p.url, THIRD, '192.0.2.99');
          return counted(THIRD);
        },
        { timeout: 20_000, interval: 500 },
      )
      .toBeGreaterThan(before + 1);
    expect(lines.some((l) => l.includes('widget views are counted again'))).toBe(true);
    await p.close();
  });
});
