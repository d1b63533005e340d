import { z } from 'zod';
import cron from 'node-cron';
import { registerSecret } from './util/redact.ts';
import { parseDuration, DURATION_HINT } from './util/duration.ts';
import { parseTrustProxy, type TrustProxy } from './util/trust-proxy.ts';
import {
  DEFAULT_API_VERSION,
  DEFAULT_AUTHORIZE_URL,
  DEFAULT_GRAPH_URL,
  DEFAULT_MEDIA_HOSTS,
  DEFAULT_OAUTH_TOKEN_URL,
} from './platform/identifiers.ts';

/**
 * Every setting of feedmirror, parsed once from the environment. Each variable is documented in
 * `.env.example` and docs/configuration.md. Defaults are the embedded ones: a local folder for storage, the
 * outbox folder for email, local Redis and Postgres, so `npm run demo` needs no configuration.
 */

const url = (what: string) => z.string().url({ message: `must be a URL (${what})` });
const csv = z.string().transform((s) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean),
);
const posInt = z.coerce.number().int().positive();
/**
 * An address as mail servers take it: local part @ host, where the host may be a single label
 * (`feedmirror@localhost`, the documented default, and internal relays). zod's email() wants a
 * dotted public domain, which refused the very default .env.example ships.
 */
const emailAddress = z
  .string()
  .regex(
    /^[^\s@<>(),;:"]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$/,
    'must be an email address (name@host)',
  );
const duration = z.string().transform((v, ctx) => {
  const ms = parseDuration(v);
  if (ms === null) {
    ctx.addIssue({ code: 'custom', message: `must be ${DURATION_HINT}` });
    return z.NEVER;
  }
  return ms;
});
const trustProxy = z.string().transform((v, ctx): TrustProxy => {
  const parsed = parseTrustProxy(v);
  if (typeof parsed === 'object' && !Array.isArray(parsed) && parsed !== null && 'error' in parsed) {
    ctx.addIssue({ code: 'custom', message: parsed.error });
    return z.NEVER;
  }
  return parsed as TrustProxy;
});

export const configSchema = z.object({
  /** Platform API host (R-MED-1). */
  GRAPH_URL: url('platform API host').default(DEFAULT_GRAPH_URL),
  /** Pinned API version for data calls (R-MED-1); token endpoints carry none. */
  GRAPH_API_VERSION: z
    .string()
    .regex(/^v\d+\.\d+$/, 'must look like v25.0')
    .default(DEFAULT_API_VERSION),
  AUTHORIZE_URL: url('login authorize page').default(DEFAULT_AUTHORIZE_URL),
  OAUTH_TOKEN_URL: url('login code exchange').default(DEFAULT_OAUTH_TOKEN_URL),
  APP_ID: z.string().min(1).optional(),
  APP_SECRET: z.string().min(1).optional(),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .default('postgres://postgres@127.0.0.1:5432/feedmirror'),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// URL')
    .default('redis://127.0.0.1:6379'),
  /** Key prefix for every BullMQ key; wrap it in {braces} for Redis Cluster. */
  REDIS_PREFIX: z.string().min(1).default('feedmirror'),
  /** `s3://bucket/prefix` or a local folder. */
  STORAGE_URL: z.string().min(1).default('./data/storage'),
  S3_ENDPOINT: url('S3-compatible endpoint').optional(),
  S3_REGION: z.string().min(1).default('us-east-1'),
  S3_FORCE_PATH_STYLE: z.stringbool().default(false),
  /** AWS SDK checksum mode; `when_required` for S3-compatible servers that mishandle aws-chunked bodies. */
  S3_CHECKSUMS: z.enum(['when_supported', 'when_required']).default('when_required'),
  /** Prefix written into feeds for mirrored copies (a CDN or the bucket's public address). */
  MEDIA_PUBLIC_URL: url('public address of mirrored media').optional(),
  /** Hosts images may be downloaded from; a leading dot matches subdomains. */
  MEDIA_ALLOWED_HOSTS: csv.default(DEFAULT_MEDIA_HOSTS),
  MEDIA_MAX_BYTES: posInt.default(25 * 1024 * 1024),
  MEDIA_MAX_PIXELS: posInt.default(50_000_000),
  MEDIA_TIMEOUT_MS: posInt.default(30_000),
  MEDIA_VARIANT_WIDTHS: csv
    .transform((xs) => xs.map(Number))
    .pipe(z.array(z.number().int().positive()))
    // About 1.5x steps from 160 px: a srcset ladder (widths at or near the original's are skipped).
    .default([160, 240, 360, 540, 810, 1215, 1820, 2730]),
  /** Encodings of each variant: webp, avif or both (comma-separated). */
  MEDIA_VARIANT_FORMATS: csv
    .pipe(
      z.array(z.enum(['webp', 'avif'], { error: 'each must be webp or avif' })).min(1, 'must name at least one format'),
    )
    .default(['webp']),
  /** 32-byte key, base64 or hex; several keys as `id:key,id:key`, the first one encrypts. */
  TOKEN_ENCRYPTION_KEY: z.string().min(1).optional(),
  SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\//, 'must be an smtp:// or smtps:// URL')
    .optional(),
  ALERT_EMAIL_TO: emailAddress.optional(),
  ALERT_EMAIL_FROM: emailAddress.default('feedmirror@localhost'),
  /** Folder for emails when no SMTP_URL is set. */
  OUTBOX_DIR: z.string().min(1).default('./data/outbox'),
  PUBLIC_URL: url('public address of `feedmirror serve`').default('http://127.0.0.1:8080'),
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  /** `feedmirror worker` serves /metrics and /healthz on this port; unset = no listener (0 = any free port). */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** Where the worker's metrics listener binds; 0.0.0.0 in a container so Prometheus can scrape it. */
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  DASHBOARD_USER: z.string().min(1).optional(),
  DASHBOARD_PASSWORD: z.string().min(8, 'must be at least 8 characters').optional(),
  /** Which proxies in front of serve may name the client's address (src/http/trust-proxy.ts). */
  TRUST_PROXY: trustProxy.default(false),
  /** Signs the dashboard's CSRF tokens and flash messages; unset = derived from TOKEN_ENCRYPTION_KEY with HKDF. */
  SESSION_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  /** A dashboard session unused this long ends (Grafana's default: 7 days). */
  SESSION_IDLE_TIMEOUT: duration.default(7 * 86_400_000),
  /** A dashboard session ends this long after login, however active (Grafana's default: 30 days). */
  SESSION_MAX_LIFETIME: duration.default(30 * 86_400_000),
  /** true: anyone may open /connect (self-service); false: an invitation or a dashboard session is needed. */
  CONNECT_OPEN: z.stringbool().default(false),
  /** Bearer token Prometheus sends to serve's /metrics; required unless serve listens on loopback only. */
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  PAGE_SIZE: posInt.max(500).default(50),
  /**
   * The most items one listing may read while the platform still offers more pages (R-NET-6):
   * an account's listing stops at twice its last complete listing plus 100, never past this; an
   * account never listed completely stops here. Raise it for accounts with more posts.
   */
  LISTING_MAX_ITEMS: posInt.default(5_000),
  HTTP_TIMEOUT_MS: posInt.default(15_000),
  HTTP_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(3),
  SYNC_INTERVAL_MINUTES: posInt.default(60),
  REFRESH_AFTER_DAYS: z.coerce.number().min(1).max(50).default(30),
  /** How often each account's refresh check runs; the refresh itself happens when the token is due. */
  REFRESH_CHECK_HOURS: z.coerce.number().positive().max(24).default(6),
  /** V8 heap growth between full collections, in percent (src/util/heap.ts); 0 = V8's dynamic default. */
  HEAP_GROWTH_PERCENT: z.coerce.number().int().min(0).max(400).default(30),
  /** node-cron expression (UTC) at which workers queue the daily expiry sweep; it runs once per day across all workers. */
  EXPIRY_SWEEP_CRON: z
    .string()
    .refine((v) => cron.validate(v), 'must be a valid cron expression')
    .default('0 8 * * *'),
  /** What to do with copyright-flagged items (no media_url): drop them or show a text card (R-CNV-12). */
  COPYRIGHT_ITEMS: z.enum(['drop', 'text-card']).default('drop'),
  WORKER_CONCURRENCY: posInt.default(4),
  /** Feed syncs (and publishes) a worker runs at once: each mostly waits on the platform and Postgres. */
  SYNC_CONCURRENCY: posInt.max(256).default(8),
  /** Image copies a worker runs at once: a number, or `auto` (from the cores and sharp's thread pool, src/mirror/concurrency.ts). */
  MIRROR_CONCURRENCY: z.union([z.literal('auto'), posInt.max(256)]).default('auto'),
  /** Calls to the platform per account per hour, at most (R-OWN-1): the platform allows about 200; 180 leaves a margin. */
  PLATFORM_CALLS_PER_ACCOUNT_HOUR: posInt.max(10_000).default(180),
  /** App usage (X-App-Usage, percent) from which the queues slow down (R-OWN-1). */
  PLATFORM_SLOWDOWN_PERCENT: z.coerce.number().min(1).max(100).default(80),
  /** Pause between job starts at 100% app usage, in seconds; shorter the lower usage is (0 = no slow-down). */
  PLATFORM_SLOWDOWN_MAX_SECONDS: z.coerce.number().min(0).max(3600).default(30),
  /** How often one worker per cluster compares the schedules in Redis with PostgreSQL and repairs them. */
  RECONCILE_INTERVAL_SECONDS: posInt.default(300),
  /** On SIGTERM, how long running jobs may finish before they are cut off and the worker exits. */
  SHUTDOWN_TIMEOUT_SECONDS: z.coerce.number().int().min(0).default(30),
  /** Account events (token history) older than this are deleted by the daily housekeeping. */
  EVENT_RETENTION_DAYS: posInt.default(365),
  /** The worker's daily `verify`: repair what it finds (default), only check and record, or not run it. */
  VERIFY_DAILY: z.enum(['repair', 'check', 'off']).default('repair'),
  /** `verify`: an unreferenced object under media/ younger than this is a copy in flight, not an orphan. */
  VERIFY_ORPHAN_GRACE_HOURS: z.coerce
    .number()
    .positive()
    .max(24 * 365)
    .default(24),
  /** Webhook endpoints on private, loopback or link-local addresses are refused unless this is true (SSRF guard). */
  WEBHOOK_ALLOW_PRIVATE: z.stringbool().default(false),
  /** One webhook delivery attempt, answer included. */
  WEBHOOK_TIMEOUT_MS: posInt.max(120_000).default(10_000),
  /** OpenTelemetry collector (OTLP over HTTP); traces are sent to <it>/v1/traces. Unset: no tracing, nothing loaded. */
  OTEL_EXPORTER_OTLP_ENDPOINT: url('OTLP/HTTP collector').optional(),
  /** The service name traces carry. */
  OTEL_SERVICE_NAME: z.string().min(1).default('feedmirror'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type Config = z.output<typeof configSchema>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parse the environment. Empty strings count as unset, so `FOO=` in an env file means default. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const cleaned: Record<string, string> = {};
  for (const key of Object.keys(configSchema.shape)) {
    const v = env[key];
    if (v !== undefined && v !== '') cleaned[key] = v;
  }
  const parsed = configSchema.safeParse(cleaned);
  if (!parsed.success) {
    // Name the variable, never echo its value: it may be a secret.
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  registerSecret(parsed.data.APP_SECRET);
  registerSecret(parsed.data.TOKEN_ENCRYPTION_KEY);
  registerSecret(parsed.data.DASHBOARD_PASSWORD);
  registerSecret(parsed.data.SESSION_SECRET);
  registerSecret(parsed.data.METRICS_TOKEN);
  return parsed.data;
}
