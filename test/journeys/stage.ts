import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, PutBucketCorsCommand, S3Client } from '@aws-sdk/client-s3';
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import type { Feed } from '../../src/schema/v1.ts';
import { validateFeed } from '../../src/schema/validate.ts';
import { startSimulator, type Simulator, type SimulatorOptions } from '../../src/simulator/index.ts';
import { FileClock } from '../../src/util/clock.ts';
import { recordCaptured, registerSecretForAudit } from '../support/capture.ts';
import { runFeedmirror, spawnFeedmirror, type Finished, type Spawned } from '../support/processes.ts';
import { freePort } from '../support/redis-server.ts';
import { S3RVER_CREDENTIALS, startS3, type TestS3 } from '../support/s3.ts';
import { cookiesOf } from '../security/support.ts';
import { startSmtpCapture, type SmtpCapture } from '../support/smtp.ts';
import { until } from '../support/wait.ts';
import { simulatorEnv } from '../support/worker-env.ts';

/**
 * A stage for operator journeys: what a person following the README has in front of them, with
 * real processes. `feedmirror init` writes the .env in a folder of the stage's own; the settings
 * the README says to fill in (the app, PostgreSQL, Redis, the image host) are filled in the way an
 * operator edits the file; the file is loaded by bash (`set -a; . ./.env; set +a`) and every
 * feedmirror command, worker and server runs as its own process from that folder, with that
 * environment. The platform is the simulator over real HTTP (in this process, so a journey can
 * add posts, inject faults or revoke tokens as the platform would).
 *
 * Names never meet a person's: a fresh database, a Redis prefix and folders of the stage's own.
 * Time: every process reads FEEDMIRROR_CLOCK_FILE, and `advance` moves it and the simulator's
 * clock together (no sleeping through an hour).
 */

export interface StageOptions {
  /** Where copies and feeds go: a local folder (the default) or an S3 bucket (s3rver). */
  storage?: 'local' | 's3';
  /** Settings filled into the .env after init's, as an operator would edit them. */
  env?: Record<string, string>;
  /** Options for the simulator (its start time is the stage's). */
  simulator?: Omit<SimulatorOptions, 'start'>;
  /** Alerts to a real SMTP server (captured) instead of the outbox folder. */
  smtp?: boolean;
  /**
   * The outbox folder (OUTBOX_DIR), relative to the stage's folder (`data/demo/outbox` is the
   * demo's); written into the .env as an absolute path, as init writes folders.
   */
  outboxDir?: string;
  /** The stage's start time (default 2026-04-01T10:00Z). */
  start?: number;
}

export interface RunOptions {
  stdin?: string;
  /** Settings for this command only (an operator's `VAR=value feedmirror …`). */
  env?: Record<string, string>;
  timeoutMs?: number;
  /** stdout is a secret shown to the operator once by design; kept out of the secrets audit. */
  stdoutRevealsSecret?: boolean;
  /** Another release's bin/feedmirror.js (default: this checkout's). */
  bin?: string;
}

/** How a worker or server is started: extra settings, and another release's bin/feedmirror.js. */
export interface StartOptions {
  env?: Record<string, string>;
  bin?: string;
}

export interface StageProcess extends Spawned {
  /** SIGTERM, then SIGKILL after 10 s; resolves when the process is gone. */
  stop(): Promise<void>;
}

export interface StageServer extends StageProcess {
  url: string;
  /** Log in to the dashboard as the operator (the .env's DASHBOARD_USER/PASSWORD): a fetch that carries the session. */
  login(): Promise<DashboardClient>;
}

export interface DashboardClient {
  /** GET a dashboard path; the session cookie is sent (redirects are not followed: see location). */
  get(path: string): Promise<{ status: number; html: string; location: string | null }>;
  /** POST a dashboard form: the page at `formPath` is read for its CSRF token first. */
  post(
    formPath: string,
    action: string,
    fields?: Record<string, string>,
  ): Promise<{ status: number; html: string; location: string | null }>;
}

export interface Stage {
  readonly dir: string;
  readonly sim: Simulator;
  /** The operator's environment: the .env as bash loads it. */
  readonly env: Record<string, string>;
  readonly clockFile: string;
  readonly s3?: TestS3;
  readonly smtp?: SmtpCapture;
  /**
   * Write `data/demo/demo.env` as `npm run demo` does: every setting of the .env plus the
   * simulator's address and control secret, so `feedmirror simulator …` run from the stage's
   * folder reaches the stage's simulator; `extra` adds what the demo made (DEMO_WIDGET_ID).
   * Returns that file's environment as bash loads it.
   */
  writeDemoEnv(extra?: Record<string, string>): Record<string, string>;
  /** Run a shell command line (bash) from the stage's folder with `env`, as a person types it. */
  shell(line: string, env: Record<string, string>): Promise<Finished>;
  /** Run one `feedmirror` command to its end from the stage's folder. */
  cli(args: string[], opts?: RunOptions): Promise<Finished>;
  /** `feedmirror worker` as a process; resolves once it says it is running. */
  startWorker(opts?: StartOptions): Promise<StageProcess>;
  /** `feedmirror serve` on a port of its own; resolves once it listens. */
  startServe(opts?: StartOptions): Promise<StageServer>;
  /** A new account on the platform and `feedmirror accounts add` with its short-lived token. */
  connect(opts?: {
    username?: string;
    posts?: number;
    env?: Record<string, string>;
    /** `accounts add` of another release's bin/feedmirror.js. */
    bin?: string;
  }): Promise<{ id: string; username: string; add: Finished }>;
  /** The published feed as a site reads it (the storage's public address); null when there is none. */
  feed(accountId: string): Promise<Feed | null>;
  /** GET a public storage object as a site does (its key under the storage root). */
  fetchPublic(key: string): Promise<Response>;
  until(condition: () => Promise<boolean> | boolean, what: string, timeoutMs?: number): Promise<void>;
  /** Move every process's clock and the platform's by `ms`. */
  advance(ms: number): Promise<void>;
  now(): Date;
  close(): Promise<void>;
}

const DEFAULT_START = Date.UTC(2026, 3, 1, 10);

/** Replace (or add) `KEY=value` lines in an env file's text, as an operator edits it. */
export function fillEnv(text: string, values: Record<string, string>): string {
  let out = text;
  for (const [k, v] of Object.entries(values)) {
    const re = new RegExp(`^#? ?${k}=.*$`, 'm');
    const line = `${k}=${/[\s"'#$`\\]/.test(v) ? `'${v.replace(/'/g, `'\\''`)}'` : v}`;
    out = re.test(out) ? out.replace(re, () => line) : `${out.trimEnd()}\n${line}\n`;
  }
  return out;
}

/** The environment bash gives a command after `set -a; . ./.env; set +a` in `dir`. */
export function loadEnvFile(dir: string, file = '.env'): Record<string, string> {
  const sh = spawnSync('bash', ['--norc', '--noprofile', '-c', `set -a; . ./${file}; set +a; env -0`], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (sh.status !== 0 || sh.stderr) throw new Error(`bash could not load ${file}: ${sh.stderr}`);
  return Object.fromEntries(
    sh.stdout
      .split('\0')
      .filter((e) => e.includes('='))
      .map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
  );
}

function stoppable(p: Spawned): StageProcess {
  return Object.assign(p, {
    stop: async () => {
      if (p.child.exitCode !== null || p.child.signalCode !== null) return;
      p.child.kill('SIGTERM');
      const killer = setTimeout(() => p.child.kill('SIGKILL'), 10_000);
      await p.exited;
      clearTimeout(killer);
    },
  });
}

export async function openStage(label: string, opts: StageOptions = {}): Promise<Stage> {
  const tag = `${label
    .replace(/[^a-z0-9]/gi, '')
    .toLowerCase()
    .slice(0, 16)}${randomBytes(3).toString('hex')}`;
  const dir = mkdtempSync(join(tmpdir(), `fm-journey-${tag}-`));
  const start = opts.start ?? DEFAULT_START;
  const clockFile = join(dir, 'clock');
  FileClock.write(clockFile, start);
  const cleanups: Array<() => Promise<unknown>> = [];
  const processes: StageProcess[] = [];

  const sim = await startSimulator({ ...opts.simulator, start });
  cleanups.push(() => sim.close());

  // The database, as the README's "createdb" step makes it.
  const adminUrl = inject('databaseUrl');
  const dbName = `fm_journey_${tag}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  await admin.end();
  cleanups.push(async () => {
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
    await c.end();
  });
  const database = new URL(adminUrl);
  database.pathname = `/${dbName}`;
  const redisUrl = inject('redisUrl');
  const redisPrefix = `fmjourney:${tag}`;

  let s3: TestS3 | undefined;
  const initArgs = ['init'];
  if (opts.storage === 's3') {
    s3 = await startS3(`journey-${tag}`, { createBucket: false });
    cleanups.push(() => s3!.close());
    const client = new S3Client({
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: S3RVER_CREDENTIALS,
    });
    await client.send(new CreateBucketCommand({ Bucket: s3.bucket }));
    await client.send(
      new PutBucketCorsCommand({
        Bucket: s3.bucket,
        CORSConfiguration: {
          CORSRules: [{ AllowedOrigins: ['*'], AllowedMethods: ['GET', 'HEAD'], AllowedHeaders: ['*'] }],
        },
      }),
    );
    client.destroy();
    initArgs.push('--storage', `s3://${s3.bucket}/feedmirror`, '--s3-endpoint', s3.endpoint);
  } else {
    initArgs.push('--storage', './data/storage');
  }
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  initArgs.push('--public-url', publicUrl);
  const init = await runFeedmirror(initArgs, {}, { cwd: dir });
  if (init.code !== 0) throw new Error(`feedmirror init failed: ${init.stderr}`);

  let smtp: SmtpCapture | undefined;
  if (opts.smtp) {
    smtp = await startSmtpCapture();
    cleanups.push(() => smtp!.close());
  }
  const fill: Record<string, string> = {
    ...simulatorEnv(sim),
    DATABASE_URL: database.toString(),
    REDIS_URL: redisUrl,
    REDIS_PREFIX: redisPrefix,
    PUBLIC_URL: publicUrl,
    PORT: String(port),
    // Small ladders keep a journey's image work short; the README's defaults are tested elsewhere.
    MEDIA_VARIANT_WIDTHS: '160,320',
    FEEDMIRROR_CLOCK_FILE: clockFile,
    ...(s3
      ? {
          AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
          AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
          MEDIA_PUBLIC_URL: `${s3.endpoint}/${s3.bucket}/feedmirror/`,
        }
      : {}),
    ...(smtp ? { SMTP_URL: smtp.url, ALERT_EMAIL_TO: 'ops@example.test' } : {}),
    ...(opts.outboxDir ? { OUTBOX_DIR: join(dir, opts.outboxDir) } : {}),
    ...opts.env,
  };
  writeFileSync(join(dir, '.env'), fillEnv(readFileSync(join(dir, '.env'), 'utf8'), fill));
  const env = loadEnvFile(dir);
  for (const k of ['TOKEN_ENCRYPTION_KEY', 'DASHBOARD_PASSWORD', 'APP_SECRET'] as const)
    if (env[k]) registerSecretForAudit(env[k]);

  const cli = (args: string[], o: RunOptions = {}) =>
    runFeedmirror(
      args,
      { ...env, ...o.env },
      {
        cwd: dir,
        ...(o.stdin !== undefined ? { stdin: o.stdin } : {}),
        timeoutMs: o.timeoutMs ?? 60_000,
        stdoutRevealsSecret: o.stdoutRevealsSecret === true,
        ...(o.bin ? { bin: o.bin } : {}),
      },
    );

  const startWorker = async (o: StartOptions = {}) => {
    const p = stoppable(
      spawnFeedmirror(['worker'], { ...env, ...o.env }, { cwd: dir, ...(o.bin ? { bin: o.bin } : {}) }),
    );
    processes.push(p);
    await until(
      () => p.output().includes('worker started') || p.child.exitCode !== null,
      'the worker to start',
      30_000,
    );
    if (p.child.exitCode !== null) throw new Error(`feedmirror worker exited ${p.child.exitCode}: ${p.output()}`);
    return p;
  };

  const startServe = async (o: StartOptions = {}): Promise<StageServer> => {
    const p = stoppable(
      spawnFeedmirror(['serve'], { ...env, ...o.env }, { cwd: dir, ...(o.bin ? { bin: o.bin } : {}) }),
    );
    processes.push(p);
    await until(
      () => p.output().includes('feedmirror serving on') || p.child.exitCode !== null,
      'serve to listen',
      30_000,
    );
    if (p.child.exitCode !== null) throw new Error(`feedmirror serve exited ${p.child.exitCode}: ${p.output()}`);
    const url = publicUrl;
    return Object.assign(p, { url, login: () => dashboardLogin(url, env.DASHBOARD_USER!, env.DASHBOARD_PASSWORD!) });
  };

  const fetchPublic = (key: string) => {
    if (s3) return fetch(`${env.MEDIA_PUBLIC_URL}${key}`);
    // A local folder is served by `feedmirror serve` at MEDIA_PUBLIC_URL; without a server running,
    // read the file as a site's own server would.
    return readFile(join(dir, 'data/storage', key)).then(
      (b) => new Response(b, { status: 200 }),
      () => new Response('not found', { status: 404 }),
    );
  };

  const stage: Stage = {
    dir,
    sim,
    env,
    clockFile,
    ...(s3 ? { s3 } : {}),
    ...(smtp ? { smtp } : {}),
    cli,
    writeDemoEnv: (extra = {}) => {
      mkdirSync(join(dir, 'data', 'demo'), { recursive: true });
      const file = join(dir, 'data', 'demo', 'demo.env');
      writeFileSync(
        file,
        fillEnv(readFileSync(join(dir, '.env'), 'utf8'), {
          SIMULATOR_URL: sim.url,
          SIMULATOR_CONTROL_SECRET: sim.controlSecret,
          ...extra,
        }),
        { mode: 0o600 },
      );
      registerSecretForAudit(sim.controlSecret);
      return loadEnvFile(dir, 'data/demo/demo.env');
    },
    shell: (line, shellEnv) =>
      new Promise<Finished>((resolve) => {
        // Asynchronous: a command line may reach this process's simulator.
        const started = Date.now();
        const child = spawn('bash', ['--norc', '--noprofile', '-c', line], {
          cwd: dir,
          env: shellEnv,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (b: Buffer) => {
          stdout += b.toString('utf8');
          recordCaptured('process', b.toString('utf8'));
        });
        child.stderr.on('data', (b: Buffer) => {
          stderr += b.toString('utf8');
          recordCaptured('process', b.toString('utf8'));
        });
        const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        child.once('close', (code) => {
          clearTimeout(timer);
          resolve({ code, stdout, stderr, ms: Date.now() - started });
        });
      }),
    startWorker,
    startServe,
    connect: async (o = {}) => {
      const acc = sim.createAccount({
        username: o.username ?? `shop.${randomBytes(2).toString('hex')}`,
        posts: o.posts ?? 6,
      });
      const token = sim.issueShortLivedToken(acc.id);
      registerSecretForAudit(token);
      const add = await cli(['accounts', 'add'], {
        stdin: token,
        ...(o.env ? { env: o.env } : {}),
        ...(o.bin ? { bin: o.bin } : {}),
      });
      return { id: acc.id, username: acc.username, add };
    },
    feed: async (accountId) => {
      const res = await fetchPublic(`feeds/${accountId}.json`);
      if (res.status === 404) return null;
      if (!res.ok) throw new Error(`feeds/${accountId}.json: HTTP ${res.status}`);
      const checked = validateFeed(JSON.parse(await res.text()));
      if (!checked.ok) throw new Error(`feeds/${accountId}.json is not a valid schema v1 feed`);
      return checked.feed;
    },
    fetchPublic,
    until,
    advance: async (ms) => {
      const next = new FileClock(clockFile).now().getTime() + ms;
      FileClock.write(clockFile, next);
      sim.clock.set(new Date(next));
    },
    now: () => new FileClock(clockFile).now(),
    close: async () => {
      for (const p of processes.reverse()) await p.stop();
      for (const c of cleanups.reverse()) await c().catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
  return stage;
}

/** Log in through the dashboard's form (nonce cookie, CSRF field) and keep the session. */
async function dashboardLogin(base: string, user: string, password: string): Promise<DashboardClient> {
  const page = await fetch(`${base}/dashboard/login`);
  const html = await page.text();
  const csrf = /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
  if (!csrf) throw new Error(`no CSRF token on the login page (HTTP ${page.status})`);
  const res = await fetch(`${base}/dashboard/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookiesOf(page), origin: base },
    body: new URLSearchParams({ user, password, _csrf: csrf }),
  });
  const session = res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .find((c) => c.startsWith('fm_session=') && c !== 'fm_session=');
  if (!session) throw new Error(`dashboard login failed (HTTP ${res.status})`);
  const get = async (path: string) => {
    const r = await fetch(`${base}${path}`, { headers: { cookie: session }, redirect: 'manual' });
    return { status: r.status, html: await r.text(), location: r.headers.get('location') };
  };
  return {
    get,
    post: async (formPath, action, fields = {}) => {
      const form = await get(formPath);
      const token = /name="_csrf" value="([^"]+)"/.exec(form.html)?.[1];
      if (!token) throw new Error(`no CSRF token on ${formPath} (HTTP ${form.status})`);
      const r = await fetch(`${base}${action}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: session, origin: base },
        body: new URLSearchParams({ ...fields, _csrf: token }),
      });
      return { status: r.status, html: await r.text(), location: r.headers.get('location') };
    },
  };
}

/**
 * Opens a stage before the tests of the describe block it is called in and closes it after them,
 * as the journeys do that need nothing else around their stage; `set` receives it once it is open.
 */
export function useStage(label: string, set: (stage: Stage) => void, opts: StageOptions = {}): void {
  let opened: Stage | undefined;
  beforeAll(async () => {
    opened = await openStage(label, opts);
    set(opened);
  });
  afterAll(async () => {
    await opened?.close();
  });
}
