import type { Server } from 'node:http';
import type { Express } from 'express';
import type { AppContext } from '../context.ts';
import { createApp } from '../../http/app.ts';
import { resolveDashboardAuth } from '../../http/auth.ts';
import type { ConnectRoutesDeps } from '../../http/connect.ts';
import { scheduleAccount } from '../../../jobs/catalogue.ts';
import { createMetrics } from '../../metrics/index.ts';
import { applyHeapGrowthPercent } from '../../util/heap.ts';

/**
 * `feedmirror serve`: health/readiness/metrics, the feed API, connect/callback (when APP_ID and
 * APP_SECRET are set), the local storage's public files, and the operator dashboard with
 * bull-board. Refuses to start on a non-loopback HOST without DASHBOARD_USER/DASHBOARD_PASSWORD.
 */
export interface RunningServer {
  server: Server;
  /** http://host:port as bound (port 0 resolved). */
  url: string;
  dashboardUrl: string;
  close(): Promise<void>;
}

/** Build the app from a context (also used by `npm run demo`, which runs serve and worker in one process). */
export async function buildServeApp(ctx: AppContext): Promise<Express> {
  // First, before touching any service: a misconfigured dashboard is a start-up error.
  const auth = resolveDashboardAuth({
    host: ctx.config.HOST,
    user: ctx.config.DASHBOARD_USER,
    password: ctx.config.DASHBOARD_PASSWORD,
    secret: ctx.config.TOKEN_ENCRYPTION_KEY,
    publicUrl: ctx.config.PUBLIC_URL,
    clock: ctx.clock,
    logger: ctx.logger,
  });
  const db = await ctx.migratedDb();
  const queues = ctx.queues;
  const metrics = createMetrics({
    queues: Object.values(queues),
    clock: ctx.clock,
    tokenExpiries: async () => {
      const { rows } = await db.query<{ account_id: string; expires_at: Date }>('SELECT account_id, expires_at FROM tokens');
      return rows.map((r) => ({ accountId: r.account_id, expiresAt: r.expires_at }));
    },
  });
  const publicUrl = ctx.config.PUBLIC_URL.replace(/\/+$/, '');
  let connect: ConnectRoutesDeps | undefined;
  if (ctx.config.APP_ID && ctx.config.APP_SECRET) {
    connect = {
      db,
      cipher: ctx.cipher,
      platform: ctx.platform,
      clock: ctx.clock,
      logger: ctx.logger,
      appId: ctx.config.APP_ID,
      authorizeUrl: ctx.config.AUTHORIZE_URL,
      publicUrl: ctx.config.PUBLIC_URL,
      onConnected: async (account) => scheduleAccount(queues, account.id, ctx.schedules),
    };
  } else {
    ctx.logger.warn('APP_ID and APP_SECRET are not set: /connect and /callback are off (accounts can still be added with `feedmirror accounts add`)');
  }
  if (ctx.storage.kind === 'local' && !ctx.config.MEDIA_PUBLIC_URL) {
    ctx.logger.warn(`local storage without MEDIA_PUBLIC_URL: feeds carry file:// image addresses that browsers cannot load; set MEDIA_PUBLIC_URL=${publicUrl}`);
  }
  return createApp({
    logger: ctx.logger,
    storage: ctx.storage,
    serveLocalFiles: true,
    health: { redis: ctx.redisClient, db, storage: ctx.storage, metrics, logger: ctx.logger },
    ...(connect ? { connect } : {}),
    dashboard: {
      auth,
      db,
      queues,
      storage: ctx.storage,
      clock: ctx.clock,
      logger: ctx.logger,
      ...(connect ? { connectUrl: `${publicUrl}/connect` } : {}),
    },
  });
}

export async function startServer(ctx: AppContext): Promise<RunningServer> {
  applyHeapGrowthPercent(ctx.config.HEAP_GROWTH_PERCENT);
  const app = await buildServeApp(ctx);
  const server = app.listen(ctx.config.PORT, ctx.config.HOST);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : ctx.config.PORT;
  const host = ctx.config.HOST.includes(':') ? `[${ctx.config.HOST}]` : ctx.config.HOST;
  const url = `http://${host}:${port}`;
  return {
    server,
    url,
    dashboardUrl: `${url}/dashboard`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
