import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import { withTransaction, type Db } from './db.ts';

/**
 * Leases: "one process of the cluster does this at a time" (the schedule reconciler's leader),
 * kept in a row of `leases` with an expiry and a fencing token.
 *
 * R-SCL-2: nothing here depends on the database session. A session-level advisory lock lives on
 * one server connection, and behind a transaction pooler (PgBouncer in transaction mode) the next
 * statement may run on another connection, where the lock is not held, or another process's
 * statement on the same one, where it is (advisory locks are re-entrant): both would lead. Every
 * statement below is one statement, decided by the row alone, so it holds through any pooler.
 *
 * Time is the database's (now()), the one clock every worker shares; the holder renews the lease
 * well before it expires. A process killed while holding it leaves a row that lapses after its
 * time to live; one that stops cleanly releases it at once.
 */

/** A holder id: host, process id and a random part (two holders in one process differ). */
export function newHolderId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

/**
 * Take (or renew) the lease `name` for `ttlMs`: one statement. Returns its fence when `holder`
 * holds it now, null when another holder's lease is still running. The fence goes up by one
 * whenever the lease was not a running lease of this same holder.
 */
export async function acquireLease(db: Db, name: string, holder: string, ttlMs: number): Promise<number | null> {
  const { rows } = await db.query<{ fence: string }>(
    `INSERT INTO leases AS l (name, holder, fence, expires_at)
     VALUES ($1, $2, 1, now() + make_interval(secs => $3::double precision / 1000))
     ON CONFLICT (name) DO UPDATE
       SET holder = EXCLUDED.holder,
           fence = CASE WHEN l.holder = EXCLUDED.holder AND l.expires_at > now() THEN l.fence ELSE l.fence + 1 END,
           expires_at = EXCLUDED.expires_at
       WHERE l.holder = EXCLUDED.holder OR l.expires_at <= now()
     RETURNING fence`,
    [name, holder, ttlMs],
  );
  return rows[0] ? Number(rows[0].fence) : null;
}

/** Extend a running lease of `holder` under `fence`; false when it lapsed or changed hands. */
export async function renewLease(db: Db, name: string, holder: string, fence: number, ttlMs: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE leases SET expires_at = now() + make_interval(secs => $4::double precision / 1000)
     WHERE name = $1 AND holder = $2 AND fence = $3 AND expires_at > now()`,
    [name, holder, fence, ttlMs],
  );
  return rowCount === 1;
}

/** Give the lease up at once (it lapses now); the row stays, so the fence keeps counting. */
export async function releaseLease(db: Db, name: string, holder: string, fence: number): Promise<void> {
  await db.query(
    `UPDATE leases SET expires_at = now() WHERE name = $1 AND holder = $2 AND fence = $3 AND expires_at > now()`,
    [name, holder, fence],
  );
}

/** A lease this process holds and renews until it is released or lost. */
export interface HeldLease {
  readonly name: string;
  readonly holder: string;
  readonly fence: number;
  /**
   * False once a renewal found the lease gone, or no renewal succeeded within the time to live
   * (the database unreachable): another process may hold it by now.
   */
  readonly held: boolean;
  /** Renew now; false (and held false) when the lease is no longer this holder's. */
  renew(): Promise<boolean>;
  /** Stop renewing and give the lease up; `forget` deletes the row (for leases of one item, no fence kept). */
  release(opts?: { forget?: boolean }): Promise<void>;
}

export interface HoldLeaseOptions {
  /** How long the lease runs without a renewal (what a killed holder delays a successor by). */
  ttlMs: number;
  /** Who holds it; newHolderId() unless given. */
  holder?: string;
}

/**
 * Take the lease `name` and keep it, renewing every third of its time to live; null at once when
 * another process holds it.
 */
export async function holdLease(pool: pg.Pool, name: string, opts: HoldLeaseOptions): Promise<HeldLease | null> {
  const holder = opts.holder ?? newHolderId();
  const ttlMs = opts.ttlMs;
  const fence = await acquireLease(pool, name, holder, ttlMs);
  if (fence === null) return null;
  // Counted from before the statement was sent: the lease can only have started later.
  let renewedAt = Date.now();
  let lost = false;
  let released = false;
  const renew = async (): Promise<boolean> => {
    if (lost || released) return false;
    const sentAt = Date.now();
    try {
      if (await renewLease(pool, name, holder, fence, ttlMs)) renewedAt = sentAt;
      else lost = true;
    } catch {
      // Unreachable: still ours until the time to live has run out since the last renewal.
    }
    return lease.held;
  };
  const timer = setInterval(() => void renew(), Math.max(100, Math.floor(ttlMs / 3)));
  timer.unref();
  const lease: HeldLease = {
    name,
    holder,
    fence,
    get held() {
      return !lost && !released && Date.now() - renewedAt < ttlMs;
    },
    renew,
    async release(releaseOpts = {}) {
      clearInterval(timer);
      if (released) return;
      released = true;
      if (lost) return;
      const done = releaseOpts.forget
        ? pool.query('DELETE FROM leases WHERE name = $1 AND holder = $2 AND fence = $3', [name, holder, fence])
        : releaseLease(pool, name, holder, fence);
      await done.catch(() => undefined);
    },
  };
  return lease;
}

/**
 * Run `fn` holding a transaction-scoped advisory lock named `name`, or return undefined at once
 * when another process holds it: for a short per-item section (one account's token refresh).
 * The lock lives in a transaction left open on one connection while `fn` runs (its own queries
 * use the pool). Behind a transaction pooler the open transaction keeps its server connection, so
 * the lock holds (R-SCL-2); and it ends with the connection, so a process killed inside `fn` holds
 * nobody back (a lease would, for its time to live: R-TOK-6's next run must not wait).
 */
export async function withTransactionLock<T>(
  pool: pg.Pool,
  name: string,
  fn: () => Promise<T>,
): Promise<T | undefined> {
  let locked = false;
  const out = await withTransaction(pool, async (client) => {
    const res = await client.query<{ locked: boolean }>(
      'SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS locked',
      [name],
    );
    locked = res.rows[0]?.locked === true;
    return locked ? fn() : undefined;
  });
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- set in the callback; narrowing does not follow it
  return locked ? out : undefined;
}
