import { readFileSync } from 'node:fs';
import { z } from 'zod';
import cron from 'node-cron';
import { registerSecret } from './util/redact.ts';
import { parseDuration, DURATION_HINT } from './util/duration.ts';
import { parseTrustProxy, type TrustProxy } from './util/trust-proxy.ts';
import { parseRedisNodes, parseRedisTarget } from './util/redis-target.ts';
import {
  API_VERSIONS,
  DEFAULT_API_VERSION,
  DEFAULT_AUTHORIZE_URL,
  DEFAULT_GRAPH_URL,
  DEFAULT_MEDIA_HOSTS,
  DEFAULT_OAUTH_TOKEN_URL,
} from './platform/identifiers.ts';

/**
 * Every setting of feedmirror, parsed once from the environment. Defaults are the embedded ones: a
 * local folder for storage, the outbox folder for email, local Redis and Postgres, so `npm run demo`
 * needs no configuration.
 *
 * Each setting carries its documentation next to its definition (R-SET-2): what it does, an
 * example, which processes read it and what a change takes. `npm run docs:config` writes
 * docs/configuration.md from it (src/config-doc.ts); a test fails when the page is stale.
 */

/** A process that reads settings: the long-running `feedmirror worker` and `feedmirror serve`, or a CLI command. */
export type SettingReader = 'worker' | 'serve' | 'cli';

export interface SettingDoc {
  description: string;
  /** A value as it is written in the environment. */
  example: string;
  /** worker and serve read settings once, at start: a change needs their restart; a CLI command reads them each run. */
  readBy: SettingReader[];
  /** Shown instead of the type derived from the schema. */
  type?: string;
  /** Shown instead of the default the schema holds. */
  default?: string;
  /** What a change takes beyond the restart. */
  change?: string;
  /** The processes that refuse to start without it. */
  requiredBy?: SettingReader[];
}

export const settings = z.registry<SettingDoc>();

const url = (what: string) => z.url({ message: `must be a URL (${what})` });
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
  if (typeof parsed === 'object' && !Array.isArray(parsed) && 'error' in parsed) {
    ctx.addIssue({ code: 'custom', message: parsed.error });
    return z.NEVER;
  }
  return parsed;
});

export const configSchema = z.object({
  /** Platform API host (R-MED-1). */
  GRAPH_URL: url('platform API host')
    .default(DEFAULT_GRAPH_URL)
    .register(settings, {
      description: 'platform API host',
      example: 'https://graph.instagram.com',
      readBy: ['worker', 'serve', 'cli'],
    }),
  /**
   * Pinned API version for data calls (R-MED-1); token endpoints carry none. Only a version
   * feedmirror knows (R-MED-13): one whose answers it was checked against.
   */
  GRAPH_API_VERSION: z
    .string()
    .refine((v) => API_VERSIONS.some((k) => k.version === v), {
      message: `must be a version feedmirror knows: ${API_VERSIONS.map((k) => k.version).join(', ')}`,
    })
    .default(DEFAULT_API_VERSION)
    .register(settings, {
      description:
        'pinned platform API version for data calls (token endpoints carry none); before changing it, run `feedmirror platform compare --version <v>` (docs/platform-versions.md)',
      example: 'v25.0',
      readBy: ['worker', 'serve', 'cli'],
      type: API_VERSIONS.map((k) => k.version).join(' | '),
    }),
  /** R-MED-13: how long before the pinned version's end of availability doctor and health warn. */
  PLATFORM_VERSION_WARN_DAYS: z.coerce
    .number()
    .int()
    .min(1)
    .max(730)
    .default(90)
    .register(settings, {
      description:
        "days before the pinned API version's end of availability from which doctor and every account's health warn (a failure once it has passed)",
      example: '120',
      readBy: ['worker', 'serve', 'cli'],
    }),
  AUTHORIZE_URL: url('login authorize page')
    .default(DEFAULT_AUTHORIZE_URL)
    .register(settings, {
      description: 'login page owners are sent to',
      example: 'https://www.instagram.com/oauth/authorize',
      readBy: ['serve'],
    }),
  OAUTH_TOKEN_URL: url('login code exchange')
    .default(DEFAULT_OAUTH_TOKEN_URL)
    .register(settings, {
      description: 'login code exchange',
      example: 'https://api.instagram.com/oauth/access_token',
      readBy: ['worker', 'serve', 'cli'],
    }),
  APP_ID: z
    .string()
    .min(1)
    .optional()
    .register(settings, {
      description: "your platform app's id; needed to connect accounts",
      example: '1234567890123456',
      readBy: ['worker', 'serve', 'cli'],
    }),
  APP_SECRET: z
    .string()
    .min(1)
    .optional()
    .register(settings, {
      description:
        "your platform app's secret; needed to connect accounts; sent only in the code exchange, never in a refresh",
      example: '(from the app settings)',
      readBy: ['worker', 'serve', 'cli'],
    }),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .default('postgres://postgres@127.0.0.1:5432/feedmirror')
    .register(settings, {
      description: 'PostgreSQL',
      example: 'postgres://feedmirror:pw@db.internal:5432/feedmirror',
      readBy: ['worker', 'serve', 'cli'],
      type: '`postgres://` URL',
    }),
  /** One Redis server, or a Redis Cluster (`redis+cluster://`); see src/util/redis-target.ts. */
  REDIS_URL: z
    .string()
    .superRefine((v, ctx) => {
      try {
        parseRedisTarget(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
      }
    })
    .default('redis://127.0.0.1:6379')
    .register(settings, {
      description:
        'Redis for BullMQ and the shared state of the processes: one server (`redis://`, `rediss://` for TLS), or a Redis Cluster (`redis+cluster://host:port,host:port`, `rediss+cluster://` for TLS; see [Managed Redis Cluster](production.md#managed-redis-cluster-and-pooled-postgresql))',
      example: 'redis+cluster://:pw@redis-1.internal:6379,redis-2.internal:6379',
      readBy: ['worker', 'serve', 'cli'],
      type: '`redis://`, `rediss://` or `redis+cluster://` URL',
    }),
  /** Seed nodes of a Redis Cluster: set, feedmirror runs in cluster mode. */
  REDIS_CLUSTER_NODES: z
    .string()
    .superRefine((v, ctx) => {
      try {
        parseRedisNodes(v);
      } catch (err) {
        ctx.addIssue({
          code: 'custom',
          message: `must be host:port pairs separated by commas: ${(err as Error).message}`,
        });
      }
    })
    .optional()
    .register(settings, {
      description:
        'Redis Cluster seed nodes (any reachable one tells feedmirror the others); set, feedmirror runs in cluster mode and takes only the user name, password and TLS (`rediss://`) from `REDIS_URL`',
      example: '10.0.0.11:6379,10.0.0.12:6379,10.0.0.13:6379',
      readBy: ['worker', 'serve', 'cli'],
      type: 'host:port list',
    }),
  /** Key prefix for every BullMQ key and feedmirror's own; wrapped in {braces} on Redis Cluster (R-SCL-1). */
  REDIS_PREFIX: z
    .string()
    .min(1)
    .default('feedmirror')
    .register(settings, {
      description:
        'key prefix of every key in Redis; on Redis Cluster it is wrapped in braces (`{feedmirror}`, a hash tag that keeps every key in one slot) unless it already holds a `{tag}`',
      example: 'feedmirror-eu',
      readBy: ['worker', 'serve', 'cli'],
      change: 'the queues under the old prefix are left behind; the reconciler rebuilds the schedules',
    }),
  /** `s3://bucket/prefix` or a local folder. */
  STORAGE_URL: z
    .string()
    .min(1)
    .default('./data/storage')
    .register(settings, {
      description: '`s3://bucket/prefix`, or a local folder',
      example: 's3://my-bucket/feedmirror',
      readBy: ['worker', 'serve', 'cli'],
      type: '`s3://bucket/prefix` or a folder',
      change: 'feeds and copies are not moved: copy the objects first',
    }),
  S3_ENDPOINT: url('S3-compatible endpoint')
    .optional()
    .register(settings, {
      description: 'MinIO, R2 or another S3-compatible server',
      example: 'http://minio:9000',
      readBy: ['worker', 'serve', 'cli'],
      default: 'AWS',
    }),
  S3_REGION: z
    .string()
    .min(1)
    .default('us-east-1')
    .register(settings, {
      description: "the bucket's region (any value for most S3-compatible servers)",
      example: 'eu-west-1',
      readBy: ['worker', 'serve', 'cli'],
    }),
  S3_FORCE_PATH_STYLE: z
    .stringbool()
    .default(false)
    .register(settings, {
      description: '`true` for MinIO and most self-hosted servers',
      example: 'true',
      readBy: ['worker', 'serve', 'cli'],
      type: 'boolean',
    }),
  /** AWS SDK checksum mode; `when_required` for S3-compatible servers that mishandle aws-chunked bodies. */
  S3_CHECKSUMS: z
    .enum(['when_supported', 'when_required'])
    .default('when_required')
    .register(settings, {
      description: 'AWS SDK checksum mode; `when_required` works with S3-compatible servers',
      example: 'when_supported',
      readBy: ['worker', 'serve', 'cli'],
    }),
  /** Prefix written into feeds for mirrored copies (a CDN or the bucket's public address). */
  MEDIA_PUBLIC_URL: url('public address of mirrored media')
    .optional()
    .register(settings, {
      description: 'public prefix of the bucket or CDN, written into feeds for the copies',
      example: 'https://cdn.example.com/feedmirror/',
      readBy: ['worker', 'serve', 'cli'],
    }),
  /** Hosts images may be downloaded from; a leading dot matches subdomains. */
  MEDIA_ALLOWED_HOSTS: csv.default(DEFAULT_MEDIA_HOSTS).register(settings, {
    description: 'hosts images may be downloaded from (`.suffix` = subdomains, `host:port` pins a port)',
    example: '.cdninstagram.com,.fbcdn.net',
    readBy: ['worker', 'cli'],
    type: 'comma list of hosts',
  }),
  MEDIA_MAX_BYTES: posInt
    .default(25 * 1024 * 1024)
    .register(settings, { description: 'largest image downloaded', example: '52428800', readBy: ['worker', 'cli'] }),
  MEDIA_MAX_PIXELS: posInt.default(50_000_000).register(settings, {
    description: 'largest image decoded (decompression-bomb guard)',
    example: '100000000',
    readBy: ['worker', 'cli'],
  }),
  MEDIA_TIMEOUT_MS: posInt
    .default(30_000)
    .register(settings, { description: 'per download', example: '60000', readBy: ['worker', 'cli'] }),
  MEDIA_VARIANT_WIDTHS: csv
    .transform((xs) => xs.map(Number))
    .pipe(z.array(z.number().int().positive()))
    // About 1.5x steps from 160 px: a srcset ladder (widths at or near the original's are skipped).
    .default([160, 240, 360, 540, 810, 1215, 1820, 2730])
    .register(settings, {
      description:
        "the srcset ladder: resized variants written beside each copy, about 1.5x apart; widths within 15% of the original's or above it are skipped (never upscaled; the original tops the ladder). A new ladder applies to new copies; `feedmirror media rebuild` re-encodes existing ones",
      example: '320,640,1080',
      readBy: ['worker', 'cli'],
      type: 'comma list of widths (px)',
      change: 'new copies only; then `feedmirror media rebuild` for existing ones',
    }),
  /** Encodings of each variant: webp, avif or both (comma-separated). */
  MEDIA_VARIANT_FORMATS: csv
    .pipe(
      z.array(z.enum(['webp', 'avif'], { error: 'each must be webp or avif' })).min(1, 'must name at least one format'),
    )
    .default(['webp'])
    .register(settings, {
      description:
        "encodings of each variant: `webp`, `avif` or `webp,avif` (AVIF is smaller but costs much more CPU: see [Benchmarks](benchmarks.md)). `feedmirror media rebuild` re-encodes existing copies with the workers' value",
      example: 'webp,avif',
      readBy: ['worker', 'cli'],
      type: 'comma list of `webp`, `avif`',
      change: 'new copies only; then `feedmirror media rebuild` for existing ones',
    }),
  /** on: video files (reels, videos, video slides) are copied too, within the caps below. */
  MIRROR_VIDEOS: z
    .stringbool()
    .default(false)
    .register(settings, {
      description:
        "`on`: video files (reels, videos, video slides) are copied into storage like the pictures, streamed and never transcoded, so a visitor's browser plays them from your storage and never asks the platform; `off`: a feed points at the platform's signed video links, as before (see [capacity](capacity.md#video) for the storage and egress it costs)",
      example: 'on',
      readBy: ['worker', 'cli'],
      type: 'boolean (`on`/`off`)',
      change: 'new copies only: existing video copies stay in the feed until their posts go',
    }),
  VIDEO_MAX_BYTES: posInt.default(100 * 1024 * 1024).register(settings, {
    description:
      "largest video file copied (MIRROR_VIDEOS); a larger one stays a platform link and the account's health says so",
    example: '209715200',
    readBy: ['worker', 'cli'],
  }),
  VIDEO_MAX_BYTES_PER_ACCOUNT: posInt.default(2 * 1024 * 1024 * 1024).register(settings, {
    description:
      "most bytes of video copies one account may hold (MIRROR_VIDEOS); a video past it stays a platform link and the account's health says so",
    example: '5368709120',
    readBy: ['worker', 'cli'],
  }),
  /** 32-byte key, base64 or hex; several keys as `id:key,id:key`, the first one encrypts. */
  TOKEN_ENCRYPTION_KEY: z
    .string()
    .min(1)
    .optional()
    .register(settings, {
      description:
        '32 bytes, base64 or hex, encrypting the stored tokens and webhook secrets; several keys as `label:key,label:key` to rotate (the first encrypts). Each key is known by an id derived from it (see [Token lifecycle](accounts.md))',
      example: 'new:<key>,old:<key>',
      readBy: ['worker', 'serve', 'cli'],
      type: 'key, or comma list of `label:key`',
      change: 'then `feedmirror keys rotate`',
      requiredBy: ['worker', 'serve'],
    }),
  SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\//, 'must be an smtp:// or smtps:// URL')
    .optional()
    .register(settings, {
      description:
        '`smtp://user:pass@host:587` (must offer STARTTLS: nothing is sent in clear text to another machine) or `smtps://user:pass@host:465`; empty = emails are written as `.eml` files to `OUTBOX_DIR`',
      example: 'smtps://alerts:pw@smtp.example.com:465',
      readBy: ['worker', 'serve', 'cli'],
      type: '`smtp://` or `smtps://` URL',
    }),
  ALERT_EMAIL_TO: emailAddress.optional().register(settings, {
    description: 'who receives alerts (required with `SMTP_URL`)',
    example: 'ops@example.com',
    readBy: ['worker', 'serve', 'cli'],
    type: 'email address',
  }),
  ALERT_EMAIL_FROM: emailAddress.default('feedmirror@localhost').register(settings, {
    description: 'the sender of the emails (alerts, reconnect links and invitations)',
    example: 'feedmirror@example.com',
    readBy: ['worker', 'serve', 'cli'],
    type: 'email address',
  }),
  /** Folder for emails when no SMTP_URL is set. */
  OUTBOX_DIR: z
    .string()
    .min(1)
    .default('./data/outbox')
    .register(settings, {
      description:
        'the folder emails are written to as `.eml` files when no `SMTP_URL` is set: they reach nobody until someone passes them on',
      example: '/var/lib/feedmirror/outbox',
      readBy: ['worker', 'serve', 'cli'],
    }),
  /** on: account owners with an email get the expiry and reauth alerts too, with a reconnect link. */
  OWNER_ALERTS: z
    .stringbool()
    .default(false)
    .register(settings, {
      description:
        "`on`: the expiry alerts (14, 7, 3, 1 days) and the reauth alert also go to the account's owner when one is recorded (and their alerts are not turned off for that account), each with a one-time reconnect link; `off`: alerts go to `ALERT_EMAIL_TO` only (see [owners](accounts.md#account-owners))",
      example: 'on',
      readBy: ['worker', 'serve', 'cli'],
      type: 'boolean (`on`/`off`)',
    }),
  /** How long a reconnect link sent to an owner works. */
  RECONNECT_LINK_TTL: duration.default(14 * 86_400_000).register(settings, {
    description: "how long the one-time reconnect link in an owner's alert works (a newer alert replaces it sooner)",
    example: '7d',
    readBy: ['worker', 'serve', 'cli'],
    type: 'duration (`90m`, `12h`, `7d`)',
    default: '`14d`',
  }),
  /** on: status/<accountId>.json is written next to the feed. */
  PUBLISH_STATUS: z
    .stringbool()
    .default(false)
    .register(settings, {
      description:
        '`on`: a public status document `status/<accountId>.json` (connected or needs the owner, days of validity left, last good sync) is written next to each feed, without any secret or owner contact',
      example: 'on',
      readBy: ['worker', 'serve', 'cli'],
      type: 'boolean (`on`/`off`)',
    }),
  PUBLIC_URL: url('public address of `feedmirror serve`')
    .default('http://127.0.0.1:8080')
    .register(settings, {
      description: 'public address of `feedmirror serve`; the OAuth redirect is `PUBLIC_URL/callback`',
      example: 'https://feeds.example.com',
      readBy: ['worker', 'serve', 'cli'],
    }),
  /** Views counted by serve (R-WID-7); unset: widget documents carry no viewsUrl and nothing is counted. */
  WIDGET_VIEWS_URL: url('public address of `feedmirror serve` for widget views')
    .optional()
    .register(settings, {
      description:
        'address of `feedmirror serve` as sites reach it (usually `PUBLIC_URL`): widget documents then carry `viewsUrl` (`WIDGET_VIEWS_URL/w/<id>/view`) and the script reports each view there; unset = views are not counted',
      example: 'https://feeds.example.com',
      readBy: ['worker', 'serve', 'cli'],
    }),
  /** Views one widget may count per minute (R-WID-7). */
  WIDGET_VIEWS_PER_MINUTE: posInt.default(600).register(settings, {
    description:
      'views one widget counts per minute at most, whoever sends them (one window for every `serve` process, in Redis); more are answered but not counted',
    example: '1200',
    readBy: ['serve'],
  }),
  /** Views one client may count per widget and hour (R-WID-7). */
  WIDGET_VIEWS_PER_CLIENT: posInt.default(30).register(settings, {
    description:
      'views one client (an IPv4 address or an IPv6 /64) counts per widget and hour at most, so one client can neither inflate a count nor use up `WIDGET_VIEWS_PER_MINUTE`; more are answered but not counted. Raise it when many visitors share one address (an office, a carrier NAT)',
    example: '120',
    readBy: ['serve'],
  }),
  HOST: z
    .string()
    .min(1)
    .default('127.0.0.1')
    .register(settings, { description: 'the address `serve` listens on', example: '0.0.0.0', readBy: ['serve'] }),
  PORT: z.coerce
    .number()
    .int()
    .min(0)
    .max(65535)
    .default(8080)
    .register(settings, { description: 'the port `serve` listens on', example: '8090', readBy: ['serve'] }),
  /** `feedmirror worker` serves /metrics and /healthz on this port; unset = no listener (0 = any free port). */
  METRICS_PORT: z.coerce
    .number()
    .int()
    .min(0)
    .max(65535)
    .optional()
    .register(settings, {
      description:
        'where `worker` serves its own `/metrics` and `/healthz` (platform calls, copies, sync durations, failures); unset = no listener, 0 = any free port',
      example: '9464',
      readBy: ['worker'],
    }),
  /** Where the worker's metrics listener binds; 0.0.0.0 in a container so Prometheus can scrape it. */
  METRICS_HOST: z
    .string()
    .min(1)
    .default('127.0.0.1')
    .register(settings, {
      description:
        "the address the worker's metrics listener binds; `0.0.0.0` in a container so Prometheus can scrape it",
      example: '0.0.0.0',
      readBy: ['worker'],
    }),
  DASHBOARD_USER: z
    .string()
    .min(1)
    .optional()
    .register(settings, {
      description: 'dashboard login name; required unless `HOST` is loopback',
      example: 'ops',
      readBy: ['serve'],
    }),
  DASHBOARD_PASSWORD: z
    .string()
    .min(8, 'must be at least 8 characters')
    .optional()
    .register(settings, {
      description: 'dashboard password (8+ characters); required unless `HOST` is loopback',
      example: '(openssl rand -base64 18)',
      readBy: ['serve'],
      change: 'every dashboard session ends',
    }),
  /** Which proxies in front of serve may name the client's address (src/http/trust-proxy.ts). */
  TRUST_PROXY: trustProxy.default(false).register(settings, {
    description:
      "proxies in front of `serve` that may name the client's address: a hop count (`1`), or addresses / CIDR ranges (`10.0.0.0/8,loopback`); see [Security](security.md)",
    example: '1',
    readBy: ['serve'],
    type: '`false`, a hop count, or addresses/CIDRs',
    default: 'none',
  }),
  /** Signs the dashboard's CSRF tokens and flash messages; unset = derived from TOKEN_ENCRYPTION_KEY with HKDF. */
  SESSION_SECRET: z
    .string()
    .min(32, 'must be at least 32 characters')
    .optional()
    .register(settings, {
      description:
        "signs the dashboard's CSRF tokens and messages (32+ characters); unset = HKDF of `TOKEN_ENCRYPTION_KEY` under its own label",
      example: '(openssl rand -base64 32)',
      readBy: ['serve'],
      default: 'derived from `TOKEN_ENCRYPTION_KEY`',
    }),
  /** A dashboard session unused this long ends (Grafana's default: 7 days). */
  SESSION_IDLE_TIMEOUT: duration.default(7 * 86_400_000).register(settings, {
    description: "a dashboard session unused this long ends (Grafana's default)",
    example: '12h',
    readBy: ['serve'],
    type: 'duration (`90m`, `12h`, `7d`)',
    default: '`7d`',
  }),
  /** A dashboard session ends this long after login, however active (Grafana's default: 30 days). */
  SESSION_MAX_LIFETIME: duration.default(30 * 86_400_000).register(settings, {
    description: "a dashboard session ends this long after login, however active (Grafana's default)",
    example: '7d',
    readBy: ['serve'],
    type: 'duration (`90m`, `12h`, `7d`)',
    default: '`30d`',
  }),
  /** true: anyone may open /connect (self-service); false: an invitation or a dashboard session is needed. */
  CONNECT_OPEN: z
    .stringbool()
    .default(false)
    .register(settings, {
      description: '`true`: anyone may open `/connect`; `false`: an invitation link or the dashboard is needed',
      example: 'true',
      readBy: ['serve'],
      type: 'boolean',
    }),
  /** Bearer token Prometheus sends to serve's /metrics; required unless serve listens on loopback only. */
  METRICS_TOKEN: z
    .string()
    .min(16, 'must be at least 16 characters')
    .optional()
    .register(settings, {
      description:
        "bearer token for `serve`'s `/metrics`; without it `/metrics` answers only on a loopback-only `serve`",
      example: '(openssl rand -hex 24)',
      readBy: ['serve'],
    }),
  /** The name on the emails and the pages an account owner sees. */
  BRAND_NAME: z
    .string()
    .trim()
    .min(1)
    .max(80, 'must be at most 80 characters')
    .default('feedmirror')
    .register(settings, {
      description:
        'the name the emails and the owner pages (connect result, reconnect, status) carry: your agency or product',
      example: 'Northwind Studio',
      readBy: ['worker', 'serve', 'cli'],
    }),
  /** A logo on the emails and owner pages, https only. */
  BRAND_LOGO_URL: z
    .url({ message: 'must be a URL (the logo image)' })
    .refine(
      (v) => v.startsWith('https://'),
      'must be an https:// URL (mail clients and browsers block a logo over http)',
    )
    .optional()
    .register(settings, {
      description:
        'an image (about 32 px high, PNG or SVG) shown instead of the name in the header of the emails and the owner pages; https only',
      example: 'https://example.com/logo.png',
      readBy: ['worker', 'serve', 'cli'],
      type: '`https://` URL',
    }),
  /** Where owners can write with questions; shown on the emails and owner pages. */
  BRAND_SUPPORT_EMAIL: emailAddress.optional().register(settings, {
    description: 'the address owners can write to, shown at the foot of the emails and the owner pages',
    example: 'help@example.com',
    readBy: ['worker', 'serve', 'cli'],
    type: 'email address',
  }),
  /** The colour of the buttons on the emails and owner pages. */
  BRAND_ACCENT_COLOR: z
    .string()
    .regex(/^#[0-9a-fA-F]{6}$/, 'must be a colour written #rrggbb')
    .optional()
    .register(settings, {
      description:
        "the colour of the buttons and the header's rule on the emails and owner pages; the button text turns dark on a light colour",
      example: '#0f766e',
      readBy: ['worker', 'serve', 'cli'],
      type: '`#rrggbb`',
      default: '`#2563eb`',
    }),
  /** A folder of email templates laid over the built-in ones. */
  EMAIL_TEMPLATES_DIR: z
    .string()
    .min(1)
    .optional()
    .register(settings, {
      description:
        'a folder whose files replace built-in email templates of the same name (`owner-expiry.html`, `layout.txt`, …; see [the emails](accounts.md#the-emails-and-their-templates)); files it lacks stay built in; a file feedmirror cannot use stops worker and serve at start-up with one line naming it',
      example: '/etc/feedmirror/email-templates',
      readBy: ['worker', 'serve', 'cli'],
      type: 'folder',
    }),
  PAGE_SIZE: posInt
    .max(500)
    .default(50)
    .register(settings, {
      description: 'media edge page size (correctness never depends on it)',
      example: '100',
      readBy: ['worker', 'serve', 'cli'],
    }),
  /**
   * The most items one listing may read while the platform still offers more pages (R-NET-6):
   * an account's listing stops at twice its last complete listing plus 100, never past this; an
   * account never listed completely stops here. Raise it for accounts with more posts.
   */
  LISTING_MAX_ITEMS: posInt.default(5_000).register(settings, {
    description:
      "the most posts one listing may read while the platform keeps offering pages: a listing stops at twice the account's last complete listing plus 100, never past this (see [A listing that never ends](operating.md#a-listing-that-never-ends-r-net-6)); raise it for accounts with more posts",
    example: '20000',
    readBy: ['worker', 'cli'],
  }),
  HTTP_TIMEOUT_MS: posInt.default(15_000).register(settings, {
    description: 'timeout of one platform call',
    example: '30000',
    readBy: ['worker', 'serve', 'cli'],
  }),
  HTTP_MAX_RETRIES: z.coerce
    .number()
    .int()
    .min(0)
    .max(10)
    .default(3)
    .register(settings, {
      description: 'retries of a platform call that failed transiently',
      example: '5',
      readBy: ['worker', 'serve', 'cli'],
    }),
  SYNC_INTERVAL_MINUTES: posInt.default(60).register(settings, {
    description: 'feed sync per account',
    example: '30',
    readBy: ['worker', 'serve', 'cli'],
    change: "each account's schedule is rewritten by the worker's reconciler",
  }),
  REFRESH_AFTER_DAYS: z.coerce
    .number()
    .min(1)
    .max(50)
    .default(30)
    .register(settings, {
      description: 'token age at which it is refreshed',
      example: '40',
      readBy: ['worker', 'serve', 'cli'],
    }),
  /** How often each account's refresh check runs; the refresh itself happens when the token is due. */
  REFRESH_CHECK_HOURS: z.coerce
    .number()
    .positive()
    .max(24)
    .default(6)
    .register(settings, {
      description: "how often each account's refresh check runs",
      example: '12',
      readBy: ['worker', 'serve', 'cli'],
      change: "each account's schedule is rewritten by the worker's reconciler",
    }),
  /** V8 heap growth between full collections, in percent (src/util/heap.ts); 0 = V8's dynamic default. */
  HEAP_GROWTH_PERCENT: z.coerce
    .number()
    .int()
    .min(0)
    .max(400)
    .default(30)
    .register(settings, {
      description:
        "how far V8 lets the heap of `worker` and `serve` grow between full collections (0 = V8's own, larger, default; see [Benchmarks](benchmarks.md))",
      example: '0',
      readBy: ['worker', 'serve'],
    }),
  /** node-cron expression (UTC) at which workers queue the daily expiry sweep; it runs once per day across all workers. */
  EXPIRY_SWEEP_CRON: z
    .string()
    .refine((v) => cron.validate(v), 'must be a valid cron expression')
    .default('0 8 * * *')
    .register(settings, {
      description:
        'when workers queue the daily jobs: expiry alerts, the media sweep, the housekeeping and the verify (UTC; once per cluster)',
      example: '0 6 * * 1-5',
      readBy: ['worker'],
      type: 'cron expression (UTC)',
    }),
  /** What to do with copyright-flagged items (no media_url): drop them or show a text card (R-CNV-12). */
  COPYRIGHT_ITEMS: z
    .enum(['drop', 'text-card'])
    .default('drop')
    .register(settings, {
      description: 'items without any image (copyright-flagged): `drop`, or `text-card` linking to the post',
      example: 'text-card',
      readBy: ['worker', 'cli'],
    }),
  WORKER_CONCURRENCY: posInt
    .default(4)
    .register(settings, { description: 'token-refresh jobs a worker runs at once', example: '8', readBy: ['worker'] }),
  /** Feed syncs (and publishes) a worker runs at once: each mostly waits on the platform and Postgres. */
  SYNC_CONCURRENCY: posInt
    .max(256)
    .default(8)
    .register(settings, {
      description:
        'feed syncs (and feed publishes) a worker runs at once; each mostly waits on the platform and Postgres',
      example: '16',
      readBy: ['worker'],
    }),
  /** Image copies a worker runs at once: a number, or `auto` (from the cores and sharp's thread pool, src/mirror/concurrency.ts). */
  MIRROR_CONCURRENCY: z
    .union([z.literal('auto'), posInt.max(256)])
    .default('auto')
    .register(settings, {
      description:
        "image copies a worker runs at once: a number, or `auto` = 3 per core, at most twice sharp's thread pool (`UV_THREADPOOL_SIZE`, 4): 6 on 2 cores (see [Benchmarks](benchmarks.md) for the curve)",
      example: '4',
      readBy: ['worker'],
    }),
  /** Calls to the platform per account per hour, at most (R-OWN-1): the platform allows about 200; 180 leaves a margin. */
  PLATFORM_CALLS_PER_ACCOUNT_HOUR: posInt
    .max(10_000)
    .default(180)
    .register(settings, {
      description:
        "platform calls per account per hour at most, counted in Redis across all workers (the platform allows about 200); a call over it is not sent and the job waits in the delayed set until the oldest call of the account's rolling hour is an hour old (see [Keeping within the platform's budget](operating.md#keeping-within-the-platforms-budget-r-own-1))",
      example: '150',
      readBy: ['worker', 'serve', 'cli'],
    }),
  /** App usage (X-App-Usage, percent) from which the queues slow down (R-OWN-1). */
  PLATFORM_SLOWDOWN_PERCENT: z.coerce
    .number()
    .min(1)
    .max(100)
    .default(80)
    .register(settings, {
      description: 'app usage (`X-App-Usage`, percent) from which the sync and copy queues slow down',
      example: '70',
      readBy: ['worker'],
    }),
  /** Pause between job starts at 100% app usage, in seconds; shorter the lower usage is (0 = no slow-down). */
  PLATFORM_SLOWDOWN_MAX_SECONDS: z.coerce
    .number()
    .min(0)
    .max(3600)
    .default(30)
    .register(settings, {
      description: 'pause between job starts at 100% app usage, shorter the lower usage is (0 = never slow down)',
      example: '60',
      readBy: ['worker'],
    }),
  /** How often one worker per cluster compares the schedules in Redis with PostgreSQL and repairs them. */
  RECONCILE_INTERVAL_SECONDS: posInt.default(300).register(settings, {
    description:
      'how often one worker per cluster compares the schedules in Redis with the accounts in PostgreSQL and repairs what was lost (also right after Redis comes back); repairs are logged and counted in `feedmirror_schedule_repairs_total`',
    example: '60',
    readBy: ['worker'],
  }),
  /** On SIGTERM, how long running jobs may finish before they are cut off and the worker exits. */
  SHUTDOWN_TIMEOUT_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .default(30)
    .register(settings, {
      description:
        "on SIGTERM, how long running jobs may finish; then the worker logs the jobs it cut off (another worker takes them over) and exits. `serve` stops accepting connections and lets the requests in flight finish for as long. Keep the supervisor's grace period above it (Kubernetes `terminationGracePeriodSeconds`, compose `stop_grace_period`, systemd `TimeoutStopSec`): the shipped files set both",
      example: '120',
      readBy: ['worker', 'serve'],
    }),
  /** Account events (token history) older than this are deleted by the daily housekeeping. */
  EVENT_RETENTION_DAYS: posInt.default(365).register(settings, {
    description:
      'account events (token history) older than this are deleted by the daily housekeeping, which also deletes expired login states',
    example: '90',
    readBy: ['worker'],
  }),
  /** The worker's daily `verify`: repair what it finds (default), only check and record, or not run it. */
  VERIFY_DAILY: z
    .enum(['repair', 'check', 'off'])
    .default('repair')
    .register(settings, {
      description:
        "the worker's daily `feedmirror verify` (see [Checking that the stores agree](operating.md#checking-that-the-stores-agree)): `repair` (as `verify --repair`), `check` (report and record only) or `off`",
      example: 'check',
      readBy: ['worker'],
    }),
  /** `verify`: an unreferenced object under media/ younger than this is a copy in flight, not an orphan. */
  VERIFY_ORPHAN_GRACE_HOURS: z.coerce
    .number()
    .positive()
    .max(24 * 365)
    .default(24)
    .register(settings, {
      description:
        '`verify`: an object under `media/` that nothing references is an orphan only once it is this old (younger, it may be a copy in flight); `--repair` deletes orphans, nothing else',
      example: '48',
      readBy: ['worker', 'cli'],
    }),
  /** R-DEL-4: a run holds an account's deletes when they are more than this many objects and more than DELETE_CAP_SHARE of them. */
  DELETE_CAP_OBJECTS: posInt.default(200).register(settings, {
    description:
      "the deletion guard's cap (see [What feedmirror deletes](operating.md#what-feedmirror-deletes)): a publish, the media sweep or `verify --repair` that would delete more than this many of an account's objects at once, and more than `DELETE_CAP_SHARE` of them, deletes none, holds them and says so; `--force` (`verify --repair --force`, `media sweep --force`) goes on. Below it every delete goes on: a post deleted at the source is a few dozen objects",
    example: '500',
    readBy: ['worker', 'serve', 'cli'],
  }),
  /** R-DEL-4: the share of an account's objects above which (and above DELETE_CAP_OBJECTS) a run holds its deletes. */
  DELETE_CAP_SHARE: z.coerce
    .number()
    .gt(0)
    .max(1)
    .default(0.5)
    .register(settings, {
      description:
        "the deletion guard's cap, as a share of an account's objects (0.5 = half): deletes are held only when they are more than `DELETE_CAP_OBJECTS` and more than this share at once",
      example: '0.25',
      readBy: ['worker', 'serve', 'cli'],
      type: 'number above 0, at most 1',
    }),
  /** Webhook endpoints on private, loopback or link-local addresses are refused unless this is true (SSRF guard). */
  WEBHOOK_ALLOW_PRIVATE: z
    .stringbool()
    .default(false)
    .register(settings, {
      description:
        "allow webhook endpoints on private, loopback or link-local addresses (checked when registered and on every delivery); the workers' value decides deliveries, so `webhooks add` refuses a private endpoint while a running worker has it off",
      example: 'true',
      readBy: ['worker', 'serve', 'cli'],
      type: 'boolean',
    }),
  /** One webhook delivery attempt, answer included. */
  WEBHOOK_TIMEOUT_MS: posInt
    .max(120_000)
    .default(10_000)
    .register(settings, {
      description: "one webhook delivery attempt, the endpoint's answer included",
      example: '5000',
      readBy: ['worker'],
    }),
  /** OpenTelemetry collector (OTLP over HTTP); traces are sent to <it>/v1/traces. Unset: no tracing, nothing loaded. */
  OTEL_EXPORTER_OTLP_ENDPOINT: url('OTLP/HTTP collector')
    .optional()
    .register(settings, {
      description:
        'an OpenTelemetry collector (OTLP over HTTP, e.g. `http://otel-collector:4318`): the worker sends traces (see [Traces](operating.md#traces)); unset, no tracing code is loaded',
      example: 'http://otel-collector:4318',
      readBy: ['worker'],
    }),
  /** The service name traces carry. */
  OTEL_SERVICE_NAME: z
    .string()
    .min(1)
    .default('feedmirror')
    .register(settings, {
      description: 'the service name on those traces',
      example: 'feedmirror-eu',
      readBy: ['worker'],
    }),
  /** Unset: each process picks its own (src/cli/log-setup.ts). */
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .optional()
    .register(settings, {
      description:
        'the least severe log level written (pino levels); unset: `info`, and `warn` for a command whose logs are human lines (on a terminal)',
      default: '`info` (a command on a terminal: `warn`)',
      example: 'debug',
      readBy: ['worker', 'serve', 'cli'],
    }),
  /** Unset: human lines for a command on a terminal, JSON for everything else (src/cli/log-setup.ts). */
  LOG_FORMAT: z
    .enum(['json', 'human'])
    .optional()
    .register(settings, {
      description:
        '`json`: one JSON object per log line (pino), for a log collector; `human`: short lines such as `warning: …`. Unset: a command whose standard error is a terminal writes human lines, everything else JSON (worker and serve always, as they run under systemd or in a container). Logs always go to standard error',
      default: '`json` (a command on a terminal: `human`)',
      example: 'json',
      readBy: ['worker', 'serve', 'cli'],
    }),
});

export type Config = z.output<typeof configSchema>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/**
 * The secrets that may come from a file: `<NAME>_FILE=/run/secrets/name` instead of `<NAME>=…`,
 * as container secrets (Docker Compose and Swarm `secrets:`, Kubernetes secret volumes) and
 * systemd's LoadCredential= deliver them, so the value is in no environment a `docker inspect` or
 * /proc/<pid>/environ shows.
 */
export const FILE_SETTINGS = [
  'APP_SECRET',
  'TOKEN_ENCRYPTION_KEY',
  'DASHBOARD_PASSWORD',
  'SESSION_SECRET',
  'METRICS_TOKEN',
  'DATABASE_URL',
  'REDIS_URL',
  'SMTP_URL',
] as const;

/**
 * `<NAME>_FILE` read in place of `<NAME>`: the file's text without its trailing line break (an
 * empty file counts as unset). Both set is refused (which one wins would be a guess); an unreadable file names the variable and the
 * error code, never the file's contents.
 */
function readFileSettings(env: NodeJS.ProcessEnv, into: Record<string, string>, problems: string[]): void {
  for (const key of FILE_SETTINGS) {
    const path = env[`${key}_FILE`];
    if (path === undefined || path === '') continue;
    if (into[key] !== undefined) {
      problems.push(`${key} and ${key}_FILE are both set: keep one`);
      continue;
    }
    try {
      // An empty file is an unset value, as `NAME=` is.
      const value = readFileSync(path, 'utf8').replace(/\r?\n$/, '');
      if (value !== '') into[key] = value;
    } catch (err) {
      problems.push(`${key}_FILE: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
}

/**
 * Parse the environment. Empty strings count as unset, so `FOO=` in an env file means default.
 * Secrets may come from files instead (FILE_SETTINGS).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const cleaned: Record<string, string> = {};
  for (const key of Object.keys(configSchema.shape)) {
    const v = env[key];
    if (v !== undefined && v !== '') cleaned[key] = v;
  }
  const fileProblems: string[] = [];
  readFileSettings(env, cleaned, fileProblems);
  if (fileProblems.length > 0) throw new ConfigError(fileProblems);
  const parsed = configSchema.safeParse(cleaned);
  if (!parsed.success) {
    // Name the variable, never echo its value: it may be a secret.
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  // Together: REDIS_CLUSTER_NODES turns a plain REDIS_URL into a cluster's credentials.
  try {
    parseRedisTarget(parsed.data.REDIS_URL, parsed.data.REDIS_CLUSTER_NODES);
  } catch (err) {
    throw new ConfigError([`REDIS_URL with REDIS_CLUSTER_NODES: ${(err as Error).message}`]);
  }
  registerSecret(parsed.data.APP_SECRET);
  registerSecret(parsed.data.TOKEN_ENCRYPTION_KEY);
  registerSecret(parsed.data.DASHBOARD_PASSWORD);
  registerSecret(parsed.data.SESSION_SECRET);
  registerSecret(parsed.data.METRICS_TOKEN);
  return parsed.data;
}
