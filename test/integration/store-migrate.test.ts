import { appendFile, cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { checkDatabase, createPool, tablesExist, withTransaction } from '../../src/store/db.ts';
import {
  DatabaseNewerError,
  DatabaseUnavailableError,
  MigrationChecksumError,
  MigrationError,
} from '../../src/store/errors.ts';
import { DEFAULT_MIGRATIONS_DIR, migrate, readAppliedMigrations, readMigrations } from '../../src/store/migrate.ts';
import type { Logger } from '../../src/util/logger.ts';
import { freshDatabase } from '../support/services.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function db(label: string): Promise<{ url: string; pool: pg.Pool }> {
  const d = await freshDatabase(label);
  const pool = createPool(d.url);
  cleanups.push(d.drop, () => pool.end());
  return { url: d.url, pool };
}

/** The project's own migrations, in order; tests add theirs after them. */
const shipped = async () => (await readdir(DEFAULT_MIGRATIONS_DIR)).filter((f) => f.endsWith('.sql')).sort();

async function tmpMigrations(extra: Record<string, string> = {}): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'fm-migrations-'));
  await cp(DEFAULT_MIGRATIONS_DIR, dir, { recursive: true });
  for (const [name, sql] of Object.entries(extra)) await writeFile(join(dir, name), sql);
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe('migrate', () => {
  it('applies every migration once and is idempotent', async () => {
    const { pool } = await db('migidem');
    const files = (await readdir(DEFAULT_MIGRATIONS_DIR)).filter((f) => f.endsWith('.sql')).sort();
    const first = await migrate(pool);
    expect(first.applied).toEqual(files);
    expect(first.current).toBe(files.at(-1));
    const second = await migrate(pool);
    expect(second).toEqual({ applied: [], current: files.at(-1) });
    const { rows } = await pool.query<{ name: string; checksum: string }>(
      'SELECT name, checksum FROM schema_migrations ORDER BY name',
    );
    expect(rows.map((r) => r.name)).toEqual(files);
    expect(rows[0]!.checksum).toMatch(/^[0-9a-f]{64}$/);
    // The schema is really there.
    const t = await pool.query(
      `SELECT to_regclass('accounts') AS a, to_regclass('tokens') AS t, to_regclass('alerts_sent') AS s, to_regclass('token_events') AS e, to_regclass('login_states') AS l`,
    );
    expect(Object.values(t.rows[0] as object).every((v) => v !== null)).toBe(true);
  });

  it('what doctor reads, changing nothing: no migrations table, then every applied migration, also from before compatible_with; whether tables exist', async () => {
    const { pool } = await db('migread');
    expect(await readAppliedMigrations(pool)).toBeNull();
    expect(await tablesExist(pool, ['tokens', 'webhook_endpoints'])).toBe(false);
    expect(await readAppliedMigrations(pool)).toBeNull(); // reading created nothing
    await migrate(pool);
    const applied = await readAppliedMigrations(pool);
    expect(applied?.map((r) => r.name)).toEqual(await shipped());
    expect(applied?.every((r) => /^[0-9a-f]{64}$/.test(r.checksum))).toBe(true);
    expect(await tablesExist(pool, ['tokens', 'webhook_endpoints'])).toBe(true);
    expect(await tablesExist(pool, ['tokens', 'no_such_table'])).toBe(false);
    // A table from before the column (an older release's) reads compatible_with as null.
    await pool.query("UPDATE schema_migrations SET compatible_with = 'x' WHERE name = $1", [applied![0]!.name]);
    expect((await readAppliedMigrations(pool))?.[0]?.compatible_with).toBe('x');
    await pool.query('ALTER TABLE schema_migrations DROP COLUMN compatible_with');
    const older = await readAppliedMigrations(pool);
    expect(older?.length).toBe(applied!.length);
    expect(older?.every((r) => r.compatible_with === null)).toBe(true);
  });

  it('three pools migrating at once apply each migration exactly once (advisory lock)', async () => {
    // Plain CREATE TABLE (no IF NOT EXISTS): a second run of any file would fail loudly.
    const dir = await tmpMigrations({
      '900_extra_one.sql': 'CREATE TABLE extra_one (id int PRIMARY KEY); SELECT pg_sleep(0.05);',
      '901_extra_two.sql': 'CREATE TABLE extra_two (id int PRIMARY KEY);',
    });
    const { url } = await db('migconc');
    const pools = [createPool(url), createPool(url), createPool(url)];
    try {
      const results = await Promise.all(pools.map((p) => migrate(p, { dir })));
      const applied = results.flatMap((r) => r.applied).sort();
      expect(applied).toEqual([...(await shipped()), '900_extra_one.sql', '901_extra_two.sql']);
      expect(results.every((r) => r.current === '901_extra_two.sql')).toBe(true);
      const { rows } = await pools[0]!.query<{ n: string }>('SELECT count(*) AS n FROM schema_migrations');
      expect(Number(rows[0]!.n)).toBe((await shipped()).length + 2);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });

  it('refuses a database that records a migration this code does not know', async () => {
    const { pool } = await db('mignewer');
    await migrate(pool);
    await pool.query(`INSERT INTO schema_migrations (name, checksum) VALUES ('005_x.sql', 'abc')`);
    const err = await migrate(pool).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatabaseNewerError);
    expect((err as Error).message).toBe(
      'database is newer than this feedmirror: migration 005_x.sql is applied but unknown to this release, which cannot run on it; run the release that applied it, or restore the database backup taken before that upgrade (docs/production.md, Rolling back)',
    );
  });

  it('refuses when an applied file was edited afterwards (checksum)', async () => {
    const dir = await tmpMigrations();
    const { pool } = await db('migsum');
    await migrate(pool, { dir });
    await appendFile(join(dir, '001_accounts_tokens.sql'), '\nALTER TABLE accounts ADD COLUMN sneaky text;\n');
    const err = await migrate(pool, { dir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MigrationChecksumError);
    expect((err as Error).message).toContain('migration 001_accounts_tokens.sql was changed after it was applied');
    const col = await pool.query(
      `SELECT 1 FROM information_schema.columns WHERE table_name = 'accounts' AND column_name = 'sneaky'`,
    );
    expect(col.rowCount).toBe(0);
  });

  it('a database whose checksums were recorded over the whole text (comments included) upgrades; a comment reworded is accepted, a statement changed is not', async () => {
    const dir = await tmpMigrations();
    const { pool } = await db('migwhole');
    await migrate(pool, { dir });
    // As an older release recorded them: the sha256 of each file's whole text, and for the two
    // files whose comments were reworded since, the text as it shipped.
    const files = await readMigrations(dir);
    for (const f of files) {
      await pool.query('UPDATE schema_migrations SET checksum = $2 WHERE name = $1', [f.name, f.wholeTextChecksum]);
    }
    await pool.query(`UPDATE schema_migrations SET checksum = $2 WHERE name = $1`, [
      '007_webhooks.sql',
      '1d27f71a373ab46916b6a385625913a848338a162b8b0b3474f305fedc4f4f83',
    ]);
    expect(await migrate(pool, { dir })).toMatchObject({ applied: [] });
    const { rows } = await pool.query<{ name: string; checksum: string }>(
      'SELECT name, checksum FROM schema_migrations',
    );
    expect(new Map(rows.map((r) => [r.name, r.checksum]))).toEqual(new Map(files.map((f) => [f.name, f.checksum])));

    // A comment reworded after it was applied changes nothing that runs.
    const first = join(dir, '001_accounts_tokens.sql');
    await writeFile(first, `-- reworded: what this migration is for\n${await readFile(first, 'utf8')}`);
    expect(await migrate(pool, { dir })).toMatchObject({ applied: [] });
    // A statement is still guarded.
    await appendFile(first, '\nALTER TABLE accounts ADD COLUMN sneaky text;\n');
    expect(await migrate(pool, { dir }).catch((e: unknown) => e)).toBeInstanceOf(MigrationChecksumError);
  });

  it('a failing migration is rolled back whole and names itself; earlier ones stay', async () => {
    const dir = await tmpMigrations({
      '902_broken.sql': 'CREATE TABLE half_done (id int); SELECT * FROM no_such_table;',
    });
    const { pool } = await db('migfail');
    const err = await migrate(pool, { dir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MigrationError);
    expect((err as Error).message).toContain('migration 902_broken.sql failed');
    const { rows } = await pool.query<{ name: string }>('SELECT name FROM schema_migrations');
    expect(rows.map((r) => r.name).sort()).toEqual(await shipped());
    expect((await pool.query(`SELECT to_regclass('half_done') AS t`)).rows[0].t).toBeNull();
  });
});

/** The newest shipped migration: what a release before a new file knows. */
const newestShipped = async () => (await shipped()).at(-1)!;

describe('running on a schema a newer release migrated (rollback)', () => {
  it('a newer migration that declares this code compatible is used as it is: nothing applied, the schema untouched, a warning', async () => {
    const newest = await newestShipped();
    const next = await tmpMigrations({
      '900_expand.sql': `-- A newer release's expand step.\n-- compatible-with: ${newest}\nALTER TABLE accounts ADD COLUMN nickname text;\n`,
    });
    const { pool } = await db('migroll');
    await migrate(pool, { dir: next });
    const { rows } = await pool.query('SELECT name, compatible_with FROM schema_migrations WHERE name = $1', [
      '900_expand.sql',
    ]);
    expect(rows).toEqual([{ name: '900_expand.sql', compatible_with: newest }]);
    // The release before it: the project's own folder, which lacks 900.
    const warnings: string[] = [];
    const logger = { warn: (_o: unknown, msg: string) => warnings.push(msg), info: () => {}, debug: () => {} };
    const result = await migrate(pool, { logger: logger as unknown as Logger });
    expect(result).toEqual({ applied: [], current: newest });
    expect(warnings.join('\n')).toContain('database has migrations of a newer feedmirror (900_expand.sql)');
  });

  it('a newer migration without the header, or compatible only with code this release is not, is refused naming it', async () => {
    const newest = await newestShipped();
    // Two releases ahead: 901 keeps 900's release working, not this one.
    const ahead = await tmpMigrations({
      '900_expand.sql': `-- compatible-with: ${newest}\nALTER TABLE accounts ADD COLUMN nickname text;\n`,
      '901_contract.sql': `-- compatible-with: 900_expand.sql\nALTER TABLE accounts DROP COLUMN display_name;\n`,
    });
    const { pool } = await db('migahead');
    await migrate(pool, { dir: ahead });
    const err = await migrate(pool).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatabaseNewerError);
    expect((err as DatabaseNewerError).unknown).toEqual(['901_contract.sql']);
    expect((err as Error).message).toContain('restore the database backup taken before that upgrade');
    // The release between them runs on it.
    const between = await tmpMigrations({
      '900_expand.sql': `-- compatible-with: ${newest}\nALTER TABLE accounts ADD COLUMN nickname text;\n`,
    });
    expect(await migrate(pool, { dir: between })).toEqual({ applied: [], current: '900_expand.sql' });
  });

  it('the header is a comment: adding it to an applied file changes no checksum', async () => {
    const dir = await tmpMigrations();
    const { pool } = await db('mighdr');
    await migrate(pool, { dir });
    const file = join(dir, '018_compact_posts_and_copies.sql');
    await writeFile(file, `-- compatible-with: 017_leases.sql\n${await readFile(file, 'utf8')}`);
    expect(await migrate(pool, { dir })).toMatchObject({ applied: [] });
  });

  it('a header naming no earlier migration is refused when the files are read', async () => {
    const dir = await tmpMigrations({ '900_bad.sql': '-- compatible-with: 950_later.sql\nSELECT 1;\n' });
    await expect(readMigrations(dir)).rejects.toThrow(
      'migration 900_bad.sql: "-- compatible-with: 950_later.sql" must name an earlier migration',
    );
  });
});

describe('migrations outside a transaction (-- transaction: none)', () => {
  const concurrently = [
    '-- transaction: none',
    '-- An index built without blocking writers, and a batched update that commits each batch.',
    'DROP INDEX CONCURRENTLY IF EXISTS accounts_username_idx;',
    'CREATE INDEX CONCURRENTLY accounts_username_idx ON accounts (username);',
    `DO $$
DECLARE n integer;
BEGIN
  LOOP
    UPDATE accounts SET status_reason = 'batched; done' WHERE id IN (
      SELECT id FROM accounts WHERE status_reason IS NULL LIMIT 2);
    GET DIAGNOSTICS n = ROW_COUNT;
    COMMIT;
    EXIT WHEN n = 0;
  END LOOP;
END $$;`,
  ].join('\n');

  it('runs statements a transaction refuses (CREATE INDEX CONCURRENTLY, COMMIT in a DO block) and records the file', async () => {
    const { pool } = await db('mignotx');
    await migrate(pool);
    for (const id of ['a1', 'a2', 'a3', 'a4', 'a5'])
      await pool.query(`INSERT INTO accounts (id, username) VALUES ($1, $1)`, [id]);
    const dir = await tmpMigrations({ '900_index.sql': concurrently });
    expect(await migrate(pool, { dir })).toMatchObject({ applied: ['900_index.sql'] });
    const idx = await pool.query(
      `SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('accounts_username_idx')`,
    );
    expect(idx.rows).toEqual([{ indisvalid: true }]);
    const done = await pool.query(`SELECT count(*)::int AS n FROM accounts WHERE status_reason = 'batched; done'`);
    expect(done.rows[0].n).toBe(5);
    // The same text in a transaction is refused by PostgreSQL: the header is what makes it run.
    const inTx = await tmpMigrations({ '900_index.sql': concurrently.replace('-- transaction: none\n', '') });
    const { pool: other } = await db('mignotx2');
    const err = await migrate(other, { dir: inTx }).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/cannot run inside a transaction block/);
  });

  it('three pools at once apply it exactly once, one statement after the other', async () => {
    // Plain CREATE TABLE: a second run of the file would fail loudly.
    const dir = await tmpMigrations({
      '900_notx.sql':
        '-- transaction: none\nCREATE TABLE notx_one (id int PRIMARY KEY);\nSELECT pg_sleep(0.1);\nCREATE TABLE notx_two (id int);\n',
    });
    const { url } = await db('mignotxconc');
    const pools = [createPool(url), createPool(url), createPool(url)];
    try {
      const results = await Promise.all(pools.map((p) => migrate(p, { dir })));
      expect(results.flatMap((r) => r.applied).filter((n) => n === '900_notx.sql')).toHaveLength(1);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });

  it('a failing statement leaves the ones before it, names itself, and the file runs again from its start', async () => {
    const dir = await tmpMigrations({
      '900_retry.sql':
        '-- transaction: none\nCREATE TABLE IF NOT EXISTS retry_me (id int);\nINSERT INTO no_such_table VALUES (1);\n',
    });
    const { pool } = await db('mignotxfail');
    const err = await migrate(pool, { dir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MigrationError);
    expect((err as Error).message).toContain('migration 900_retry.sql failed at statement 2 of 2');
    expect((await pool.query(`SELECT to_regclass('retry_me') AS t`)).rows[0].t).toBe('retry_me');
    expect((await pool.query(`SELECT 1 FROM schema_migrations WHERE name = '900_retry.sql'`)).rowCount).toBe(0);
    await pool.query('CREATE TABLE no_such_table (id int)');
    expect(await migrate(pool, { dir })).toMatchObject({ applied: ['900_retry.sql'] });
  });

  it('stops when the lock is lost with its connection, instead of going on beside another process', async () => {
    const dir = await tmpMigrations({
      '900_lose.sql': [
        '-- transaction: none',
        // This database's lock only (other test files migrate their own databases meanwhile), and
        // waiting until the holder is gone: termination is otherwise asynchronous.
        `SELECT pg_terminate_backend(pid, 10000) FROM pg_locks WHERE locktype = 'advisory' AND objid = 1718446439::oid AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database());`,
        'CREATE TABLE never_made (id int);',
      ].join('\n'),
    });
    const { pool } = await db('miglost');
    const err = await migrate(pool, { dir }).catch((e: unknown) => e);
    expect((err as Error).message).toContain('the migration lock was lost');
    expect((await pool.query(`SELECT to_regclass('never_made') AS t`)).rows[0].t).toBeNull();
  });
});

describe('database errors', () => {
  const pools: pg.Pool[] = [];
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((p) => p.end()));
  });

  it('an unreachable database gives DatabaseUnavailableError naming host, cause and URL without the password', async () => {
    const pool = createPool('postgres://feedmirror:Sup3rSecretPw@127.0.0.1:1/feedmirror', {
      connectionTimeoutMillis: 3000,
    });
    pools.push(pool);
    const err = await migrate(pool).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatabaseUnavailableError);
    const msg = (err as Error).message;
    expect(msg).toBe(
      'cannot reach PostgreSQL at 127.0.0.1:1 (ECONNREFUSED); is it running? DATABASE_URL=postgres://feedmirror@127.0.0.1:1/feedmirror',
    );
    expect(msg).not.toContain('Sup3rSecretPw');
    await expect(checkDatabase(pool)).rejects.toBeInstanceOf(DatabaseUnavailableError);
    await expect(withTransaction(pool, async () => 1)).rejects.toBeInstanceOf(DatabaseUnavailableError);
  });

  it('a missing database says so', async () => {
    const { url } = await db('migmissing');
    const u = new URL(url);
    u.pathname = '/fm_does_not_exist_at_all';
    const pool = createPool(u.toString());
    pools.push(pool);
    const err = await checkDatabase(pool).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatabaseUnavailableError);
    expect((err as DatabaseUnavailableError).code).toBe('3D000');
    expect((err as Error).message).toContain('has no such database');
  });
});
