import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { redisClient, type RedisSettings } from '../jobs/queues.ts';

/**
 * A database of the benchmark's own on the Postgres named by DATABASE_URL (default the local
 * trust-auth server infra/ensure.sh starts), dropped by `drop`: the bench never touches real data.
 */
export async function benchDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `fm_bench_${randomBytes(4).toString('hex')}`;
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return { url: u.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/** Redis settings with a key prefix of this run's own, so a bench never touches real queues. */
export function benchRedis(): RedisSettings {
  return {
    url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    prefix: `fmbench:${randomBytes(4).toString('hex')}`,
  };
}

/** Deletes every key under the bench's prefix (queues, schedulers, pacing counts). */
export async function clearBenchRedis(redis: RedisSettings): Promise<void> {
  const r = redisClient(redis);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${redis.prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await r.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    r.disconnect();
  }
}

/** Every cleanup stack not yet run: what Ctrl-C (or a kill) must still tear down. */
const pending = new Set<Array<() => Promise<unknown>>>();
let signalsHandled = false;
let signalled = false;

/** A SIGINT or SIGTERM came: the cleanup is under way and the process ends when it is done. */
export function interrupted(): boolean {
  return signalled;
}

/** On SIGINT/SIGTERM: run what is pending, then exit 130/143, as a shell expects of an interrupted command. */
function cleanUpOnSignals(): void {
  if (signalsHandled) return;
  signalsHandled = true;
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    process.once(signal, () => {
      signalled = true;
      process.stderr.write(`bench: ${signal}: removing the bench's database, Redis keys and child processes\n`);
      const runs = [...pending].map((steps) => runSteps(steps));
      // A second signal while cleaning up ends the process at once.
      process.once(signal, () => process.exit(code));
      void Promise.allSettled(runs).then(() => process.exit(code));
    });
  }
}

async function runSteps(steps: Array<() => Promise<unknown>>): Promise<void> {
  pending.delete(steps);
  for (const step of steps.splice(0).reverse())
    await step().catch((err: unknown) => process.stderr.write(`bench cleanup: ${(err as Error).message}\n`));
}

/**
 * Teardown steps, run last in first out by `run`; a step that fails is reported on stderr and the
 * others still run, so a half-started bench leaves no database, prefix or child process behind:
 * not on an error, and not on Ctrl-C either (a soak runs for 15 minutes; an interrupted one used
 * to leave its database and some 50,000 Redis keys).
 */
export function cleanupStack(): { push: (step: () => Promise<unknown>) => void; run: () => Promise<void> } {
  cleanUpOnSignals();
  const steps: Array<() => Promise<unknown>> = [];
  pending.add(steps);
  return {
    push: (step) => void steps.push(step),
    run: () => runSteps(steps),
  };
}
