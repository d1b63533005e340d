import { appendFile, cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { checkDatabase, createPool, withTransaction } from '../../src/store/db.ts';
import {
  DatabaseNewerError,
  DatabaseUnavailableError,
  MigrationChecksumError,
  MigrationError,
} from '../../src/store/errors.ts';
import { DEFAULT_MIGRATIONS_DIR, migrate, readMigrations } from '../../src/store/migrate.ts';
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
      'database is newer than this feedmirror: migration 005_x.sql is applied but unknown; upgrade feedmirror',
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
