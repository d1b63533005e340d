import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { FileClock } from '../../src/util/clock.ts';
import { defaultSecretSink } from '../../src/simulator/secrets-ledger.ts';
import { runFeedmirror, spawnFeedmirror, type Finished, type Spawned } from '../../test/support/processes.ts';
import { freePort, spawnRedis, stopRedis } from '../../test/support/redis-server.ts';
import { S3RVER_CREDENTIALS, startS3, type TestS3 } from '../../test/support/s3.ts';
import { startTcpProxy, type TcpProxy } from '../../test/support/tcp-proxy.ts';

/**
 * The chaos soak's world: the real feedmirror (two `feedmirror worker` processes and `serve`,
 * each a process of its own started as an operator starts them) on PostgreSQL, a Redis server of
 * its own (so it can be flushed and restarted without persistence, never the shared one), s3rver
 * as the storage, and around it the outside world the checker reads: the platform simulator
 * (in this process, on its manual clock), the outbox folder of emails, and a webhook sink.
 *
 * PostgreSQL and the storage are reached through TCP proxies, so "PostgreSQL restarted" and
 * "storage down" cut feedmirror's connections without touching the shared server. Every name is
 * the run's own: database fm_chaos_<tag>, Redis prefix fmchaos:<tag>, folder fm-chaos-<tag>-*.
 */

export interface WebhookDelivery {
  /** Simulated time the sink received it. */
  at: number;
  event: string;
  accountId: string | undefined;
  body: string;
}

export interface ChaosProcess extends Spawned {
  name: string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export interface World {
  tag: string;
  dir: string;
  sim: Simulator;
  s3: TestS3;
  /** The public base of published objects (the storage itself, not through the proxy). */
  publicBase: string;
  outboxDir: string;
  webhooks: WebhookDelivery[];
  webhookUrl: string;
  /** The environment every feedmirror process of the run gets. */
  env: Record<string, string>;
  databaseUrl: string;
  pgProxy: TcpProxy;
  s3Proxy: TcpProxy;
  redisPort: number;
  redisPrefix: string;
  /** Secrets the run made (tokens, the app secret, keys): none may appear in any output. */
  secrets: Set<string>;
  workers: ChaosProcess[];
  serve: ChaosProcess | undefined;
  /** Every process's output so far, dead ones included (for the secrets check). */
  outputs(): string[];
  /** Set the simulated time: the simulator's clock and every process's clock file (one may be skewed). */
  setTime(ms: number): void;
  now(): number;
  /** Minutes the given worker's clock is off (clock skew); 0 for none. */
  skew(workerIndex: number, ms: number): void;
  startWorker(index: number): Promise<ChaosProcess>;
  startServe(): Promise<ChaosProcess>;
  cli(args: string[], opts?: { stdin?: string; stdoutRevealsSecret?: boolean }): Promise<Finished>;
  restartRedis(downMs: () => Promise<void>): Promise<void>;
  stopRedis(): Promise<void>;
  startRedis(): Promise<void>;
  flushRedis(): Promise<void>;
  close(): Promise<void>;
}

export interface WorldOptions {
  start: number;
  /** The PostgreSQL server's admin URL (default DATABASE_URL, else the local trust-auth server). */
  adminUrl?: string;
  /** Environment overrides for every process. */
  env?: Record<string, string>;
  log?: (line: string) => void;
}

async function redisCommand(port: number, ...args: string[]): Promise<string> {
  const { Redis } = await import('ioredis');
  const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1 });
  // A Redis that is down on purpose answers with a rejected promise, not an unhandled event.
  r.on('error', () => undefined);
  try {
    await r.connect();
    return String(await r.call(args[0] as string, ...args.slice(1)));
  } finally {
    r.disconnect();
  }
}

export { redisCommand };

export async function openWorld(o: WorldOptions): Promise<World> {
  const tag = randomBytes(4).toString('hex');
  const dir = mkdtempSync(join(tmpdir(), `fm-chaos-${tag}-`));
  const cleanups: Array<() => Promise<unknown>> = [];
  const secrets = new Set<string>();
  const log = o.log ?? (() => undefined);
  try {
    // Every secret the platform makes is one the checker looks for; under the test suite the
    // secrets audit's ledger is told too.
    const ledger = defaultSecretSink();
    const sim = await startSimulator({
      start: o.start,
      onSecret: (s) => {
        secrets.add(s);
        ledger(s);
      },
    });
    cleanups.push(() => sim.close());

    // PostgreSQL: a database of the run's own, reached through a proxy.
    const adminUrl = o.adminUrl ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
    const dbName = `fm_chaos_${tag}`;
    const admin = async (sql: string) => {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        await c.query(sql);
      } finally {
        await c.end();
      }
    };
    await admin(`CREATE DATABASE ${dbName}`);
    cleanups.push(() => admin(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`));
    const admin0 = new URL(adminUrl);
    const pgProxy = await startTcpProxy({ host: admin0.hostname, port: Number(admin0.port || 5432) });
    cleanups.push(() => pgProxy.close());
    const direct = new URL(adminUrl);
    direct.pathname = `/${dbName}`;
    const proxied = new URL(direct);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(pgProxy.port);

    // Redis: a server of the run's own, without persistence (a restart loses everything).
    const redisPort = await freePort();
    let redis: ChildProcess | undefined;
    const startRedisNow = async () => {
      redis = await spawnRedis(redisPort, mkdtempSync(join(dir, 'redis-')));
      // No persistence at all: a restart comes back empty, as the fault means.
      await redisCommand(redisPort, 'CONFIG', 'SET', 'appendonly', 'no');
    };
    await startRedisNow();
    cleanups.push(async () => redis && (await stopRedis(redis)));
    const redisPrefix = `fmchaos:${tag}`;

    // Storage: s3rver, reached by feedmirror through a proxy; the checker reads it directly.
    const s3 = await startS3(`chaos-${tag}`);
    cleanups.push(() => s3.close());
    const s3Url = new URL(s3.endpoint);
    const s3Proxy = await startTcpProxy({ host: s3Url.hostname, port: Number(s3Url.port) });
    cleanups.push(() => s3Proxy.close());
    const publicBase = `${s3.endpoint}/${s3.bucket}/feedmirror/`;

    // The webhook sink: what a site's receiver sees.
    const webhooks: WebhookDelivery[] = [];
    const sink: Server = createServer((req, res) => {
      let body = '';
      req.on('data', (b: Buffer) => (body += b.toString('utf8')));
      req.on('end', () => {
        let event = String(req.headers['x-feedmirror-event'] ?? '');
        let accountId: string | undefined;
        try {
          const parsed = JSON.parse(body) as { event?: string; type?: string; data?: { accountId?: string } };
          event ||= parsed.event ?? parsed.type ?? '';
          accountId = parsed.data?.accountId;
        } catch {
          // Not JSON: kept as received, the secrets check still reads it.
        }
        webhooks.push({ at: sim.clock.now().getTime(), event, accountId, body });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => (sink.closeAllConnections(), sink.close(() => resolve()))));
    const webhookUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/hook`;

    const outboxDir = join(dir, 'outbox');
    mkdirSync(outboxDir, { recursive: true });
    const clockFiles = [join(dir, 'clock-0'), join(dir, 'clock-1'), join(dir, 'clock')];
    const skews = [0, 0, 0];
    let now = o.start;
    const writeClocks = () => clockFiles.forEach((f, i) => FileClock.write(f, now + (skews[i] ?? 0)));
    writeClocks();
    const key = randomBytes(32).toString('base64');
    secrets.add(key);
    const port = await freePort();
    const env: Record<string, string> = {
      APP_ID: sim.appId,
      APP_SECRET: sim.appSecret,
      GRAPH_URL: sim.graphUrl,
      AUTHORIZE_URL: sim.authorizeUrl,
      OAUTH_TOKEN_URL: sim.oauthTokenUrl,
      MEDIA_ALLOWED_HOSTS: sim.imageHost,
      DATABASE_URL: proxied.toString(),
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      REDIS_PREFIX: redisPrefix,
      STORAGE_URL: `s3://${s3.bucket}/feedmirror`,
      S3_ENDPOINT: `http://127.0.0.1:${s3Proxy.port}`,
      S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      MEDIA_PUBLIC_URL: publicBase,
      MEDIA_VARIANT_WIDTHS: '160,320',
      TOKEN_ENCRYPTION_KEY: `k1:${key}`,
      SMTP_URL: '',
      OUTBOX_DIR: outboxDir,
      ALERT_EMAIL_TO: 'ops@chaos.example',
      PUBLISH_STATUS: 'on',
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      HOST: '127.0.0.1',
      PORT: String(port),
      DASHBOARD_USER: 'admin',
      DASHBOARD_PASSWORD: randomBytes(12).toString('base64url'),
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_TIMEOUT_MS: '3000',
      // A timed-out platform call gives up in 2 s of real time: the soak's time is compressed.
      HTTP_TIMEOUT_MS: '2000',
      MEDIA_TIMEOUT_MS: '4000',
      SHUTDOWN_TIMEOUT_SECONDS: '5',
      RECONCILE_INTERVAL_SECONDS: '10',
      LOG_FORMAT: 'json',
      FEEDMIRROR_CLOCK_FILE: clockFiles[2] as string,
      ...o.env,
    };
    secrets.add(env.DASHBOARD_PASSWORD as string);

    const all: ChaosProcess[] = [];
    const stoppable = (name: string, p: Spawned): ChaosProcess =>
      Object.assign(p, {
        name,
        stop: async (signal: NodeJS.Signals = 'SIGTERM') => {
          if (p.child.exitCode !== null || p.child.signalCode !== null) return;
          p.child.kill(signal);
          const killer = setTimeout(() => p.child.kill('SIGKILL'), 15_000);
          await p.exited;
          clearTimeout(killer);
        },
      });
    const waitFor = async (p: ChaosProcess, text: string) => {
      // Generous: on a loaded 2-core machine a start takes a minute and more.
      const until = Date.now() + 180_000;
      while (!p.output().includes(text)) {
        if (p.child.exitCode !== null)
          throw new Error(`${p.name} exited ${p.child.exitCode}: ${p.output().slice(-2000)}`);
        if (Date.now() > until) throw new Error(`${p.name} did not start: ${p.output().slice(-2000)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };

    const world: World = {
      tag,
      dir,
      sim,
      s3,
      publicBase,
      outboxDir,
      webhooks,
      webhookUrl,
      env,
      databaseUrl: direct.toString(),
      pgProxy,
      s3Proxy,
      redisPort,
      redisPrefix,
      secrets,
      workers: [],
      serve: undefined,
      outputs: () => all.map((p) => p.output()),
      setTime: (ms) => {
        now = ms;
        sim.clock.set(new Date(ms));
        writeClocks();
      },
      now: () => now,
      skew: (i, ms) => {
        skews[i] = ms;
        writeClocks();
      },
      startWorker: async (i) => {
        const p = stoppable(
          `worker-${i}`,
          spawnFeedmirror(['worker'], { ...env, FEEDMIRROR_CLOCK_FILE: clockFiles[i] }, { cwd: dir }),
        );
        all.push(p);
        world.workers[i] = p;
        await waitFor(p, 'worker started');
        return p;
      },
      startServe: async () => {
        const p = stoppable('serve', spawnFeedmirror(['serve'], env, { cwd: dir }));
        all.push(p);
        world.serve = p;
        await waitFor(p, 'feedmirror serving on');
        return p;
      },
      cli: (args, c = {}) =>
        runFeedmirror(args, env, {
          cwd: dir,
          timeoutMs: 120_000,
          ...(c.stdin !== undefined ? { stdin: c.stdin } : {}),
          ...(c.stdoutRevealsSecret ? { stdoutRevealsSecret: true } : {}),
        }),
      restartRedis: async (down) => {
        await world.stopRedis();
        await down();
        await world.startRedis();
      },
      stopRedis: async () => {
        if (redis) await stopRedis(redis);
        redis = undefined;
      },
      startRedis: async () => {
        if (!redis) await startRedisNow();
      },
      flushRedis: async () => {
        await redisCommand(redisPort, 'FLUSHALL');
      },
      close: async () => {
        for (const p of [...all].reverse()) await p.stop().catch(() => undefined);
        for (const c of cleanups.reverse()) await c().catch((err: unknown) => log(`cleanup: ${String(err)}`));
        await rm(dir, { recursive: true, force: true });
      },
    };
    return world;
  } catch (err) {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/** The .eml files of the outbox, oldest first by name. */
export function readOutbox(dir: string, names: string[]): Array<{ name: string; text: string }> {
  return names.map((name) => ({ name, text: readFileSync(join(dir, name), 'utf8') }));
}
