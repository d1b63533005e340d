import type { Server } from 'node:http';
import type { Express } from 'express';
import type { AppContext } from '../context.ts';
import { createApp } from '../../http/app.ts';
import { isLoopbackHost, resolveDashboardAuth } from '../../http/auth/settings.ts';
import { deriveSessionSecret } from '../../http/auth/signing.ts';
import { invitationUrl, startLogin, type ConnectRoutesDeps } from '../../http/connect.ts';
import type { DashboardConnect } from '../../http/dashboard/index.ts';
import type { OwnerLinkDeps } from '../../alerts/owner-links.ts';
import { emailInvitation } from '../../alerts/invitation-email.ts';
import { RedisSessionStore } from '../../http/auth/session-store.ts';
import { widgetViewsDigestKey } from '../../http/widget-views.ts';
import { ConnectThrottle, LoginThrottle } from '../../http/throttle.ts';
import { createInvitation } from '../../store/invitations.ts';
import { listTokenExpiries } from '../../store/tokens.ts';
import { createMetrics, type AccountVerdict } from '../../metrics/index.ts';
import { loadAccountHealth } from '../../accounts/health.ts';
import { applyHeapGrowthPercent } from '../../util/heap.ts';
import { drainable, type Drainable } from '../../http/drain.ts';

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
  /** Closes every connection at once (tests, the demo). */
  close(): Promise<void>;
  /**
   * The shutdown of `serve`: /serving answers 503, no new connection is accepted, the requests in
   * flight finish for up to `timeoutMs` (SHUTDOWN_TIMEOUT_SECONDS), then the rest is cut off.
   */
  drain(timeoutMs: number): Promise<{ cutOff: number }>;
}

/** Build the app from a context (also used by `npm run demo`, which runs serve and worker in one process). */
export async function buildServeApp(ctx: AppContext, opts: { draining?: () => boolean } = {}): Promise<Express> {
  // First, before touching any service: a misconfigured dashboard is a start-up error.
  // Sessions and throttles live in Redis: every replica shares them, and a logout reaches all.
  const store = { redis: ctx.redisClient, prefix: ctx.redis.prefix };
  const auth = resolveDashboardAuth({
    host: ctx.config.HOST,
    user: ctx.config.DASHBOARD_USER,
    password: ctx.config.DASHBOARD_PASSWORD,
    secret: deriveSessionSecret(ctx.config.SESSION_SECRET, ctx.config.TOKEN_ENCRYPTION_KEY),
    publicUrl: ctx.config.PUBLIC_URL,
    clock: ctx.clock,
    logger: ctx.logger,
    sessions: new RedisSessionStore(ctx.redisClient, ctx.redis.prefix),
    throttle: new LoginThrottle(store),
    sessionIdleMs: ctx.config.SESSION_IDLE_TIMEOUT,
    sessionMaxMs: ctx.config.SESSION_MAX_LIFETIME,
  });
  // No Redis check here: serve starts without it and says so (/readyz, a 503 in words on the
  // dashboard), since sessions and queues come back with it.
  const db = await ctx.migratedDb();
  const queues = ctx.queues;
  // Token days left change slowly: read them at most once a minute, not on every scrape.
  let expiries: { at: number; rows: Array<{ accountId: string; expiresAt: Date }> } | undefined;
  let verdicts: { at: number; rows: AccountVerdict[] } | undefined;
  const metrics = createMetrics({
    queues: Object.values(queues),
    clock: ctx.clock,
    tokenExpiries: async () => {
      const now = ctx.clock.now().getTime();
      if (!expiries || now - expiries.at >= 60_000) {
        expiries = { at: now, rows: await listTokenExpiries(db) };
      }
      return expiries.rows;
    },
    // R-HLT-1: the verdict the dashboard shows, computed by the same function; read at most every
    // 15 s (10,000 accounts take about a second), so scrapes from several Prometheus servers share it.
    accountHealth: async () => {
      const now = ctx.clock.now().getTime();
      if (!verdicts || now - verdicts.at >= 15_000 || now < verdicts.at) {
        const list = await loadAccountHealth(db, {
          now: ctx.clock.now(),
          syncIntervalMs: ctx.config.SYNC_INTERVAL_MINUTES * 60_000,
          apiVersion: { version: ctx.config.GRAPH_API_VERSION, warnDays: ctx.config.PLATFORM_VERSION_WARN_DAYS },
        });
        verdicts = { at: now, rows: list.map((a) => ({ accountId: a.facts.accountId, verdict: a.health.verdict })) };
      }
      return verdicts.rows;
    },
  });
  // /metrics names accounts and their days left: open only when nothing but this machine can
  // reach the server (loopback, no proxy in front); otherwise it needs METRICS_TOKEN.
  const loopbackOnly = isLoopbackHost(ctx.config.HOST) && ctx.config.TRUST_PROXY === false;
  const metricsAccess = ctx.config.METRICS_TOKEN
    ? { bearer: ctx.config.METRICS_TOKEN }
    : loopbackOnly
      ? ('open' as const)
      : ('off' as const);
  if (metricsAccess === 'off')
    ctx.logger.warn(
      'METRICS_TOKEN is not set and serve is reachable from other machines: /metrics is off (set METRICS_TOKEN and give it to Prometheus as a bearer token)',
    );
  const publicUrl = ctx.config.PUBLIC_URL.replace(/\/+$/, '');
  let connect: ConnectRoutesDeps | undefined;
  // The default app (APP_ID/APP_SECRET), or any app added with `feedmirror apps add`.
  const { listApps } = await import('../../store/apps.ts');
  if ((ctx.config.APP_ID && ctx.config.APP_SECRET) || (await listApps(db)).length > 0) {
    connect = {
      db,
      cipher: ctx.cipher,
      platform: ctx.platform,
      apps: ctx.apps,
      clock: ctx.clock,
      logger: ctx.logger,
      appId: ctx.config.APP_ID ?? '',
      authorizeUrl: ctx.config.AUTHORIZE_URL,
      publicUrl: ctx.config.PUBLIC_URL,
      // The lifecycle makes the account active and schedules it (R-TOK-8).
      lifecycle: ctx.lifecycle,
      open: ctx.config.CONNECT_OPEN,
      throttle: new ConnectThrottle(store),
      brand: ctx.brand,
      feedUrl: (accountId) => `${publicUrl}/feeds/${encodeURIComponent(accountId)}.json`,
      // account.reconnected when an account that needed its owner connects again (R-OWN-14).
      events: ctx.events,
    };
  } else {
    ctx.logger.warn(
      'APP_ID and APP_SECRET are not set: /connect and /callback are off (accounts can still be added with `feedmirror accounts add`)',
    );
  }
  if (ctx.storage.kind === 'local' && !ctx.config.MEDIA_PUBLIC_URL) {
    ctx.logger.warn(
      `local storage without MEDIA_PUBLIC_URL: feeds carry file:// image addresses that browsers cannot load; set MEDIA_PUBLIC_URL=${publicUrl}`,
    );
  }
  const c = connect;
  const dashboardConnect: DashboardConnect | undefined = c
    ? {
        start: () => startLogin(c),
        invite: async (ttlMs, owner, opts = {}) => {
          const inv = await createInvitation(db, ctx.clock.now(), ttlMs, 'dashboard', owner, opts.app ?? null);
          const url = invitationUrl(publicUrl, inv.token);
          // Emailed with the alerts' mailer and templates, made at the first email (serve starts
          // whatever the SMTP settings say); a failure is said on the page, the link shown to copy.
          const email =
            opts.send && owner
              ? await emailInvitation(
                  {
                    db,
                    mailer: { send: (msg) => ctx.mailer.send(msg) },
                    clock: ctx.clock,
                    logger: ctx.logger,
                    emailTemplates: ctx.emailTemplates,
                    brand: ctx.brand,
                  },
                  { hash: inv.hash, url, expiresAt: inv.expiresAt, owner },
                )
              : null;
          return { url, expiresAt: inv.expiresAt, email };
        },
      }
    : undefined;
  return createApp({
    logger: ctx.logger,
    trustProxy: ctx.config.TRUST_PROXY,
    publicUrl: ctx.config.PUBLIC_URL,
    storage: ctx.storage,
    publishStatus: ctx.config.PUBLISH_STATUS,
    serveLocalFiles: true,
    health: {
      redis: ctx.redisClient,
      db,
      storage: ctx.storage,
      metrics,
      metricsAccess,
      clock: ctx.clock,
      logger: ctx.logger,
      ...(opts.draining ? { draining: opts.draining } : {}),
    },
    ...(connect ? { connect } : {}),
    // R-WID-7: views are counted only when documents tell the script where to send them.
    ...(ctx.config.WIDGET_VIEWS_URL
      ? {
          widgetViews: {
            db,
            clock: ctx.clock,
            logger: ctx.logger,
            perMinute: ctx.config.WIDGET_VIEWS_PER_MINUTE,
            perClientPerHour: ctx.config.WIDGET_VIEWS_PER_CLIENT,
            // One window per widget and client for every serve process, kept across restarts.
            redis: ctx.redisClient,
            prefix: ctx.redis.prefix,
            digestKey: widgetViewsDigestKey(ctx.config.SESSION_SECRET, ctx.config.TOKEN_ENCRYPTION_KEY),
          },
        }
      : {}),
    dashboard: {
      auth,
      db,
      queues,
      lifecycle: ctx.lifecycle,
      storage: ctx.storage,
      clock: ctx.clock,
      logger: ctx.logger,
      ...(dashboardConnect ? { connect: dashboardConnect } : {}),
      ...(ctx.config.APP_ID ? { defaultAppId: ctx.config.APP_ID } : {}),
      webhooks: { cipher: ctx.cipher, allowPrivate: ctx.config.WEBHOOK_ALLOW_PRIVATE },
      // R-OWN-7: the dashboard's "Confirm" is `feedmirror feeds confirm-removal`, in this process.
      removals: {
        confirm: async (accountId) => {
          const { confirmHeldRemoval } = await import('../../feeds/removal.ts');
          return confirmHeldRemoval(await ctx.feedDeps(), accountId);
        },
      },
      syncIntervalMs: ctx.config.SYNC_INTERVAL_MINUTES * 60_000,
      apiVersion: { version: ctx.config.GRAPH_API_VERSION, warnDays: ctx.config.PLATFORM_VERSION_WARN_DAYS },
      widgets: { ...ctx.widgetDeps, db },
      // R-OWN-17: "Hide from the feed" is `feedmirror feeds hide`, in this process.
      feedHides: {
        hide: async (accountId, postId) => {
          const { hidePostFromFeed } = await import('../../feeds/hide.ts');
          return hidePostFromFeed(await ctx.feedDeps(), accountId, postId);
        },
        unhide: async (accountId, postId) => {
          const { unhidePostFromFeed } = await import('../../feeds/hide.ts');
          return unhidePostFromFeed(await ctx.feedDeps(), accountId, postId);
        },
      },
      ownerAlertsOn: ctx.config.OWNER_ALERTS,
      // A new reconnect link from the page of an account waiting for its owner (R-OWN-12).
      // The mailer is made at the first email (serve starts whatever the SMTP settings say).
      ownerLinks: {
        ...ownerLinkDeps(ctx),
        db,
      },
    },
  });
}

/** What the dashboard's reconnect links need; the mailer is created only when one is emailed. */
function ownerLinkDeps(ctx: AppContext): Omit<OwnerLinkDeps, 'db'> {
  return {
    mailer: { send: (msg) => ctx.mailer.send(msg) },
    clock: ctx.clock,
    logger: ctx.logger,
    publicUrl: ctx.config.PUBLIC_URL,
    events: ctx.events,
    linkTtlMs: ctx.config.RECONNECT_LINK_TTL,
    emailTemplates: ctx.emailTemplates,
    brand: ctx.brand,
  };
}

export async function startServer(ctx: AppContext): Promise<RunningServer> {
  applyHeapGrowthPercent(ctx.config.HEAP_GROWTH_PERCENT);
  const shutdown: { drain?: Drainable } = {};
  const app = await buildServeApp(ctx, { draining: () => shutdown.drain?.draining === true });
  const server = app.listen(ctx.config.PORT, ctx.config.HOST);
  const drain = drainable(server);
  shutdown.drain = drain;
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  // R-DEL-1: as a worker's start, in the background: serve starts whether storage answers or not.
  void ctx
    .claimStorage()
    .catch((err: unknown) =>
      ctx.logger.warn({ err }, "could not read or write the storage's deployment marker at start"),
    );
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
    drain: (timeoutMs) => drain.drain(timeoutMs),
  };
}
