import type pg from 'pg';
import { redactText } from '../util/redact.ts';
import { loadConfig, type Config } from '../config.ts';
import type { Logger } from '../util/logger.ts';
import { loggerFor, type LogTarget } from './log-setup.ts';
import { clockFromEnv, type Clock, HOUR, MINUTE, DAY } from '../util/clock.ts';
import { PlatformClient, type PlatformCallObserver, type PlatformClientOptions } from '../platform/client.ts';
import { AccountCallPacer } from '../../jobs/call-pacer.ts';
import type { CallPacer } from '../platform/pacing.ts';
import { createPool } from '../store/db.ts';
import { migrate } from '../store/migrate.ts';
import { TokenCipher } from '../store/crypto.ts';
import { createMailer, type Mailer } from '../alerts/mailer.ts';
import { loadEmailTemplates, type EmailTemplates } from '../alerts/templates.ts';
import { brandFromSettings, type Brand } from '../util/brand.ts';
import {
  createQueues,
  pingRedis,
  redisOutage,
  redisUnavailable,
  type Queues,
  type RedisOutage,
  type RedisSettings,
} from '../../jobs/queues.ts';
import { accountSchedules, type ScheduleSettings } from '../../jobs/schedules.ts';
import { AccountLifecycle, type AccountSchedules } from '../accounts/lifecycle.ts';
import { alertReauthRequired, type SweepDeps } from '../alerts/sweep.ts';
import type { OwnerAlertSettings } from '../alerts/owner.ts';
import { statusPublisher, type StatusPublisher } from '../accounts/status-document.ts';
import { createStorage, type ObjectStorage } from '../storage/index.ts';
import { mirrorLimitsFromConfig } from '../mirror/copy.ts';
import type { FeedDeps } from '../feeds/deps.ts';
import { redisClient, redisSettings, type RedisClient } from '../../jobs/queues.ts';
import { webhookEventSink } from '../../jobs/webhook-events.ts';
import type { EventSink } from '../webhooks/events.ts';
import { createMetrics, type Metrics } from '../metrics/index.ts';
import { platformCallObserver } from '../metrics/observe.ts';
import { widgetRepublisher, type WidgetDeps } from '../widgets/publish.ts';
import type { DeleteCap } from '../deletion/guard.ts';
import { appClients, type PlatformApps } from '../accounts/apps.ts';
import { DEFAULT_APP } from '../store/apps.ts';

/**
 * The composition root: builds what a command needs from the configuration, each piece only
 * when asked for, and closes all of it at the end.
 */
export class AppContext {
  readonly config: Config;
  readonly logger: Logger;
  readonly clock: Clock;
  private closers: Array<() => Promise<unknown>> = [];
  private _db?: pg.Pool;
  private _cipher?: TokenCipher;
  private _platform?: PlatformClient;
  private _pacer?: AccountCallPacer;
  private _apps?: PlatformApps;
  private _mailer?: Mailer;
  private _emailTemplates?: EmailTemplates;
  private _queues?: Queues;
  private _storage?: ObjectStorage;
  private _redisClient?: RedisClient;
  private _metrics?: Metrics;
  private _lifecycle?: AccountLifecycle;
  private _redisChecked?: Promise<void>;
  private _storageChecked?: Promise<void>;
  private _events?: EventSink;
  private _status?: StatusPublisher;

  constructor(
    /** The environment the configuration was read from (`feedmirror doctor`'s checks at start read it too). */
    readonly env: NodeJS.ProcessEnv = process.env,
    opts: { logger?: Logger; clock?: Clock; logTo?: LogTarget } = {},
  ) {
    this.config = loadConfig(env);
    // Without a target: JSON on standard error, as worker and serve log (./log-setup.ts).
    this.logger = opts.logger ?? loggerFor(this.config, opts.logTo ?? { role: 'service' });
    this.clock = opts.clock ?? clockFromEnv(env);
  }

  get redis(): RedisSettings {
    return redisSettings(this.config);
  }

  get db(): pg.Pool {
    if (!this._db) {
      // 5 s to connect: a database that does not answer is an error within seconds, not a hang.
      const pool = createPool(this.config.DATABASE_URL, { logger: this.logger, connectionTimeoutMillis: 5_000 });
      this._db = pool;
      this.closers.push(() => pool.end());
    }
    return this._db;
  }

  /** Migrate (safe from several processes at once) and return the pool. */
  async migratedDb(): Promise<pg.Pool> {
    await migrate(this.db, { logger: this.logger });
    return this.db;
  }

  get cipher(): TokenCipher {
    // A missing or malformed key is a clear start-up error (EncryptionKeyError), never later.
    this._cipher ??= TokenCipher.fromEnv(this.config.TOKEN_ENCRYPTION_KEY);
    return this._cipher;
  }

  /** R-OWN-1: each account's calls in any hour, and each app's holds, counted in Redis for every process. */
  get pacer(): AccountCallPacer {
    this._pacer ??= new AccountCallPacer({
      callsPerHour: this.config.PLATFORM_CALLS_PER_ACCOUNT_HOUR,
      prefix: this.redis.prefix,
      redis: () => this.redisClient,
      holdClock: this.clock,
    });
    return this._pacer;
  }

  /** The platform's client for one app (the default app's with APP_ID/APP_SECRET). */
  private appPlatform(app: {
    name: string;
    appId?: string | undefined;
    appSecret?: string | undefined;
  }): PlatformClient {
    const observer: PlatformCallObserver = {
      onCall: (operation, outcome) => {
        if (this._metrics) platformCallObserver(this._metrics).onCall(operation, outcome);
      },
    };
    return platformFromConfig(
      { ...this.config, APP_ID: app.appId, APP_SECRET: app.appSecret },
      {
        clock: this.clock,
        logger: this.logger,
        observer,
        // One app's holds (code 4, high X-App-Usage) never hold another app's accounts.
        pacer: namingRedis(this.pacer.forApp(app.name), this.redis),
        app: app.name,
      },
    );
  }

  /**
   * Every app's client (Standard Access: one app per client): data calls through the account's
   * own app, exchanges with the app's secret opened from PostgreSQL, an app's fault recorded
   * against it. APP_ID/APP_SECRET stay the default app (`platform`).
   */
  get apps(): PlatformApps {
    this._apps ??= appClients({
      db: this.db,
      cipher: () => this.cipher,
      clock: this.clock,
      logger: this.logger,
      defaultClient: this.platform,
      make: (app) => this.appPlatform(app),
      onFault: async (app, error) => {
        const { alertAppFault } = await import('../alerts/app-fault.ts');
        await alertAppFault(this.alertDeps, app, error).catch((err: unknown) =>
          this.logger.warn({ err, app }, 'the app fault alert could not be sent; the fault stays recorded'),
        );
      },
    });
    return this._apps;
  }

  get platform(): PlatformClient {
    // Calls are counted once this context's metrics exist (the worker creates them first);
    // commands that never ask for metrics pay nothing.
    const observer: PlatformCallObserver = {
      onCall: (operation, outcome) => {
        if (this._metrics) platformCallObserver(this._metrics).onCall(operation, outcome);
      },
    };
    // R-OWN-1: every process counts each account's calls in Redis (one count for all workers);
    // the client connects only when a call is paced, so commands that never list pay nothing.
    this._platform ??= platformFromConfig(this.config, {
      clock: this.clock,
      logger: this.logger,
      observer,
      pacer: namingRedis(this.pacer.forApp(DEFAULT_APP), this.redis),
      app: DEFAULT_APP,
    });
    return this._platform;
  }

  /**
   * A platform client on another API version (R-MED-13: `feedmirror platform compare` reads the
   * same media through the pinned version and a candidate), paced like the pinned one's (R-OWN-1).
   */
  platformAt(version: string): PlatformClient {
    if (version === this.config.GRAPH_API_VERSION) return this.platform;
    return platformFromConfig(
      { ...this.config, GRAPH_API_VERSION: version },
      {
        clock: this.clock,
        logger: this.logger,
        pacer: namingRedis(
          new AccountCallPacer({
            callsPerHour: this.config.PLATFORM_CALLS_PER_ACCOUNT_HOUR,
            prefix: this.redis.prefix,
            redis: () => this.redisClient,
          }),
          this.redis,
        ),
      },
    );
  }

  /**
   * This process's own counters (platform calls, copies, sync durations, job failures, rate-limit
   * waits): what `feedmirror worker` serves on METRICS_PORT. Cluster-wide figures (jobs by state,
   * token days left) are the server's, so they are not read here and never double-counted.
   */
  get metrics(): Metrics {
    this._metrics ??= createMetrics({ clock: this.clock });
    return this._metrics;
  }

  get mailer(): Mailer {
    this._mailer ??= createMailer(this.config, this.logger, { clock: this.clock });
    return this._mailer;
  }

  /** One warning when Redis goes away, one line when it is back, for every queue and client of this context. */
  get redisOutage(): RedisOutage {
    return redisOutage(this.redis, this.logger);
  }

  /**
   * Fail fast when Redis is not there: one connection attempt (at most 3 s), then a
   * ServiceUnavailableError naming REDIS_URL's host and port. Commands call it before they queue
   * anything, because BullMQ would otherwise wait for Redis for ever.
   */
  async ensureRedis(): Promise<void> {
    this._redisChecked ??= pingRedis(this.redis);
    await this._redisChecked;
  }

  /** Fail fast when the storage cannot be reached (bucket or folder); StorageUnavailableError names it. */
  async ensureStorage(): Promise<ObjectStorage> {
    this._storageChecked ??= this.storage.ping();
    await this._storageChecked;
    return this.storage;
  }

  /**
   * Fail fast when SMTP_URL is set and its server does not answer (5 s): one line naming it, never
   * its password. Without SMTP_URL mail goes to OUTBOX_DIR and there is nothing to check.
   */
  async ensureSmtp(): Promise<void> {
    if (!this.config.SMTP_URL) return;
    const { smtpOptions } = await import('../alerts/mailer.ts');
    const nodemailer = (await import('nodemailer')).default;
    const { ServiceUnavailableError } = await import('../util/unavailable.ts');
    const options = {
      ...smtpOptions(this.config.SMTP_URL),
      connectionTimeout: 5_000,
      greetingTimeout: 5_000,
      socketTimeout: 5_000,
    };
    const transport = nodemailer.createTransport(options);
    try {
      await transport.verify();
    } catch (err) {
      const message = redactText((err as Error).message);
      const code = /\bE[A-Z]{4,}\b/.exec(message)?.[0] ?? 'no answer';
      throw new ServiceUnavailableError(
        'SMTP',
        `cannot reach SMTP at ${options.host}:${options.port} (${code}); check SMTP_URL`,
        { cause: err },
      );
    } finally {
      transport.close();
    }
  }

  /** The queues, once Redis answered (see ensureRedis). */
  async readyQueues(): Promise<Queues> {
    await this.ensureRedis();
    return this.queues;
  }

  /** Every queue (the dashboard and the metrics show them all; enqueue needs the right one). */
  get queues(): Queues {
    if (!this._queues) {
      const q = createQueues(this.redis, this.redisOutage);
      this._queues = q;
      // Bounded: a queue whose Redis went away would otherwise wait for it for ever on close.
      this.closers.push(() =>
        Promise.all(Object.values(q).map((x) => bounded(x.close(), 3_000, () => x.disconnect()))),
      );
    }
    return this._queues;
  }

  get storage(): ObjectStorage {
    this._storage ??= createStorage(this.config);
    return this._storage;
  }

  /** A plain Redis client (readiness checks); BullMQ makes its own. */
  get redisClient(): RedisClient {
    if (!this._redisClient) {
      const c = redisClient(this.redis, this.redisOutage);
      this._redisClient = c;
      this.closers.push(() => bounded(c.quit(), 3_000, () => c.disconnect()).catch(() => c.disconnect()));
    }
    return this._redisClient;
  }

  /**
   * Every account state change goes through this (connect, refresh, sync, sweep, remove): the
   * schedules on this context's queues, reauth emails through its mailer. Call after migratedDb().
   */
  /** Webhook events from this process (recorded in Postgres, delivered by the workers' queue). */
  get events(): EventSink {
    this._events ??= webhookEventSink({ db: this.db, queues: this.queues, clock: this.clock, logger: this.logger });
    return this._events;
  }

  /**
   * The email templates: the built-in ones with EMAIL_TEMPLATES_DIR laid over them, checked once
   * (an unusable file is an EmailTemplateError naming it; worker and serve meet it in preflight).
   */
  get emailTemplates(): EmailTemplates {
    this._emailTemplates ??= loadEmailTemplates(this.config.EMAIL_TEMPLATES_DIR);
    return this._emailTemplates;
  }

  /** BRAND_*: the look of the emails and the owner pages. */
  get brand(): Brand {
    return brandFromSettings(this.config);
  }

  /** What sends alerts: the mailer and the webhook events, as the worker's daily sweep has them. */
  get alertDeps(): SweepDeps {
    return {
      db: this.db,
      mailer: this.mailer,
      clock: this.clock,
      logger: this.logger,
      publicUrl: this.config.PUBLIC_URL,
      events: this.events,
      emailTemplates: this.emailTemplates,
      brand: this.brand,
      owners: this.ownerAlerts,
    };
  }

  /** OWNER_ALERTS and RECONNECT_LINK_TTL (R-OWN-11); the owner's emails carry BRAND_* like every email. */
  get ownerAlerts(): OwnerAlertSettings {
    return { enabled: this.config.OWNER_ALERTS, linkTtlMs: this.config.RECONNECT_LINK_TTL };
  }

  get lifecycle(): AccountLifecycle {
    this._lifecycle ??= new AccountLifecycle({
      db: this.db,
      clock: this.clock,
      logger: this.logger,
      // Bounded: Redis answered a moment ago (readyQueues); if a schedule takes longer it went
      // away, and BullMQ would wait for it for ever. The lifecycle logs the failure and the
      // worker's reconciler makes the schedules from PostgreSQL.
      schedules: boundedSchedules(accountSchedules(this.queues, this.schedules), SCHEDULE_TIMEOUT_MS),
      events: this.events,
      alertReauth: (accountId) => alertReauthRequired(this.alertDeps, accountId),
      // R-WID-5: a removed account leaves its widgets; one whose owner must act makes them stale.
      accountChanged: widgetRepublisher(this.widgetDeps),
      ...(this._metrics ? { transitions: this._metrics.accountTransitions } : {}),
      // R-OWN-16: written while PUBLISH_STATUS is on, deleted with the account whatever it says now.
      status: this.statusDocuments,
    });
    return this._lifecycle;
  }

  /**
   * The public status documents, one publisher for every path (R-OWN-16): `publish` writes only
   * with PUBLISH_STATUS=on; `remove` deletes also when it is off (a document written while it
   * was on must not outlive its account).
   */
  get statusDocuments(): StatusPublisher {
    this._status ??= statusPublisher(
      { db: this.db, storage: this.storage, clock: this.clock, logger: this.logger },
      { publishing: this.config.PUBLISH_STATUS },
    );
    return this._status;
  }

  /** What the feed pipeline needs (sync, copy, publish). */
  async feedDeps(): Promise<FeedDeps> {
    return {
      db: await this.migratedDb(),
      cipher: this.cipher,
      platform: this.platform,
      apps: this.apps,
      storage: this.storage,
      limits: mirrorLimitsFromConfig(this.config),
      clock: this.clock,
      logger: this.logger,
      copyrightItems: this.config.COPYRIGHT_ITEMS,
      lifecycle: this.lifecycle,
      events: this.events,
      listingMaxItems: this.config.LISTING_MAX_ITEMS,
      deleteCap: this.deleteCap,
      // R-WID-5: every feed publication (and failed sync) republishes the account's widgets.
      sourceChanged: widgetRepublisher(this.widgetDeps),
      ...(this.config.PUBLISH_STATUS ? { status: this.statusDocuments } : {}),
    };
  }

  /** R-DEL-4: the deletion guard's cap (DELETE_CAP_OBJECTS, DELETE_CAP_SHARE). */
  get deleteCap(): DeleteCap {
    return { objects: this.config.DELETE_CAP_OBJECTS, share: this.config.DELETE_CAP_SHARE };
  }

  /**
   * R-DEL-1: at the start of worker, serve and `sync --wait`, the storage's deployment marker
   * written when the storage may be taken as this deployment's; one line says what stands.
   */
  async claimStorage(): Promise<void> {
    const { claimAtStart } = await import('../deletion/marker.ts');
    // Callers have migrated the database already (the deployment's id is a migration's).
    await claimAtStart({ db: this.db, storage: this.storage, clock: this.clock, logger: this.logger });
  }

  /** What widgets are published with: the CLI, the dashboard and the worker alike. */
  get widgetDeps(): WidgetDeps {
    return {
      db: this.db,
      storage: this.storage,
      clock: this.clock,
      logger: this.logger,
      ...(this.config.WIDGET_VIEWS_URL ? { viewsBaseUrl: this.config.WIDGET_VIEWS_URL } : {}),
    };
  }

  get schedules(): ScheduleSettings {
    return {
      refreshCheckEveryMs: this.config.REFRESH_CHECK_HOURS * HOUR,
      syncEveryMs: this.config.SYNC_INTERVAL_MINUTES * MINUTE,
    };
  }

  get refreshAfterMs(): number {
    return this.config.REFRESH_AFTER_DAYS * DAY;
  }

  /** App id and secret are needed only to connect accounts; say so when they are missing. */
  requireApp(): { appId: string; appSecret: string } {
    const { APP_ID, APP_SECRET } = this.config;
    if (!APP_ID || !APP_SECRET)
      throw new Error('APP_ID and APP_SECRET must be set to connect accounts (see .env.example)');
    return { appId: APP_ID, appSecret: APP_SECRET };
  }

  async close(): Promise<void> {
    for (const c of this.closers.reverse()) await c().catch(() => undefined);
    this.closers = [];
  }
}

/**
 * The pacer's count lives in Redis: when Redis fails under a call, the error says so and where
 * (one line, exit 3 in the CLI), not ioredis's "Reached the max retries per request limit"; and
 * it is this deployment's failure, which no account's health records (src/util/error-kinds.ts).
 */
function namingRedis(pacer: CallPacer, settings: RedisSettings): CallPacer {
  return {
    callsPerHour: pacer.callsPerHour,
    take: (accountId) =>
      pacer.take(accountId).catch((err: unknown) => {
        throw redisUnavailable(settings, err);
      }),
    ...(pacer.appWait
      ? {
          appWait: () =>
            pacer.appWait!().catch((err: unknown) => {
              throw redisUnavailable(settings, err);
            }),
        }
      : {}),
  };
}

/** A command's schedules wait this long for Redis, which answered a moment before. */
const SCHEDULE_TIMEOUT_MS = 5_000;

/** Schedules that give up after `ms` (a rejection naming Redis) instead of waiting for ever. */
export function boundedSchedules(s: AccountSchedules, ms: number): AccountSchedules {
  return {
    schedule: (id) => withTimeout(s.schedule(id), ms, 'Redis'),
    unschedule: (id) => withTimeout(s.unschedule(id), ms, 'Redis'),
  };
}

/** `work`, or after `ms` the `fallback` (a forced disconnect): closing never hangs. */
export async function bounded(work: Promise<unknown>, ms: number, fallback: () => unknown): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)));
  try {
    const first = await Promise.race([work.then(() => 'done' as const), late]);
    if (first === 'late') await fallback();
  } finally {
    clearTimeout(timer);
  }
}

/** `work`, or a rejection naming `what` after `ms`. */
export async function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: timed out after ${ms / 1000} s`)), ms)),
  );
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What `feedmirror doctor` checks, logged once at the start of worker and serve (ok as info,
 * warnings as warn, failures as error), without holding the start up: a check that needs a few
 * seconds (an unreachable public URL) never delays the first job.
 */
export function logStartChecks(ctx: AppContext): void {
  void (async () => {
    const { runDoctor, formatCheck } = await import('./doctor.ts');
    for (const r of await runDoctor(ctx.env, { timeoutMs: 3_000 })) {
      const line = formatCheck(r);
      const fields = { check: r.name, status: r.status };
      if (r.status === 'fail') ctx.logger.error(fields, line);
      else if (r.status === 'warn') ctx.logger.warn(fields, line);
      else ctx.logger.info(fields, line);
    }
  })().catch((err: unknown) => ctx.logger.warn({ err }, 'start-up checks could not run'));
}

/** The platform client on the configuration (the composition root's; src/platform knows no config). */
export function platformFromConfig(
  config: Config,
  deps: Pick<PlatformClientOptions, 'clock' | 'logger' | 'observer' | 'pacer' | 'app'> = {},
): PlatformClient {
  return new PlatformClient({
    graphUrl: config.GRAPH_URL,
    apiVersion: config.GRAPH_API_VERSION,
    oauthTokenUrl: config.OAUTH_TOKEN_URL,
    appId: config.APP_ID,
    appSecret: config.APP_SECRET,
    timeoutMs: config.HTTP_TIMEOUT_MS,
    maxRetries: config.HTTP_MAX_RETRIES,
    pageSize: config.PAGE_SIZE,
    ...deps,
  });
}
