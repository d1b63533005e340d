import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import type { Logger } from '../util/logger.ts';
import { connect, translateDbError } from './db.ts';
import { DatabaseNewerError, MigrationChecksumError, MigrationError } from './errors.ts';

/** migrations/ at the repository root. */
export const DEFAULT_MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

/**
 * A fixed key for pg_advisory_xact_lock: every feedmirror process migrating the same database
 * queues on it, so concurrent start-ups apply each migration exactly once. ("fmig" in ASCII.)
 */
export const MIGRATION_LOCK_KEY = 0x666d6967;

const NAME_RE = /^(\d{3})_[a-z0-9_]+\.sql$/;

export interface MigrationFile {
  name: string;
  sql: string;
  /** What is recorded: the statements' checksum (statementsChecksum). */
  checksum: string;
  /** The whole text's, as checksums were recorded before comments were left out. */
  wholeTextChecksum: string;
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
    out.push({ name, sql, checksum: statementsChecksum(sql), wholeTextChecksum: sha256(sql) });
  }
  return out;
}

/**
 * Bring the database to the schema of this code. Safe to run from many processes at once,
 * idempotent, and a failing migration leaves the previous ones applied and itself absent.
 * Refuses a database that records a migration we do not know (it is newer than this code) or
 * whose applied file was edited afterwards.
 *
 * R-SCL-2: the whole run is one transaction that starts with a transaction-scoped advisory lock
 * (pg_advisory_xact_lock): the lock is held exactly as long as the transaction, which a
 * transaction pooler (PgBouncer in transaction mode) keeps on one server connection from BEGIN to
 * COMMIT. A session-level lock would be taken on one server connection and released on another,
 * excluding nothing. Each file runs under its own savepoint, so a failing one is rolled back alone
 * and the ones before it are committed.
 */
export async function migrate(
  pool: pg.Pool,
  opts: { dir?: string; logger?: Logger } = {},
): Promise<{ applied: string[]; current: string }> {
  const files = await readMigrations(opts.dir);
  const client = await connect(pool);
  let broken = false;
  try {
    await client.query('BEGIN');
    let failure: MigrationError | undefined;
    const applied: string[] = [];
    try {
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
      await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        name       text PRIMARY KEY,
        checksum   text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
      const { rows } = await client.query<{ name: string; checksum: string }>(
        'SELECT name, checksum FROM schema_migrations ORDER BY name',
      );
      const known = new Map(files.map((f) => [f.name, f]));
      const unknown = rows.filter((r) => !known.has(r.name)).map((r) => r.name);
      if (unknown.length > 0) throw new DatabaseNewerError(unknown);
      const appliedBefore = new Map(rows.map((r) => [r.name, r.checksum]));
      const recordedAsWholeText: MigrationFile[] = [];
      for (const f of files) {
        const recorded = appliedBefore.get(f.name);
        if (recorded === undefined || recorded === f.checksum) continue;
        if (recorded === f.wholeTextChecksum || recorded === SHIPPED_WHOLE_TEXT[f.name]) recordedAsWholeText.push(f);
        else throw new MigrationChecksumError(f.name);
      }
      for (const f of recordedAsWholeText) {
        await client.query('UPDATE schema_migrations SET checksum = $2 WHERE name = $1', [f.name, f.checksum]);
      }

      for (const f of files) {
        if (appliedBefore.has(f.name)) continue;
        await client.query('SAVEPOINT feedmirror_migration');
        try {
          await client.query(f.sql);
          await client.query('INSERT INTO schema_migrations (name, checksum) VALUES ($1, $2)', [f.name, f.checksum]);
          await client.query('RELEASE SAVEPOINT feedmirror_migration');
        } catch (err) {
          const e = translateDbError(err, pool);
          if (e !== err) throw e; // the connection went: nothing to commit
          await client.query('ROLLBACK TO SAVEPOINT feedmirror_migration');
          failure = new MigrationError(`migration ${f.name} failed: ${(err as Error).message}`, { cause: err });
          break;
        }
        applied.push(f.name);
      }
      // The files before a failing one stay applied; the lock goes with the transaction.
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw err;
    }
    for (const name of applied) opts.logger?.info({ migration: name }, 'migration applied');
    if (failure) throw failure;
    const current = files.at(-1)?.name ?? '';
    if (applied.length === 0) opts.logger?.debug({ current }, 'database schema is current');
    return { applied, current };
  } catch (err) {
    throw translateDbError(err, pool);
  } finally {
    // A connection whose transaction could not be ended must not go back to the pool.
    client.release(broken);
  }
}
