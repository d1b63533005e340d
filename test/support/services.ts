import { inject } from 'vitest';
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';

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
