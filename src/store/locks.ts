import type pg from 'pg';

/**
 * Run `fn` holding a session-level Postgres advisory lock named `name`, or return undefined at
 * once when another process holds it. The lock lives on one pooled connection and dies with it,
 * so a process killed while holding it never leaves it taken.
 */
export async function withAdvisoryLock<T>(pool: pg.Pool, name: string, fn: () => Promise<T>): Promise<T | undefined> {
  const client = await pool.connect();
  let locked = false;
  try {
    const res = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked', [name]);
    locked = res.rows[0]?.locked === true;
    if (!locked) return undefined;
    return await fn();
  } finally {
    if (locked) await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [name]).catch(() => undefined);
    client.release();
  }
}
