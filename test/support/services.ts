import { inject } from 'vitest';
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';

/** A fresh, empty database on the test Postgres; dropped by the returned `drop`. */
export async function freshDatabase(label = 'test'): Promise<{ url: string; drop: () => Promise<void> }> {
  const adminUrl = inject('databaseUrl');
  const name = `fm_${label
    .replace(/[^a-z0-9]/gi, '')
    .toLowerCase()
    .slice(0, 20)}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        // Let the test's own connections finish closing first: FORCE terminating a connection that
        // is half-way through its own goodbye makes pg raise an error nobody listens to any more.
        for (let i = 0; i < 100; i++) {
          const { rows } = await c.query<{ n: string }>(
            'SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1',
            [name],
          );
          if (Number(rows[0]?.n ?? 0) === 0) break;
          await delay(20);
        }
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** The test Redis and a key prefix of this test's own, so parallel files never collide. */
export function redisForTest(label = 'test'): { url: string; prefix: string } {
  return { url: inject('redisUrl'), prefix: `fmtest:${label}:${randomBytes(4).toString('hex')}` };
}

export interface MigratedDatabase {
  /** A pool on the database, every migration applied. */
  db: pg.Pool;
  url: string;
  /** Ends the pool, then drops the database (a function, so it can be taken out of the object). */
  close: () => Promise<void>;
}

/**
 * A fresh database with every migration applied and a pool on it: what almost every test that
 * touches the store starts with. `max` is the pool's size (the tests' usual 5 unless given).
 */
export async function migratedDatabase(label: string, max = 5): Promise<MigratedDatabase> {
  const fresh = await freshDatabase(label);
  const db = createPool(fresh.url, { max });
  try {
    await migrate(db);
  } catch (e) {
    await db.end();
    await fresh.drop();
    throw e;
  }
  return {
    db,
    url: fresh.url,
    close: async () => {
      await db.end();
      await fresh.drop();
    },
  };
}
