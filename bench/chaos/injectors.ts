import { DeleteObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { S3RVER_CREDENTIALS } from '../../test/support/s3.ts';
import { MINUTE } from '../../src/util/clock.ts';
import type { PlannedFault } from './schedule.ts';
import type { World } from './world.ts';

/**
 * How each fault kind starts and ends. `start` does the damage and returns what ends it; an
 * instant kind (a Redis flush, an operator's action) ends by itself. Platform faults act through
 * the simulator's controls, ground faults on the processes, Redis and the proxies, operator
 * faults through the real CLI.
 */

export interface SoakAccount {
  id: string;
  username: string;
}

export interface InjectorContext {
  world: World;
  accounts: SoakAccount[];
  /** The account of a per-account fault (by the plan's index, modulo the accounts there are now). */
  target(f: PlannedFault): SoakAccount | undefined;
  /** The owner logs in again: a new token, `feedmirror accounts add` (the real CLI). */
  reconnect(a: SoakAccount): Promise<void>;
  /** An operator adds a new account (platform and `accounts add`). */
  addAccount(): Promise<void>;
  removeAccount(a: SoakAccount): Promise<void>;
  /** The token of this account is known broken / whole again (the checker's truth). */
  broken(a: SoakAccount, since: number | null): void;
  /** Images a fault deleted behind feedmirror's back: the checker waits for the repair. */
  exemptImages(urls: string[], on: boolean): void;
  /** An operator's task that may fail while the ground is down: tried again every step until it returns true. */
  retry(task: () => Promise<boolean>): void;
  restartAll(): Promise<void>;
  log(line: string): void;
}

export type Ender = () => Promise<void>;
const nothing: Ender = async () => undefined;

/** A fault list entry that matches while `on` is true (the simulator's faults fire until removed). */
function switchable(
  world: World,
  kind: 'status' | 'timeout' | 'rate-limit' | 'json',
  match: (r: { host: string; path: string; query: Record<string, string> }) => boolean,
  extra: { status?: number; code?: number; regainMinutes?: number; body?: unknown } = {},
): Ender {
  const state = { on: true };
  world.sim.injectFault({ kind, times: Infinity, match: (r) => state.on && match(r), ...extra });
  return async () => {
    state.on = false;
  };
}

const ofAccount = (world: World, a: SoakAccount) => (r: { query: Record<string, string> }) =>
  world.sim.accountOfToken(r.query.access_token ?? '') === a.id;

export async function startFault(f: PlannedFault, c: InjectorContext): Promise<Ender> {
  const { world } = c;
  const sim = world.sim;
  const a = c.target(f);
  let n = 0;
  switch (f.kind) {
    case 'platform-5xx':
      // A burst: three calls in five fail with a 5xx, the rest go through.
      return switchable(world, 'status', (r) => r.host === 'graph' && n++ % 5 < 3, { status: 500 + (f.salt % 4) });
    case 'platform-timeout':
      if (!a) return nothing;
      return switchable(world, 'timeout', (r) => r.host === 'graph' && ofAccount(world, a)(r) && n++ % 2 === 0);
    case 'app-rate-limit': {
      sim.rateLimitFor(Math.round((f.endMs - f.startMs) / 1000));
      return async () => void sim.rateLimitFor(0);
    }
    case 'account-rate-limit':
      if (!a) return nothing;
      return switchable(world, 'rate-limit', (r) => r.host === 'graph' && ofAccount(world, a)(r), {
        status: 400,
        code: 17,
        regainMinutes: Math.max(1, Math.round((f.endMs - f.startMs) / MINUTE)),
      });
    case 'empty-listing':
      if (!a) return nothing;
      return switchable(world, 'json', (r) => r.host === 'graph' && /\/media$/.test(r.path) && ofAccount(world, a)(r), {
        body: { data: [] },
      });
    case 'links-without-oe': {
      if (!a) return nothing;
      const ids = sim
        .posts(a.id)
        .slice(0, 3)
        .map((p) => p.id);
      for (const id of ids) sim.updatePost(a.id, id, { linksWithoutOe: true });
      return async () => {
        const alive = new Set(sim.posts(a.id).map((p) => p.id));
        for (const id of ids) if (alive.has(id)) sim.updatePost(a.id, id, { linksWithoutOe: false });
      };
    }
    case 'malformed-items':
      if (!a) return nothing;
      // A 'TEXT' item the schema does not know, one without a timestamp, one with a wrong type.
      sim.addRawItem(a.id, {
        id: `9${f.salt}1`,
        media_type: 'TEXT',
        caption: 'text only',
        timestamp: new Date(world.now()).toISOString(),
      });
      sim.addRawItem(a.id, { id: `9${f.salt}2`, media_type: 'IMAGE', caption: 'no timestamp' });
      sim.addRawItem(a.id, { id: 12345, media_type: ['IMAGE'], timestamp: 'yesterday' });
      return async () => sim.clearRawItems(a.id);
    case 'endless-paging':
      if (!a) return nothing;
      sim.setEndlessPaging(a.id, f.salt % 2 ? 'new-cursor' : 'same-cursor');
      return async () => sim.setEndlessPaging(a.id, null);
    case 'token-revoked':
    case 'password-changed': {
      if (!a) return nothing;
      if (f.kind === 'token-revoked') sim.revokeTokens(a.id);
      else sim.setPasswordChanged(a.id, true);
      c.broken(a, world.now());
      return async () => {
        if (f.kind === 'password-changed') sim.setPasswordChanged(a.id, false);
        await c.reconnect(a);
        c.broken(a, null);
      };
    }
    case 'image-host-down':
      return switchable(world, 'status', (r) => r.host === 'cdn', { status: 503 });
    case 'links-die-early':
      // Signed links refused before their expiry, as the image host does at times.
      return switchable(world, 'status', (r) => r.host === 'cdn' && n++ % 3 === 0, { status: 403 });
    case 'redis-flush':
      await world.flushRedis().catch((err: unknown) => c.log(`redis-flush: ${String(err)}`));
      return nothing;
    case 'redis-restart':
      await world.stopRedis();
      return () => world.startRedis();
    case 'postgres-restart':
      await world.pgProxy.down();
      return () => world.pgProxy.up();
    case 'worker-killed': {
      const i = f.salt % 2;
      await world.workers[i]?.stop('SIGKILL');
      return async () => {
        await world.startWorker(i);
      };
    }
    case 'storage-down':
      await world.s3Proxy.down();
      return () => world.s3Proxy.up();
    case 'objects-deleted': {
      if (!a) return nothing;
      const deleted = await deleteSomeObjects(world, a, 1 + (f.salt % 3));
      c.exemptImages(deleted, true);
      // The operator notices and runs the repair the runbook names, again until it succeeds (it
      // exits 3 while Redis or PostgreSQL is down).
      return async () => {
        const repair = async () => {
          const r = await world.cli(['verify', '--repair', '--account', a.id, '--json']);
          c.log(`verify --repair --account ${a.id}: exit ${r.code}`);
          // 3: a service unreachable, worth another try; otherwise the checker judges what it left.
          if (r.code === 3) return false;
          c.exemptImages(deleted, false);
          return true;
        };
        if (!(await repair())) c.retry(repair);
      };
    }
    case 'clock-skew': {
      const i = f.salt % 2;
      const minutes = 2 + (f.salt % 9);
      world.skew(i, (f.salt % 2 ? 1 : -1) * minutes * MINUTE);
      return async () => world.skew(i, 0);
    }
    case 'account-added':
      await c.addAccount();
      return nothing;
    case 'account-removed':
      if (a) await c.removeAccount(a);
      return nothing;
    case 'verify-repair': {
      // Beside the running syncs, not waited for by the next step.
      void world.cli(['verify', '--repair', '--json']).then((r) => c.log(`verify --repair: exit ${r.code}`));
      return nothing;
    }
    case 'key-rotation': {
      const key = randomBytes(32).toString('base64');
      world.secrets.add(key);
      world.env.TOKEN_ENCRYPTION_KEY = `k${f.id + 1}:${key},${world.env.TOKEN_ENCRYPTION_KEY}`;
      await c.restartAll();
      const r = await world.cli(['keys', 'rotate', '--json']);
      c.log(`keys rotate: exit ${r.code}`);
      return nothing;
    }
    case 'restart-all':
      await c.restartAll();
      return nothing;
  }
}

/** Delete up to `n` media objects of the account from the storage, as someone outside feedmirror does. */
async function deleteSomeObjects(world: World, a: SoakAccount, n: number): Promise<string[]> {
  const s3 = new S3Client({
    endpoint: world.s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: S3RVER_CREDENTIALS,
  });
  try {
    const listed = await s3.send(
      new ListObjectsV2Command({ Bucket: world.s3.bucket, Prefix: `feedmirror/media/${a.id}/`, MaxKeys: 50 }),
    );
    const keys = (listed.Contents ?? [])
      .map((o) => o.Key as string)
      .filter((k) => !k.endsWith('.json'))
      .slice(0, n);
    for (const Key of keys) await s3.send(new DeleteObjectCommand({ Bucket: world.s3.bucket, Key }));
    return keys.map((k) => `${world.s3.endpoint}/${world.s3.bucket}/${k}`);
  } finally {
    s3.destroy();
  }
}
