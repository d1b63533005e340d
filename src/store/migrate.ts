import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Logger } from '../util/logger.ts';
import { connect, translateDbError, type Queryable } from './db.ts';
import { DatabaseNewerError, DatabaseUnavailableError, MigrationChecksumError, MigrationError } from './errors.ts';
import { splitStatements } from './sql-statements.ts';

/** migrations/ at the repository root. */
export const DEFAULT_MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

/**
 * A fixed key for pg_try_advisory_xact_lock: every feedmirror process migrating the same database
 * waits for it, so concurrent start-ups apply each migration exactly once. ("fmig" in ASCII.)
 */
export const MIGRATION_LOCK_KEY = 0x666d6967;
/** How often a process waiting for another one's migration asks for the lock again (ms, doubling). */
const LOCK_RETRY_MS = { first: 100, max: 2_000 };

const NAME_RE = /^(\d{3})_[a-z0-9_]+\.sql$/;

export interface MigrationFile {
  name: string;
  sql: string;
  /** What is recorded: the statements' checksum (statementsChecksum). */
  checksum: string;
  /** The whole text's, as checksums were recorded before comments were left out. */
  wholeTextChecksum: string;
  /**
   * `-- compatible-with: NNN_name.sql` in the leading comments: code whose newest migration is
   * that one keeps working on the schema this file leaves (expand and contract; CONTRIBUTING.md).
   * Absent: only code that knows this file runs on it.
   */
  compatibleWith?: string;
  /** false for `-- transaction: none`: each statement runs on its own, outside a transaction. */
  transactional: boolean;
}

/**
 * The header lines of a migration: full-line comments before its first statement. Being comments,
 * they are outside the checksum (statementsChecksum), so adding one never changes an applied file's.
 */
export function migrationHeader(sql: string): { compatibleWith?: string; transactional: boolean } {
  const out: { compatibleWith?: string; transactional: boolean } = { transactional: true };
  for (const line of sql.split('\n')) {
    if (/^\s*$/.test(line)) continue;
    const comment = /^\s*--\s*(.*?)\s*$/.exec(line);
    if (!comment) break;
    const m = /^(compatible-with|transaction):\s*(\S+)$/.exec(comment[1]!);
    if (!m) continue;
    if (m[1] === 'compatible-with') out.compatibleWith = m[2]!;
    else if (m[2] === 'none') out.transactional = false;
    else throw new MigrationError(`"-- transaction: ${m[2]}" is not a header feedmirror knows (only "none")`);
  }
  return out;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * A migration's checksum covers what runs: its text without full-line `--` comments. Rewording the
 * comment of an applied migration is safe; changing a statement is refused.
 */
export function statementsChecksum(sql: string): string {
  return sha256(
    sql
      .split('\n')
      .filter((line) => !/^\s*--/.test(line))
      .join('\n'),
  );
}

/**
 * Checksums recorded before comments were left out of them were of the whole file. These files'
 * comments have been reworded since; their whole text as it shipped is accepted, and the record
 * is brought to the new checksum. (Files whose text is unchanged match their own whole text.)
 */
const SHIPPED_WHOLE_TEXT: Readonly<Record<string, string>> = {
  '005_image_placeholders.sql': '4c189f177554cf4f5c344f2a06a2aa010adc8b98f95ea27e295f00d55ff85aed',
  '007_webhooks.sql': '1d27f71a373ab46916b6a385625913a848338a162b8b0b3474f305fedc4f4f83',
};

/** The ordered migration files of a folder. A .sql file with a bad name is refused, not skipped. */
export async function readMigrations(dir: string = DEFAULT_MIGRATIONS_DIR): Promise<MigrationFile[]> {
  const names = (await readdir(dir)).filter((n) => n.endsWith('.sql')).sort();
  const seen = new Map<string, string>();
  const out: MigrationFile[] = [];
  for (const name of names) {
    const m = NAME_RE.exec(name);
    if (!m) throw new MigrationError(`migration file ${name} in ${dir} must be named NNN_lowercase_name.sql`);
    const num = m[1]!;
    if (seen.has(num)) throw new MigrationError(`migrations ${seen.get(num)} and ${name} share the number ${num}`);
    seen.set(num, name);
    const raw = await readFile(join(dir, name), 'utf8');
    // Line endings normalised so a checkout with CRLF (git autocrlf) keeps the same checksum.
    const sql = raw.replace(/\r\n/g, '\n');
    let header: ReturnType<typeof migrationHeader>;
    try {
      header = migrationHeader(sql);
    } catch (err) {
      throw new MigrationError(`migration ${name}: ${(err as Error).message}`);
    }
    if (header.compatibleWith !== undefined && !out.some((f) => f.name === header.compatibleWith))
      throw new MigrationError(
        `migration ${name}: "-- compatible-with: ${header.compatibleWith}" must name an earlier migration of ${dir}`,
      );
    out.push({
      name,
      sql,
      checksum: statementsChecksum(sql),
      wholeTextChecksum: sha256(sql),
      transactional: header.transactional,
      ...(header.compatibleWith !== undefined ? { compatibleWith: header.compatibleWith } : {}),
    });
  }
  return out;
}

/** A row of schema_migrations. */
export interface AppliedRow {
  name: string;
  checksum: string;
  /** What the file's compatible-with said when it was applied; null: only code that knows it. */
  compatible_with: string | null;
}

/**
 * The applied migrations, read without changing anything (doctor): null when the database has no
 * schema_migrations table yet. A table from before the compatible_with column reads it as null.
 */
export async function readAppliedMigrations(db: Queryable): Promise<AppliedRow[] | null> {
  const table = await db.query<{ t: string | null }>("SELECT to_regclass('schema_migrations')::text AS t");
  if (!table.rows[0]?.t) return null;
  // compatible_with: what each migration of a newer release said older code may run on it.
  const column = await db.query(
    `SELECT 1 FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = 'schema_migrations' AND column_name = 'compatible_with'`,
  );
  const compatibleWith = column.rowCount !== 0 ? 'compatible_with' : 'NULL::text AS compatible_with';
  const { rows } = await db.query<AppliedRow>(
    `SELECT name, checksum, ${compatibleWith} FROM schema_migrations ORDER BY name`,
  );
  return rows;
}

/**
 * Whether this code can run on a database whose applied migrations are `rows`: every applied
 * migration it does not know (a newer release applied it) must have recorded that code knowing one
 * of our migrations keeps working on it. A release rolled back one step finds the newer release's
 * expand-only migrations and runs; a schema two releases ahead, or one a migration of which breaks
 * older code, is refused, naming what it needs.
 */
export function checkCompatibility(files: MigrationFile[], rows: AppliedRow[]): { newer: string[] } {
  const known = new Set(files.map((f) => f.name));
  const newer = rows.filter((r) => !known.has(r.name));
  const blocking = newer.filter((r) => r.compatible_with === null || !known.has(r.compatible_with));
  if (blocking.length > 0) throw new DatabaseNewerError(blocking.map((r) => r.name));
  if (newer.length > 0) {
    const applied = new Set(rows.map((r) => r.name));
    const newest = newer.map((r) => r.name).sort()[0]!;
    const missing = files.filter((f) => !applied.has(f.name) && f.name < newest).map((f) => f.name);
    // A schema a newer release owns is used as it is, never changed by older code.
    if (missing.length > 0)
      throw new MigrationError(
        `database has migrations of a newer feedmirror (${newer.map((r) => r.name).join(', ')}) but lacks ${missing.join(', ')} of this one; run the newer release's migrate`,
      );
  }
  return { newer: newer.map((r) => r.name) };
}

/**
 * Bring the database to the schema of this code. Safe to run from many processes at once,
 * idempotent, and a failing migration leaves the previous ones applied and itself absent.
 * Refuses a database whose applied file was edited afterwards, or that a newer release migrated
 * beyond what this code can run on (checkCompatibility); runs on one it can, changing nothing.
 *
 * R-SCL-2: the exclusion is a transaction-scoped advisory lock (pg_try_advisory_xact_lock) held
 * by a transaction on a connection of its own, which does nothing else: the lock lives exactly as
 * long as that transaction, which a transaction pooler (PgBouncer in transaction mode) keeps on
 * one server connection from BEGIN to COMMIT. A session-level lock would be taken on one server
 * connection and released on another, excluding nothing. A process that finds the lock taken
 * asks again after a pause instead of queueing inside a transaction, so waiting processes hold no
 * server connection of a pooler. The work runs on a second connection: each file in a
 * transaction of its own (a failing one is rolled back alone; the ones before it stay applied),
 * or, for a `-- transaction: none` file, one statement at a time (CREATE INDEX CONCURRENTLY,
 * batched updates that commit as they go). Each file is recorded only while the lock is seen
 * held, so a lock lost with its connection stops the run instead of letting two run at once.
 */
export async function migrate(
  pool: pg.Pool,
  opts: { dir?: string; logger?: Logger } = {},
): Promise<{ applied: string[]; current: string }> {
  const files = await readMigrations(opts.dir);
  // The lock's connection is the pool's settings but not one of its connections: the run needs
  // two, and a pool of one (or one a pooler keeps small) must not wait on itself.
  const lock = new pg.Client(pool.options);
  let work: pg.PoolClient | undefined;
  let workBroken = false;
  const applied: string[] = [];
  // A client whose connection dies emits 'error': without a listener that would end the process.
  // The next query on it fails instead, and says so.
  const ignore = () => undefined;
  lock.on('error', ignore);
  try {
    await lock.connect();
    const holder = await takeLock(lock, opts.logger);
    work = await connect(pool);
    work.on('error', ignore);
    const w = work;
    const failure = await (async (): Promise<MigrationError | undefined> => {
      await w.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        name       text PRIMARY KEY,
        checksum   text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
      // Added in place: a release before this column reads and writes name and checksum only.
      const column = await w.query(
        `SELECT 1 FROM information_schema.columns
          WHERE table_schema = current_schema() AND table_name = 'schema_migrations' AND column_name = 'compatible_with'`,
      );
      if (column.rowCount === 0) await w.query('ALTER TABLE schema_migrations ADD COLUMN compatible_with text');
      const { rows } = await w.query<AppliedRow>(
        'SELECT name, checksum, compatible_with FROM schema_migrations ORDER BY name',
      );
      const { newer } = checkCompatibility(files, rows);
      const appliedBefore = new Map(rows.map((r) => [r.name, r.checksum]));
      const recordedAsWholeText: MigrationFile[] = [];
      for (const f of files) {
        const recorded = appliedBefore.get(f.name);
        if (recorded === undefined || recorded === f.checksum) continue;
        if (recorded === f.wholeTextChecksum || recorded === SHIPPED_WHOLE_TEXT[f.name]) recordedAsWholeText.push(f);
        else throw new MigrationChecksumError(f.name);
      }
      for (const f of recordedAsWholeText) {
        await w.query('UPDATE schema_migrations SET checksum = $2 WHERE name = $1', [f.name, f.checksum]);
      }
      if (newer.length > 0) {
        opts.logger?.warn(
          { newer },
          `database has migrations of a newer feedmirror (${newer.join(', ')}) that declare this release runs on them: running without changing the schema`,
        );
        return undefined;
      }
      for (const f of files) {
        if (appliedBefore.has(f.name)) continue;
        const error = f.transactional
          ? await applyInTransaction(w, f, holder, pool)
          : await applyByStatement(w, f, holder, pool);
        if (error) return error;
        applied.push(f.name);
        opts.logger?.info({ migration: f.name }, 'migration applied');
      }
      return undefined;
    })();
    // The lock goes with its transaction.
    await lock.query('COMMIT');
    if (failure) throw failure;
    const current = files.at(-1)?.name ?? '';
    if (applied.length === 0) opts.logger?.debug({ current }, 'database schema is current');
    return { applied, current };
  } catch (err) {
    const e = translateDbError(err, pool);
    workBroken = e instanceof DatabaseUnavailableError;
    throw e;
  } finally {
    // Closing the connection ends its transaction, and the lock with it, whatever state it is in.
    await lock.end().catch(() => undefined);
    work?.off('error', ignore);
    // A connection that failed must not go back to the pool.
    work?.release(workBroken);
  }
}

/** The lock was seen released while this process migrated (its connection went). */
class MigrationLockLost extends MigrationError {
  override name = 'MigrationLockLost';
}

/**
 * BEGIN and take the migration lock on `client`, asking again after a growing pause while another
 * process holds it. Returns the backend pid that holds it (behind a pooler, the server's).
 */
async function takeLock(client: pg.ClientBase, logger: Logger | undefined): Promise<number> {
  let pause = LOCK_RETRY_MS.first;
  let told = false;
  for (;;) {
    await client.query('BEGIN');
    // The simple protocol (no parameters), on purpose: a parameterised query leaves its portal,
    // and the snapshot in it, open until the next one, so the idle transaction would keep an xmin
    // that CREATE INDEX CONCURRENTLY on the other connection waits for, forever.
    const { rows } = await client.query<{ got: boolean; pid: number }>(
      `SELECT pg_try_advisory_xact_lock(${MIGRATION_LOCK_KEY}) AS got, pg_backend_pid() AS pid`,
    );
    if (rows[0]!.got) return rows[0]!.pid;
    await client.query('ROLLBACK');
    if (!told) logger?.info('another process is migrating the database: waiting for it to finish');
    told = true;
    await new Promise((resolve) => setTimeout(resolve, pause));
    pause = Math.min(pause * 2, LOCK_RETRY_MS.max);
  }
}

async function assertLockHeld(client: pg.PoolClient, holder: number): Promise<void> {
  // A single bigint key shows in pg_locks as classid (high 32 bits), objid (low 32) and objsubid 1.
  const { rows } = await client.query<{ held: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_locks
                     WHERE locktype = 'advisory' AND pid = $1 AND classid = 0 AND objid = $2::bigint::oid
                       AND objsubid = 1 AND granted) AS held`,
    [holder, MIGRATION_LOCK_KEY],
  );
  if (!rows[0]!.held)
    throw new MigrationLockLost('the migration lock was lost (its connection closed); run migrate again');
}

const record = (client: pg.PoolClient, f: MigrationFile) =>
  client.query('INSERT INTO schema_migrations (name, checksum, compatible_with) VALUES ($1, $2, $3)', [
    f.name,
    f.checksum,
    f.compatibleWith ?? null,
  ]);

/** A file and its record in one transaction: all of it or none. Returns the failure, if any. */
async function applyInTransaction(
  client: pg.PoolClient,
  f: MigrationFile,
  holder: number,
  pool: pg.Pool,
): Promise<MigrationError | undefined> {
  await client.query('BEGIN');
  try {
    await client.query(f.sql);
    await assertLockHeld(client, holder);
    await record(client, f);
    await client.query('COMMIT');
    return undefined;
  } catch (err) {
    const e = translateDbError(err, pool);
    if (e !== err) throw e; // the connection went: nothing to roll back
    await client.query('ROLLBACK');
    if (err instanceof MigrationLockLost) throw err;
    return new MigrationError(`migration ${f.name} failed: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * A `-- transaction: none` file: each statement on its own, the record after the last one. A
 * failure leaves the statements before it applied and the file unrecorded, so the next run starts
 * it again from the top: such files are written to be run again (IF NOT EXISTS, batches that skip
 * what is done; CONTRIBUTING.md).
 */
async function applyByStatement(
  client: pg.PoolClient,
  f: MigrationFile,
  holder: number,
  pool: pg.Pool,
): Promise<MigrationError | undefined> {
  const statements = splitStatements(f.sql);
  for (const [i, statement] of statements.entries()) {
    await assertLockHeld(client, holder);
    try {
      await client.query(statement);
    } catch (err) {
      const e = translateDbError(err, pool);
      if (e !== err) throw e;
      return new MigrationError(
        `migration ${f.name} failed at statement ${i + 1} of ${statements.length} (outside a transaction: the ones before it stay, and the file runs again from its start next time): ${(err as Error).message}`,
        { cause: err },
      );
    }
  }
  await assertLockHeld(client, holder);
  await record(client, f);
  return undefined;
}
