import pg from 'pg';
import type { Logger } from '../util/logger.ts';
import { redactText } from '../util/redact.ts';
import { DatabaseUnavailableError } from './errors.ts';

/** Every store function takes either the pool or a client checked out of it (inside a transaction). */
export type Db = pg.Pool | pg.PoolClient;

export interface PoolOptions {
  /** Connections per process; the worker runs a few jobs at once, so a small pool suffices. */
  max?: number;
  connectionTimeoutMillis?: number;
  idleTimeoutMillis?: number;
  /** Shown in pg_stat_activity. */
  applicationName?: string;
  logger?: Logger;
}

/** Where a pool points, printable: `postgres://user@host:port/db`, never the password. */
const targets = new WeakMap<pg.Pool, string>();

/**
 * A pool with sensible limits and an 'error' listener: pg emits 'error' for idle clients whose
 * server went away; unhandled, that event would crash the process.
 */
export function createPool(url: string, opts: PoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? 10,
    connectionTimeoutMillis: opts.connectionTimeoutMillis ?? 10_000,
    idleTimeoutMillis: opts.idleTimeoutMillis ?? 30_000,
    application_name: opts.applicationName ?? 'feedmirror',
  });
  targets.set(pool, describeDatabaseUrl(url));
  pool.on('error', (err) => {
    opts.logger?.error(
      { error: redactText(err.message), database: targets.get(pool) },
      'idle PostgreSQL connection failed',
    );
  });
  return pool;
}

/** `postgres://user@host:port/db` without the password (or query string, which may hold one). */
export function describeDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    const user = u.username ? `${decodeURIComponent(u.username)}@` : '';
    return `${u.protocol}//${user}${u.hostname || 'localhost'}:${u.port || '5432'}${u.pathname}`;
  } catch {
    return '(unparseable URL)';
  }
}

function poolTarget(pool: pg.Pool): string {
  const known = targets.get(pool);
  if (known) return known;
  const o = pool.options;
  if (o.connectionString) return describeDatabaseUrl(o.connectionString);
  return `postgres://${o.user ?? ''}@${o.host ?? 'localhost'}:${o.port ?? 5432}/${o.database ?? ''}`;
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
  'EPIPE',
]);

/**
 * Turn a connection-level failure into a DatabaseUnavailableError that tells the operator what
 * to check. Other errors (SQL errors, constraint violations) are returned unchanged.
 */
export function translateDbError(err: unknown, pool: pg.Pool): unknown {
  if (!(err instanceof Error) || err instanceof DatabaseUnavailableError) return err;
  const code = (err as { code?: string }).code;
  const target = poolTarget(pool);
  const hostPort = hostPortOf(target);
  const env = `DATABASE_URL=${target}`;
  if (code && NETWORK_CODES.has(code)) {
    return new DatabaseUnavailableError(
      `cannot reach PostgreSQL at ${hostPort} (${code}); is it running? ${env}`,
      code,
      { cause: err },
    );
  }
  if (/timeout|Connection terminated/i.test(err.message) && !code) {
    return new DatabaseUnavailableError(
      `cannot reach PostgreSQL at ${hostPort} (connection timed out or was closed); is it running? ${env}`,
      'TIMEOUT',
      { cause: err },
    );
  }
  if (code === '3D000') {
    return new DatabaseUnavailableError(
      `PostgreSQL at ${hostPort} has no such database (${redactText(err.message)}); create it or fix ${env}`,
      code,
      { cause: err },
    );
  }
  if (code === '28P01' || code === '28000') {
    return new DatabaseUnavailableError(
      `PostgreSQL at ${hostPort} refused the login (${redactText(err.message)}); check the user and password in DATABASE_URL (${env})`,
      code,
      { cause: err },
    );
  }
  if (code === '57P03') {
    return new DatabaseUnavailableError(
      `PostgreSQL at ${hostPort} is starting up or shutting down (${code}); retry shortly. ${env}`,
      code,
      { cause: err },
    );
  }
  return err;
}

function hostPortOf(target: string): string {
  const m = /\/\/(?:[^@/]*@)?([^/]+)/.exec(target);
  return m?.[1] ?? target;
}

/** Server states that mean "not accepting work now" (admin/crash shutdown, starting, too many clients). */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);

/**
 * Whether an error means PostgreSQL cannot be used right now (down, unreachable, shutting down,
 * full), whether or not translateDbError saw it: a 503 to the dashboard, not a 500.
 */
export function isDatabaseUnreachable(err: unknown): boolean {
  if (err instanceof DatabaseUnavailableError) return true;
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string')
    return NETWORK_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code);
  return /^(Connection terminated|timeout exceeded when trying to connect)/i.test(err.message);
}

/** Check out a client, translating connection failures. */
export async function connect(pool: pg.Pool): Promise<pg.PoolClient> {
  try {
    return await pool.connect();
  } catch (err) {
    throw translateDbError(err, pool);
  }
}

/** Ping: throws DatabaseUnavailableError with a clear message when PostgreSQL is not usable. */
export async function checkDatabase(pool: pg.Pool): Promise<void> {
  const client = await connect(pool);
  try {
    await client.query('SELECT 1');
  } finally {
    client.release();
  }
}

function isPool(db: Db): db is pg.Pool {
  return db instanceof pg.Pool;
}

/** Clients currently inside a withTransaction: nested calls use a savepoint instead of BEGIN. */
const inTransaction = new WeakSet<pg.PoolClient>();
let savepointSeq = 0;

/**
 * Run fn in a transaction. Given the pool, a client is checked out, BEGIN/COMMIT (ROLLBACK on
 * error); given a client already in a transaction, a savepoint, so store functions compose.
 */
export async function withTransaction<T>(db: Db, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  if (!isPool(db)) {
    if (inTransaction.has(db)) {
      const sp = `fm_sp_${++savepointSeq}`;
      await db.query(`SAVEPOINT ${sp}`);
      try {
        const out = await fn(db);
        await db.query(`RELEASE SAVEPOINT ${sp}`);
        return out;
      } catch (err) {
        await db.query(`ROLLBACK TO SAVEPOINT ${sp}`);
        throw err;
      }
    }
    return runTransaction(db, fn);
  }
  const client = await connect(db);
  let broken = false;
  try {
    return await runTransaction(client, fn);
  } catch (err) {
    // A connection-level failure leaves the client unusable: destroy it instead of pooling it.
    broken = translateDbError(err, db) instanceof DatabaseUnavailableError;
    throw translateDbError(err, db);
  } finally {
    client.release(broken);
  }
}

async function runTransaction<T>(client: pg.PoolClient, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  inTransaction.add(client);
  try {
    const out = await fn(client);
    await client.query('COMMIT');
    return out;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    inTransaction.delete(client);
  }
}

/** One round trip: what /readyz asks of PostgreSQL. */
export async function pingDatabase(db: { query(sql: string): Promise<unknown> }): Promise<void> {
  await db.query('SELECT 1');
}

/**
 * Drop and create a database by name, through the server's admin URL (the demo's throwaway
 * database). The name is ours, never user input: it is checked before it reaches SQL.
 */
export async function recreateDatabase(adminUrl: string, name: string): Promise<string> {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`not a database name we create: ${name}`);
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Anything that runs a statement: a pool, a client checked out of one, or a client of its own (doctor). */
export type Queryable = Pick<pg.ClientBase, 'query'>;

/**
 * CREATE DATABASE, run on a connection to another database of the server (it cannot run inside
 * the one it creates, nor in a transaction).
 */
export async function createDatabase(server: Queryable, name: string): Promise<void> {
  await server.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
}

/** Whether every one of these tables exists in the current schema (before migrations, none does). */
export async function tablesExist(db: Queryable, tables: readonly string[]): Promise<boolean> {
  const { rows } = await db.query<{ missing: number }>(
    'SELECT count(*)::int AS missing FROM unnest($1::text[]) AS t(name) WHERE to_regclass(t.name) IS NULL',
    [[...tables]],
  );
  return rows[0]?.missing === 0;
}
