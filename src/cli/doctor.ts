import { randomBytes } from 'node:crypto';
import { connect as tcpConnect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { isAbsolute } from 'node:path';
import { servePortOf } from './serve-address.ts';
import pg from 'pg';
import type { Config } from '../config.ts';
import { preflight } from './preflight.ts';
import { createDatabase, describeDatabaseUrl, tablesExist } from '../store/db.ts';
import { checkCompatibility, readAppliedMigrations, readMigrations } from '../store/migrate.ts';
import { createStorage } from '../storage/index.ts';
import { probeKey } from '../storage/keys.ts';
import { removeProbe } from '../deletion/guard.ts';
import { Cluster } from 'ioredis';
import { pingRedis, describeRedis, createRedis, redisSettings } from '../../jobs/queues.ts';
import { redactText } from '../util/redact.ts';
import { connectionErrorCode } from '../util/unavailable.ts';
import { clockFromEnv } from '../util/clock.ts';
import { versionAvailability } from '../platform/versions.ts';

/**
 * `feedmirror doctor`: every check an operator needs before (and while) running feedmirror, one
 * line each with what to do when it fails. worker and serve log the same lines at start.
 * Failures make doctor exit 1; warnings (things that work but not as production wants) do not.
 * No check prints a secret: URLs are shown without their credentials.
 */
export type CheckStatus = 'ok' | 'warn' | 'fail' | 'skip';

export interface DoctorCheck {
  name: string;
  status: CheckStatus;
  /** What was found, one line. */
  detail: string;
  /** What to do, when not ok. */
  fix?: string;
}

export interface DoctorOptions {
  /**
   * Create the database when it does not exist, and write the storage's deployment marker when
   * it has none (R-DEL-1; never over another deployment's).
   */
  create?: boolean;
  /** Per network check. */
  timeoutMs?: number;
}

const ok = (name: string, detail: string): DoctorCheck => ({ name, status: 'ok', detail });
const warn = (name: string, detail: string, fix: string): DoctorCheck => ({ name, status: 'warn', detail, fix });
const fail = (name: string, detail: string, fix: string): DoctorCheck => ({ name, status: 'fail', detail, fix });
const skip = (name: string, detail: string): DoctorCheck => ({ name, status: 'skip', detail });

/** Run every check in order; later checks are skipped when what they need failed. */
export async function runDoctor(env: NodeJS.ProcessEnv, opts: DoctorOptions = {}): Promise<DoctorCheck[]> {
  const timeoutMs = opts.timeoutMs ?? 5_000;
  const results: DoctorCheck[] = [];
  const pre = await preflight(env, 'worker');
  const preServe = pre.ok ? await preflight(env, 'serve') : pre;
  if (!pre.ok || !preServe.ok) {
    const problems = [...(!pre.ok ? pre.problems : []), ...(!preServe.ok ? preServe.problems : [])];
    results.push(
      fail(
        'configuration',
        [...new Set(problems)].join('; '),
        'fix these variables in .env (see .env.example; `feedmirror init` writes a complete one)',
      ),
    );
    if (!pre.ok) return results;
  } else {
    results.push(ok('configuration', 'every setting is valid for worker and serve'));
  }
  const config = pre.config;
  results.push(...checkPlaces(config));
  const postgres = await checkPostgres(config, opts.create ?? false, timeoutMs);
  results.push(...postgres);
  results.push(await checkSecrets(config, postgres, timeoutMs));
  const migrations = postgres.find((r) => r.name === 'migrations current');
  results.push(
    migrations?.status === 'ok'
      ? await checkAccounts(config, env, timeoutMs)
      : skip('accounts health', migrations?.status === 'warn' ? 'migrations pending' : 'database not usable'),
  );
  results.push(...(await checkRedis(config, timeoutMs)));
  const storage = await checkStorage(config, env, timeoutMs);
  results.push(...storage);
  results.push(
    migrations?.status !== 'ok'
      ? skip('storage owner', migrations?.status === 'warn' ? 'migrations pending' : 'database not usable')
      : storage.find((r) => r.name === 'storage reachable')?.status !== 'ok'
        ? skip('storage owner', 'storage not reachable')
        : await checkStorageOwner(config, env, opts.create ?? false, timeoutMs),
  );
  results.push(await checkSmtp(config, timeoutMs));
  results.push(...(await checkPlatform(config, timeoutMs)));
  results.push(checkApiVersion(config, clockFromEnv(env).now()));
  return results;
}

/**
 * R-MED-13: the pinned API version's end of availability, PLATFORM_VERSION_WARN_DAYS ahead: a
 * warning within the lead, a failure once it has passed (every data call then fails).
 */
export function checkApiVersion(config: Config, now: Date): DoctorCheck {
  const name = 'platform API version';
  const a = versionAvailability(config.GRAPH_API_VERSION, now, config.PLATFORM_VERSION_WARN_DAYS);
  const fix = 'docs/platform-versions.md: compare, then move GRAPH_API_VERSION and restart worker and serve';
  if (a.level === 'fail') return fail(name, a.text, fix);
  if (a.level === 'warn') return warn(name, a.text, fix);
  return ok(name, a.text);
}

/**
 * Where things are, as a command run from another folder would see them: serve's port against a
 * PUBLIC_URL that points at this machine, and relative folders. Warnings only, printed when wrong.
 */
export function checkPlaces(config: Config): DoctorCheck[] {
  const out: DoctorCheck[] = [];
  const port = servePortOf(config.PUBLIC_URL);
  if (port !== undefined && port !== config.PORT && pointsHere(config.PUBLIC_URL, config.HOST)) {
    out.push(
      warn(
        'serve address',
        `PUBLIC_URL ${config.PUBLIC_URL} is this machine on port ${port}, but serve listens on PORT=${config.PORT}: the login's redirect and the feed and image URLs lead nowhere`,
        `set PORT=${port}, or put a proxy on ${port} that forwards to ${config.PORT}`,
      ),
    );
  }
  const relative = [
    ...(!/^[a-z][a-z0-9+.-]*:\/\//i.test(config.STORAGE_URL) && !isAbsolute(config.STORAGE_URL) ? ['STORAGE_URL'] : []),
    ...(!isAbsolute(config.OUTBOX_DIR) ? ['OUTBOX_DIR'] : []),
  ];
  if (relative.length > 0)
    out.push(
      warn(
        'folders',
        `${relative.join(' and ')} ${relative.length > 1 ? 'are' : 'is'} relative to the folder each command runs from (${process.cwd()} here)`,
        'write absolute paths (`feedmirror init` does), so a command run from elsewhere sees the same feeds',
      ),
    );
  return out;
}

/** Whether a URL's host is this machine: a loopback name or address, HOST, or one of its interfaces. */
function pointsHere(publicUrl: string, host: string): boolean {
  const name = new URL(publicUrl).hostname.replace(/^\[|\]$/g, '');
  if (name === 'localhost' || name === host || /^127\./.test(name) || name === '::1') return true;
  return Object.values(networkInterfaces()).some((list) => (list ?? []).some((i) => i.address === name));
}

export function doctorFailed(results: DoctorCheck[]): boolean {
  return results.some((r) => r.status === 'fail');
}

/** `ok    PostgreSQL reachable: ...` / `FAIL  ...: ... -> fix` */
export function formatCheck(r: DoctorCheck): string {
  const tag = { ok: 'ok  ', warn: 'warn', fail: 'FAIL', skip: 'skip' }[r.status];
  return `${tag}  ${r.name}: ${r.detail}${r.fix ? ` -> ${r.fix}` : ''}`;
}

async function checkPostgres(config: Config, create: boolean, timeoutMs: number): Promise<DoctorCheck[]> {
  const where = describeDatabaseUrl(config.DATABASE_URL);
  const dbName = decodeURIComponent(new URL(config.DATABASE_URL).pathname.slice(1)) || 'postgres';
  const out: DoctorCheck[] = [];
  let client = new pg.Client({ connectionString: config.DATABASE_URL, connectionTimeoutMillis: timeoutMs });
  client.on('error', () => undefined);
  try {
    await client.connect();
    out.push(ok('PostgreSQL reachable', where));
  } catch (err) {
    await client.end().catch(() => undefined);
    const code = connectionErrorCode(err);
    if (code !== '3D000') {
      out.push(
        fail(
          'PostgreSQL reachable',
          `${where} (${code ?? redactText((err as Error).message)})`,
          'start PostgreSQL or fix DATABASE_URL',
        ),
      );
      out.push(skip('migrations current', 'PostgreSQL not reachable'));
      return out;
    }
    out.push(ok('PostgreSQL reachable', `${where} (server answers)`));
    if (!create) {
      out.push(
        fail(
          'database exists',
          `no database "${dbName}"`,
          `run \`feedmirror doctor --create\`, or \`createdb ${dbName}\``,
        ),
      );
      out.push(skip('migrations current', 'no database'));
      return out;
    }
    // The server's maintenance database, same credentials: CREATE DATABASE cannot run inside the target.
    const admin = new URL(config.DATABASE_URL);
    admin.pathname = '/postgres';
    const c = new pg.Client({ connectionString: admin.toString(), connectionTimeoutMillis: timeoutMs });
    c.on('error', () => undefined);
    try {
      await c.connect();
      await createDatabase(c, dbName);
      out.push(ok('database exists', `created "${dbName}"`));
    } catch (e) {
      out.push(
        fail(
          'database exists',
          `could not create "${dbName}" (${redactText((e as Error).message)})`,
          `create it as a PostgreSQL superuser: createdb ${dbName}`,
        ),
      );
      out.push(skip('migrations current', 'no database'));
      return out;
    } finally {
      await c.end().catch(() => undefined);
    }
    client = new pg.Client({ connectionString: config.DATABASE_URL, connectionTimeoutMillis: timeoutMs });
    client.on('error', () => undefined);
    await client.connect();
  }
  try {
    if (!out.some((r) => r.name === 'database exists')) out.push(ok('database exists', `"${dbName}"`));
    const files = await readMigrations();
    const known = files.map((m) => m.name);
    const rows = (await readAppliedMigrations(client)) ?? [];
    const applied = rows.map((r) => r.name);
    const unknown = applied.filter((a) => !known.includes(a));
    const pending = known.filter((k) => !applied.includes(k));
    let refusal: string | undefined;
    try {
      checkCompatibility(files, rows);
    } catch (err) {
      refusal = (err as Error).message;
    }
    if (refusal)
      out.push(
        fail(
          'migrations current',
          refusal,
          'run the release that migrated the database, or restore the backup taken before that upgrade',
        ),
      );
    else if (unknown.length)
      out.push(
        warn(
          'migrations current',
          `the database has migrations of a newer feedmirror (${unknown.join(', ')}) that this release runs on`,
          'a rolled-back release: upgrade again when the newer one is fixed',
        ),
      );
    else if (pending.length)
      out.push(
        warn(
          'migrations current',
          `${pending.length} pending (${pending.join(', ')})`,
          'run `feedmirror migrate` (worker and serve also apply them when they start)',
        ),
      );
    else out.push(ok('migrations current', `${applied.length} applied, latest ${applied.at(-1) ?? 'none'}`));
  } catch (err) {
    out.push(fail('migrations current', redactText((err as Error).message), "check the database user's rights"));
  } finally {
    await client.end().catch(() => undefined);
  }
  return out;
}

/**
 * Every stored token and webhook secret opens with a key of TOKEN_ENCRYPTION_KEY (R-KEY-2): a
 * secret no key opens fails every sync or delivery that needs it. Secrets still under a key other
 * than the first are a warning (`keys rotate` moves them); nothing is changed here.
 */
async function checkSecrets(config: Config, postgres: DoctorCheck[], timeoutMs: number): Promise<DoctorCheck> {
  const name = 'stored secrets decrypt';
  const migrations = postgres.find((r) => r.name === 'migrations current');
  if (!migrations || migrations.status === 'skip' || migrations.status === 'fail')
    return skip(name, 'no database to read them from');
  const { TokenCipher, describeKeyEntry } = await import('../store/crypto.ts');
  const { auditSecrets } = await import('../store/secrets.ts');
  const cipher = TokenCipher.fromEnv(config.TOKEN_ENCRYPTION_KEY);
  const pool = new pg.Pool({ connectionString: config.DATABASE_URL, connectionTimeoutMillis: timeoutMs, max: 1 });
  pool.on('error', () => undefined);
  try {
    if (!(await tablesExist(pool, ['tokens', 'webhook_endpoints'])))
      return skip(name, 'the tables are not created yet (no migrations)');
    const audit = await auditSecrets(pool, cipher);
    const primary = describeKeyEntry(audit.keys.find((k) => k.primary)!);
    if (audit.unopened.length) {
      const ids = [...new Set(audit.unopened.map((u) => u.keyId))];
      const first = audit.unopened[0]!;
      return fail(
        name,
        `${audit.unopened.length} of ${audit.total} cannot be decrypted: ${first.what}${audit.unopened.length > 1 ? ` and ${audit.unopened.length - 1} more` : ''} record${audit.unopened.length > 1 ? '' : 's'} key ${ids.join(', ')}, which no key of TOKEN_ENCRYPTION_KEY opens`,
        `add key ${ids.join(', ')} back to TOKEN_ENCRYPTION_KEY after the first one (\`feedmirror keys list\` shows what each key opens)`,
      );
    }
    const stale = audit.keys.filter((k) => !k.primary && k.tokens + k.webhookSecrets + k.appSecrets > 0);
    if (stale.length) {
      const count = stale.reduce((n, k) => n + k.tokens + k.webhookSecrets + k.appSecrets, 0);
      return warn(
        name,
        `all ${audit.total} decrypt; ${count} still under ${stale.map(describeKeyEntry).join(', ')}, not the primary key ${primary}`,
        'run `feedmirror keys rotate`; then the keys after the first can be removed',
      );
    }
    if (audit.total === 0) return ok(name, `none stored yet; they will be sealed with key ${primary}`);
    return ok(name, `all ${audit.total} decrypt with the primary key ${primary}`);
  } catch (err) {
    return fail(name, redactText((err as Error).message), "check the database user's rights");
  } finally {
    await pool.end().catch(() => undefined);
  }
}

/** How many failing accounts doctor names, with their first reasons. */
const WORST_SHOWN = 3;

/**
 * R-HLT-1: every account's health, the same verdict the dashboard, `accounts list` and /metrics
 * show, summed up in one line: the counts by verdict and the worst few with their reasons. Fails
 * when any account fails, warns when any warns.
 */
export async function checkAccounts(config: Config, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<DoctorCheck> {
  const name = 'accounts health';
  const { loadAccountHealth, countByVerdict, byConcern } = await import('../accounts/health.ts');
  const pool = new pg.Pool({ connectionString: config.DATABASE_URL, connectionTimeoutMillis: timeoutMs, max: 5 });
  pool.on('error', () => undefined);
  try {
    const list = await loadAccountHealth(pool, {
      now: clockFromEnv(env).now(),
      syncIntervalMs: config.SYNC_INTERVAL_MINUTES * 60_000,
      apiVersion: { version: config.GRAPH_API_VERSION, warnDays: config.PLATFORM_VERSION_WARN_DAYS },
    });
    if (list.length === 0) return ok(name, 'no account connected yet');
    const n = countByVerdict(list);
    const counts = `${list.length} account${list.length === 1 ? '' : 's'}: ${n.ok} ok, ${n.warn} warn, ${n.fail} fail`;
    if (n.fail + n.warn === 0) return ok(name, counts);
    const worst = [...list]
      .sort(byConcern)
      .filter((a) => a.health.verdict !== 'ok')
      .slice(0, WORST_SHOWN)
      .map(
        (a) =>
          `@${a.facts.username} (${a.facts.accountId}) ${a.health.verdict}: ${a.health.reasons
            .slice(0, 2)
            .map((r) => `[${r.kind}] ${r.text}`)
            .join('; ')}`,
      );
    const rest = n.fail + n.warn - worst.length;
    const detail = `${counts}; ${worst.join(' | ')}${rest > 0 ? ` | and ${rest} more` : ''}`;
    const fix = '`feedmirror accounts list` and the dashboard show every reason (README, Account health)';
    return n.fail > 0 ? fail(name, detail, fix) : warn(name, detail, fix);
  } catch (err) {
    return fail(name, `could not read the accounts (${redactText((err as Error).message)})`, 'check PostgreSQL');
  } finally {
    await pool.end().catch(() => undefined);
  }
}

async function checkRedis(config: Config, timeoutMs: number): Promise<DoctorCheck[]> {
  const settings = redisSettings(config);
  const where = describeRedis(settings);
  try {
    await pingRedis(settings, timeoutMs);
  } catch (err) {
    return [
      fail('Redis reachable', (err as Error).message, 'start Redis or fix REDIS_URL'),
      skip('Redis settings', 'Redis not reachable'),
    ];
  }
  const out: DoctorCheck[] = [ok('Redis reachable', where)];
  const client = createRedis(settings, { probe: { timeoutMs } });
  client.on('error', () => undefined);
  try {
    await client.connect();
    if (client instanceof Cluster) {
      // R-SCL-1: one hash tag for every key, so each queue's scripts stay in one slot.
      const masters = client.nodes('master').length;
      out.push(ok('Redis Cluster', `${masters} master(s), cluster_state ok; every key under ${settings.prefix}`));
    }
    // BullMQ's production guide: keys must never be evicted, and the queues should survive a restart.
    try {
      const [, policy] = await client.config('GET', 'maxmemory-policy');
      if (policy === 'noeviction') out.push(ok('Redis maxmemory-policy', 'noeviction'));
      else
        out.push(
          warn(
            'Redis maxmemory-policy',
            `${policy ?? 'unknown'}: Redis may evict BullMQ's keys (jobs and schedules lost)`,
            'set maxmemory-policy noeviction',
          ),
        );
    } catch {
      out.push(
        warn(
          'Redis maxmemory-policy',
          'CONFIG GET is not allowed on this Redis',
          'make sure maxmemory-policy is noeviction (BullMQ needs it)',
        ),
      );
    }
    const info = await client.info('persistence');
    const aof = /aof_enabled:1/.test(info);
    let rdb = false;
    try {
      const [, save] = await client.config('GET', 'save');
      rdb = Boolean(save && save.trim());
    } catch {
      rdb = /rdb_last_save_time:[1-9]/.test(info);
    }
    if (aof || rdb) out.push(ok('Redis persistence', aof ? 'append-only file on' : 'RDB snapshots on'));
    else
      out.push(
        warn(
          'Redis persistence',
          'off: a restart loses the queues (PostgreSQL keeps the accounts; schedules are rebuilt)',
          'turn on appendonly yes',
        ),
      );
  } catch (err) {
    out.push(
      warn(
        'Redis settings',
        `could not read them (${redactText((err as Error).message)})`,
        'check maxmemory-policy noeviction and persistence by hand',
      ),
    );
  } finally {
    client.disconnect();
  }
  return out;
}

async function checkStorage(config: Config, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<DoctorCheck[]> {
  const storage = createStorage(config, { maxAttempts: 1, requestTimeoutMs: timeoutMs });
  const what =
    storage.kind === 's3'
      ? `bucket ${config.STORAGE_URL}${config.S3_ENDPOINT ? ` at ${config.S3_ENDPOINT}` : ''}`
      : `folder ${config.STORAGE_URL}`;
  const out: DoctorCheck[] = [];
  try {
    await storage.ping();
    out.push(ok('storage reachable', what));
  } catch (err) {
    out.push(
      fail(
        'storage reachable',
        (err as Error).message,
        storage.kind === 's3'
          ? 'create the bucket and check the credentials (docs/getting-started.md, "Running with S3")'
          : 'create the folder or fix STORAGE_URL',
      ),
    );
    out.push(skip('storage write, read, delete', 'storage not reachable'));
    return out;
  }
  // Under feeds/, which is public like the feeds themselves: the public read below checks the real rule.
  const key = probeKey('doctor', 'feeds', randomBytes(6).toString('hex'));
  const body = Buffer.from(JSON.stringify({ probe: key, at: new Date().toISOString() }));
  let written = false;
  try {
    await storage.put(key, body, { contentType: 'application/json', cacheControl: 'no-store' });
    written = true;
    const back = await storage.get(key);
    if (!back || !back.body.equals(body)) throw new Error('the object read back differs from the one written');
    out.push(ok('storage write, read, delete', `probe ${key}`));
    out.push(...(await checkPublicRead(config, storage.publicUrl(key), body, storage.kind, env, timeoutMs)));
  } catch (err) {
    out.push(
      fail(
        'storage write, read, delete',
        redactText((err as Error).message),
        'give the credentials read and write rights on the bucket or folder',
      ),
    );
  } finally {
    // Through the deletion guard: the probe alone, still holding the bytes written (R-DEL-2).
    if (written) await removeProbe(storage, key, body).catch(() => undefined);
    (storage as { close?: () => void }).close?.();
  }
  return out;
}

/**
 * R-DEL-1: whose storage this is. Nothing is deleted from a storage without this deployment's
 * marker; a new storage gets it at the first start, an upgraded one when it holds this
 * deployment's own feeds, any other only from the operator: `--create` writes it (never over
 * another deployment's).
 */
async function checkStorageOwner(
  config: Config,
  env: NodeJS.ProcessEnv,
  create: boolean,
  timeoutMs: number,
): Promise<DoctorCheck> {
  const name = 'storage owner';
  const { claimStorage, claimedBecause, ownershipNotice } = await import('../deletion/marker.ts');
  const { DEPLOYMENT_MARKER_KEY } = await import('../storage/keys.ts');
  const storage = createStorage(config, { maxAttempts: 1, requestTimeoutMs: timeoutMs });
  const pool = new pg.Pool({ connectionString: config.DATABASE_URL, connectionTimeoutMillis: timeoutMs, max: 1 });
  pool.on('error', () => undefined);
  try {
    const o = await claimStorage(
      { db: pool, storage, clock: clockFromEnv(env) },
      create ? { operator: true } : { dryRun: true },
    );
    if (o.state === 'ours')
      return ok(
        name,
        o.claimed
          ? `${DEPLOYMENT_MARKER_KEY} written now with this deployment's id ${o.deploymentId}, since ${claimedBecause(o.claimed)}`
          : `${DEPLOYMENT_MARKER_KEY} carries this deployment's id ${o.deploymentId}`,
      );
    if (o.claimed)
      return ok(
        name,
        `no deployment marker yet; the first start of worker, serve or \`sync --wait\` writes it, since ${claimedBecause(o.claimed)}`,
      );
    const { line, fix } = ownershipNotice(o);
    return fail(name, line, fix);
  } catch (err) {
    return fail(
      name,
      `could not read the deployment marker (${redactText((err as Error).message)})`,
      'check the storage and the database',
    );
  } finally {
    await pool.end().catch(() => undefined);
    (storage as { close?: () => void }).close?.();
  }
}

async function checkPublicRead(
  config: Config,
  url: string,
  body: Buffer,
  kind: string,
  _env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<DoctorCheck[]> {
  const shown = redactText(url);
  if (!/^https?:\/\//.test(url)) {
    return [
      warn(
        'MEDIA_PUBLIC_URL serves the copies',
        `feeds would carry ${shown}, which browsers cannot load`,
        `set MEDIA_PUBLIC_URL (for a folder: ${config.PUBLIC_URL.replace(/\/+$/, '')}/, served by \`feedmirror serve\`)`,
      ),
    ];
  }
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { origin: 'https://feedmirror-doctor.example' },
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const why = connectionErrorCode(err) ?? (err as Error).name;
    // A folder is served by `feedmirror serve`: not running yet is worth a warning, not a failure.
    const check = kind === 'local' ? warn : fail;
    return [
      check(
        'MEDIA_PUBLIC_URL serves the copies',
        `${shown} did not answer (${why})`,
        kind === 'local'
          ? 'start `feedmirror serve`, or point MEDIA_PUBLIC_URL at what serves the folder'
          : "fix MEDIA_PUBLIC_URL (the bucket's public address or its CDN)",
      ),
    ];
  }
  const got = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200 || !got.equals(body)) {
    return [
      fail(
        'MEDIA_PUBLIC_URL serves the copies',
        `${shown} answered HTTP ${res.status}${res.status === 200 ? ' with other content' : ''}`,
        res.status === 403
          ? 'make feeds/, media/ and widget/ publicly readable (docs/getting-started.md, "Running with S3")'
          : 'fix MEDIA_PUBLIC_URL so it addresses the storage prefix',
      ),
    ];
  }
  const out = [ok('MEDIA_PUBLIC_URL serves the copies', shown)];
  const allow = res.headers.get('access-control-allow-origin');
  if (allow === '*' || allow === 'https://feedmirror-doctor.example')
    out.push(ok('feeds readable cross-origin', `Access-Control-Allow-Origin: ${allow}`));
  else
    out.push(
      warn(
        'feeds readable cross-origin',
        'no Access-Control-Allow-Origin on a feed: the widget on another site cannot read it',
        'add a CORS rule allowing GET from any origin (docs/getting-started.md, "Running with S3")',
      ),
    );
  return out;
}

async function checkSmtp(config: Config, timeoutMs: number): Promise<DoctorCheck> {
  if (!config.SMTP_URL)
    return warn(
      'SMTP',
      `not set: alerts are written as .eml files to ${config.OUTBOX_DIR}`,
      'set SMTP_URL and ALERT_EMAIL_TO to receive them by email',
    );
  const { smtpOptions } = await import('../alerts/mailer.ts');
  const nodemailer = (await import('nodemailer')).default;
  const options = {
    ...smtpOptions(config.SMTP_URL),
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  };
  const u = new URL(config.SMTP_URL);
  const where = `${u.hostname}:${options.port}`;
  const transport = nodemailer.createTransport(options);
  try {
    await transport.verify();
    const tls = options.secure ? 'TLS' : options.requireTLS ? 'STARTTLS' : 'no TLS (this machine only)';
    if (u.username && !options.secure && !options.requireTLS) {
      return warn(
        'SMTP',
        `${where} connects, ${tls}, and sends credentials in clear text`,
        'use a relay on this machine only, or smtps://',
      );
    }
    return ok(
      'SMTP',
      `${where} connects (${tls}${u.username ? ', logs in' : ''}); alerts go to ${config.ALERT_EMAIL_TO}`,
    );
  } catch (err) {
    // nodemailer wraps the socket's error (ESOCKET); its message names the real one.
    const message = redactText((err as Error).message);
    const code = /\bE[A-Z]{4,}\b/.exec(message)?.[0] ?? connectionErrorCode(err);
    return fail(
      'SMTP',
      `${where} (${code ?? message.slice(0, 160)})`,
      'check SMTP_URL (host, port, user, password) and that the server offers TLS',
    );
  } finally {
    transport.close();
  }
}

async function checkPlatform(config: Config, timeoutMs: number): Promise<DoctorCheck[]> {
  const u = new URL(config.GRAPH_URL);
  const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
  const out: DoctorCheck[] = [];
  // A TCP connection, not an API call: nothing is spent from the platform's call budget.
  const reachable = await new Promise<string | null>((resolve) => {
    const s = tcpConnect({ host: u.hostname, port, timeout: timeoutMs });
    s.once('connect', () => {
      s.destroy();
      resolve(null);
    });
    s.once('timeout', () => {
      s.destroy();
      resolve('timed out');
    });
    s.once('error', (e) => resolve(connectionErrorCode(e) ?? e.message));
  });
  out.push(
    reachable === null
      ? ok('platform host answers', u.host)
      : fail('platform host answers', `${u.host} (${reachable})`, 'check the network, a proxy, or GRAPH_URL'),
  );
  if (config.APP_ID && config.APP_SECRET) out.push(ok('app credentials', `APP_ID ${config.APP_ID} and APP_SECRET set`));
  else
    out.push(
      warn(
        'app credentials',
        'APP_ID or APP_SECRET not set: accounts cannot be connected (imported tokens still work)',
        'set both from your app (docs/accounts.md)',
      ),
    );
  return out;
}
