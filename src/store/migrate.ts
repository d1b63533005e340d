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
 * A fixed key for pg_advisory_lock: every feedmirror process migrating the same database queues
 * on it, so concurrent start-ups apply each migration exactly once. ("fmig" in ASCII.)
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
 * Bring the database to the schema of this code. Safe to run from many processes at once (an
 * advisory lock held on one connection serialises them), idempotent, and each file runs in its
 * own transaction so a failing migration leaves the previous ones applied and itself absent.
 * Refuses a database that records a migration we do not know (it is newer than this code) or
 * whose applied file was edited afterwards.
 */
export async function migrate(
  pool: pg.Pool,
  opts: { dir?: string; logger?: Logger } = {},
): Promise<{ applied: string[]; current: string }> {
  const files = await readMigrations(opts.dir);
  const client = await connect(pool);
  let unlockFailed = false;
  try {
    // Session-level lock: it must be taken and released on this same connection.
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
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

      const applied: string[] = [];
      for (const f of files) {
        if (appliedBefore.has(f.name)) continue;
        await client.query('BEGIN');
        try {
          await client.query(f.sql);
          await client.query('INSERT INTO schema_migrations (name, checksum) VALUES ($1, $2)', [f.name, f.checksum]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(() => undefined);
          const e = translateDbError(err, pool);
          if (e !== err) throw e;
          throw new MigrationError(`migration ${f.name} failed: ${(err as Error).message}`, { cause: err });
        }
        applied.push(f.name);
        opts.logger?.info({ migration: f.name }, 'migration applied');
      }
      const current = files.at(-1)?.name ?? '';
      if (applied.length === 0) opts.logger?.debug({ current }, 'database schema is current');
      return { applied, current };
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => {
        unlockFailed = true;
      });
    }
  } catch (err) {
    throw translateDbError(err, pool);
  } finally {
    // A connection that may still hold the lock must not go back to the pool.
    client.release(unlockFailed);
  }
}
