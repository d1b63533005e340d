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
    const res = await client.query<{ locked: boolean }>(
      'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked',
      [name],
    );
    locked = res.rows[0]?.locked === true;
    if (!locked) return undefined;
    return await fn();
  } finally {
    if (locked) await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [name]).catch(() => undefined);
    client.release();
  }
}

/** A session-level advisory lock held on its own connection until released (or the process dies). */
export interface HeldLock {
  /** False once the connection broke: the lock is gone with it. */
  readonly held: boolean;
  release(): Promise<void>;
}

/**
 * Take `name` and keep it: for "one process in the cluster does this" (the schedule
 * reconciler's leader). Null at once when another process holds it. The lock lives on one
 * dedicated pooled connection; if that connection breaks, `held` turns false and the caller
 * tries again later. A killed process frees it with its connection.
 */
export async function holdAdvisoryLock(pool: pg.Pool, name: string): Promise<HeldLock | null> {
  const client = await pool.connect();
  let held: boolean;
  try {
    const res = await client.query<{ locked: boolean }>(
      'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked',
      [name],
    );
    held = res.rows[0]?.locked === true;
  } catch (err) {
    client.release(err as Error);
    throw err;
  }
  if (!held) {
    client.release();
    return null;
  }
  let broken = false;
  const onError = () => {
    broken = true;
  };
  client.on('error', onError);
  return {
    get held() {
      return !broken;
    },
    async release() {
      client.off('error', onError);
      if (broken) return client.release(true);
      await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [name]).catch(() => undefined);
      client.release();
    },
  };
}
