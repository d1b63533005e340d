import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, normalize } from 'node:path';
import pg from 'pg';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { TokenCipher, keyFingerprint } from '../../src/store/crypto.ts';
import { upsertAccount } from '../../src/store/accounts.ts';
import { saveToken } from '../../src/store/tokens.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { closedPort } from '../support/closed-port.ts';
import { memoryIO } from '../support/memory-io.ts';
import { redisForTest } from '../support/services.ts';
import { startSmtpCapture, type SmtpCapture } from '../support/smtp.ts';
import { spawnFeedmirror } from '../support/processes.ts';
import { until } from '../support/wait.ts';

/**
 * `feedmirror doctor`: one line per check with what to do, exit 0 when nothing fails (warnings
 * allowed), 1 otherwise; --create makes the database; --json for scripts.
 */
interface Check {
  name: string;
  status: 'ok' | 'warn' | 'fail' | 'skip';
  detail: string;
  fix?: string;
}

describe('feedmirror doctor', () => {
  let sim: Simulator;
  let smtp: SmtpCapture;
  let files: Server;
  let filesUrl: string;
  let storageDir: string;
  let env: NodeJS.ProcessEnv;
  const dbName = `fm_doctor_${randomBytes(4).toString('hex')}`;
  const adminUrl = inject('databaseUrl');
  const redis = redisForTest('doctor');

  beforeAll(async () => {
    sim = await startSimulator();
    smtp = await startSmtpCapture();
    storageDir = mkdtempSync(join(tmpdir(), 'fm-doctor-'));
    // What serves the folder publicly (as `feedmirror serve` would), with CORS on.
    files = createServer((req, res) => {
      const path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)).replace(/^\/+/, '');
      readFile(join(storageDir, path)).then(
        (b) => res.writeHead(200, { 'access-control-allow-origin': '*', 'content-type': 'application/json' }).end(b),
        () => res.writeHead(404).end(),
      );
    });
    await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
    filesUrl = `http://127.0.0.1:${(files.address() as { port: number }).port}/`;
    const u = new URL(adminUrl);
    u.pathname = `/${dbName}`;
    const key = randomBytes(32).toString('base64');
    registerSecretForAudit(key);
    env = {
      DATABASE_URL: u.toString(),
      REDIS_URL: redis.url,
      REDIS_PREFIX: redis.prefix,
      STORAGE_URL: storageDir,
      MEDIA_PUBLIC_URL: filesUrl,
      TOKEN_ENCRYPTION_KEY: key,
      GRAPH_URL: sim.graphUrl,
      APP_ID: sim.appId,
      APP_SECRET: sim.appSecret,
      SMTP_URL: smtp.url,
      ALERT_EMAIL_TO: 'ops@example.test',
      LOG_LEVEL: 'silent',
    };
  });

  afterAll(async () => {
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await c.end();
    await new Promise<void>((r) => files.close(() => r()));
    await smtp.close();
    await sim.close();
    await rm(storageDir, { recursive: true, force: true });
  });

  const doctor = async (argv: string[], e: NodeJS.ProcessEnv = env) => {
    const io = memoryIO({ env: e });
    const code = await main(['doctor', '--json', ...argv], io);
    const out = JSON.parse(io.out()) as { ok: boolean; checks: Check[] };
    return { code, ...out, by: (name: string) => out.checks.find((c) => c.name === name) };
  };

  it('a missing database fails with what to do; --create creates it; then pending migrations warn until `migrate`; then every check passes', async () => {
    const first = await doctor([]);
    expect(first.code).toBe(1);
    expect(first.by('database exists')).toMatchObject({
      status: 'fail',
      fix: expect.stringMatching(/feedmirror doctor --create/),
    });

    const created = await doctor(['--create']);
    expect(created.by('database exists')).toMatchObject({ status: 'ok', detail: `created "${dbName}"` });
    expect(created.by('migrations current')).toMatchObject({
      status: 'warn',
      fix: expect.stringMatching(/feedmirror migrate/),
    });
    expect(created.code).toBe(0); // warnings only

    expect(await main(['migrate'], memoryIO({ env }))).toBe(0);
    const r = await doctor([]);
    expect(r.code).toBe(0);
    expect(r.ok).toBe(true);
    for (const name of [
      'configuration',
      'PostgreSQL reachable',
      'database exists',
      'migrations current',
      'stored secrets decrypt',
      'Redis reachable',
      'storage reachable',
      'storage write, read, delete',
      'MEDIA_PUBLIC_URL serves the copies',
      'feeds readable cross-origin',
      'SMTP',
      'platform host answers',
      'app credentials',
      'accounts health',
      'storage owner',
    ]) {
      expect(r.by(name), name).toMatchObject({ status: 'ok' });
    }
    // R-DEL-1: a new folder (nothing under media/) becomes this deployment's at the first start.
    expect(r.by('storage owner')!.detail).toMatch(/^no deployment marker yet; the first start of worker/);
    expect(r.by('accounts health')!.detail).toBe('no account connected yet');
    // Redis's own settings, as this Redis has them: BullMQ's production guide.
    const client = new Redis(redis.url);
    const [, policy] = await client.config('GET', 'maxmemory-policy');
    const aof = /aof_enabled:1/.test(await client.info('persistence'));
    const [, save] = await client.config('GET', 'save');
    client.disconnect();
    expect(r.by('Redis maxmemory-policy')!.status).toBe(policy === 'noeviction' ? 'ok' : 'warn');
    expect(r.by('Redis persistence')!.status).toBe(aof || Boolean(save?.trim()) ? 'ok' : 'warn');
    // The probe object was deleted again.
    const { readdir } = await import('node:fs/promises');
    expect(
      (await readdir(join(storageDir, 'feeds')).catch(() => [])).filter((f) => f.startsWith('doctor-probe')),
    ).toEqual([]);
  }, 60_000);

  it('plain output: one line per check, then a verdict; nothing secret', async () => {
    const io = memoryIO({ env });
    expect(await main(['doctor'], io)).toBe(0);
    const lines = io.out().trimEnd().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(14);
    for (const l of lines.slice(0, -1)) expect(l).toMatch(/^(ok {2}|warn|FAIL|skip) {2}[^:]+: /);
    expect(lines.at(-1)).toMatch(/^ready/);
    expect(io.out()).not.toContain(env.TOKEN_ENCRYPTION_KEY!);
    expect(io.out()).not.toContain(env.APP_SECRET!);
  }, 60_000);

  it('R-KEY-2: a stored secret no configured key opens fails doctor, naming the key id; rotated keys warn until `keys rotate`', async () => {
    const pool = new pg.Pool({ connectionString: env.DATABASE_URL });
    const other = randomBytes(32);
    registerSecretForAudit(other.toString('base64'));
    try {
      const at = new Date();
      await upsertAccount(pool, { id: 'doctor-keys', username: 'doctor-keys' }, at);
      await saveToken(
        pool,
        TokenCipher.fromEnv(other.toString('base64')),
        // 60 days: a token a day from expiry would fail the accounts' health check too.
        {
          accountId: 'doctor-keys',
          accessToken: 'tok-doctor',
          obtainedAt: at,
          expiresAt: new Date(+at + 60 * 86_400_000),
        },
        'imported',
      );
      const broken = await doctor([]);
      expect(broken.code).toBe(1);
      expect(broken.by('stored secrets decrypt')).toMatchObject({
        status: 'fail',
        detail: expect.stringContaining(`the token of account doctor-keys records key ${keyFingerprint(other)}`),
      });
      // The operator adds the key back as the README's recipe lists it: decrypts, and a warning says to rotate.
      const both = await doctor([], {
        ...env,
        TOKEN_ENCRYPTION_KEY: `new:${env.TOKEN_ENCRYPTION_KEY},old:${other.toString('base64')}`,
      });
      expect(both.by('stored secrets decrypt')).toMatchObject({
        status: 'warn',
        detail: expect.stringContaining(`still under ${keyFingerprint(other)} (old)`),
        fix: expect.stringContaining('feedmirror keys rotate'),
      });
      expect(both.code).toBe(0);
    } finally {
      await pool.query("DELETE FROM accounts WHERE id = 'doctor-keys'");
      await pool.end();
    }
    expect((await doctor([])).by('stored secrets decrypt')!.status).toBe('ok');
  }, 60_000);

  it('what is down or wrong fails with where and what to do: Redis, storage public address, SMTP, platform, configuration', async () => {
    const port = await closedPort();
    const r = await doctor([], {
      ...env,
      REDIS_URL: `redis://:secret-pw@127.0.0.1:${port}`,
      MEDIA_PUBLIC_URL: `http://127.0.0.1:${port}/`,
      SMTP_URL: `smtp://127.0.0.1:${port}`,
      GRAPH_URL: `http://127.0.0.1:${port}`,
      APP_SECRET: '',
    });
    expect(r.code).toBe(1);
    expect(r.by('Redis reachable')).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(new RegExp(`127\\.0\\.0\\.1:${port}`)),
    });
    expect(r.by('MEDIA_PUBLIC_URL serves the copies')).toMatchObject({ status: 'warn' }); // a folder: serve may just not run yet
    expect(r.by('SMTP')).toMatchObject({ status: 'fail', detail: expect.stringMatching(/ECONNREFUSED/) });
    expect(r.by('platform host answers')).toMatchObject({ status: 'fail' });
    expect(r.by('app credentials')).toMatchObject({ status: 'warn' });
    expect(JSON.stringify(r.checks)).not.toContain('secret-pw');

    const bad = await doctor([], { ...env, TOKEN_ENCRYPTION_KEY: 'short', HOST: '0.0.0.0' });
    expect(bad.code).toBe(1);
    expect(bad.checks).toHaveLength(1);
    expect(bad.by('configuration')!.detail).toMatch(/TOKEN_ENCRYPTION_KEY/);
  }, 60_000);

  it('worker logs the same checks when it starts', async () => {
    const w = spawnFeedmirror(['worker'], { ...env, LOG_LEVEL: 'info', REDIS_PREFIX: `${redis.prefix}:w` });
    try {
      await until(() => /"check":"app credentials"/.test(w.output()), 'the last start-up check in the log', 30_000);
      const checks = w
        .output()
        .split('\n')
        .filter((l) => l.includes('"check":'))
        .map((l) => JSON.parse(l) as { check: string; status: string; msg: string });
      expect(checks.map((c) => c.check)).toEqual(
        expect.arrayContaining([
          'configuration',
          'PostgreSQL reachable',
          'Redis reachable',
          'storage write, read, delete',
          'SMTP',
          'platform host answers',
        ]),
      );
      expect(checks.find((c) => c.check === 'Redis reachable')!.msg).toMatch(/^ok {4}Redis reachable: /);
      // R-DEL-1: the new folder became this deployment's before the first job.
      expect(w.output()).toContain('storage claimed for this deployment: feedmirror/deployment.json written');
    } finally {
      w.child.kill('SIGTERM');
      await w.exited;
    }
  }, 60_000);

  it('R-DEL-1: storage owner: copies but no marker fail with what to do; --create writes the marker; another deployment’s fails and is never overwritten', async () => {
    const marker = join(storageDir, 'feedmirror', 'deployment.json');
    // The worker's start above claimed the new folder; this one holds copies from elsewhere.
    await rm(marker, { force: true });
    const copy = join(storageDir, 'media', '17841400000000555', '1790', 'cover-0123456789abcdef.jpg');
    await mkdir(dirname(copy), { recursive: true });
    await writeFile(copy, 'a picture');
    try {
      const unclaimed = await doctor([]);
      expect(unclaimed.code).toBe(1);
      expect(unclaimed.by('storage owner')).toMatchObject({
        status: 'fail',
        detail: expect.stringContaining('the storage has no deployment marker (feedmirror/deployment.json)'),
        fix: expect.stringContaining('feedmirror doctor --create'),
      });
      const created = await doctor(['--create']);
      expect(created.by('storage owner')).toMatchObject({
        status: 'ok',
        detail: expect.stringMatching(
          /^feedmirror\/deployment\.json written now with this deployment's id \w+, since the operator said so/,
        ),
      });
      expect((await doctor([])).by('storage owner')).toMatchObject({
        status: 'ok',
        detail: expect.stringContaining("carries this deployment's id"),
      });
      const theirs = JSON.stringify({ feedmirror: 'deployment-marker', deploymentId: 'another-deployment-1' });
      await writeFile(marker, theirs);
      const foreign = await doctor(['--create']);
      expect(foreign.code).toBe(1);
      expect(foreign.by('storage owner')).toMatchObject({
        status: 'fail',
        detail: expect.stringContaining('carries deployment another-deployment-1, not this deployment'),
        fix: expect.stringContaining("this deployment's own storage"),
      });
      expect(await readFile(marker, 'utf8')).toBe(theirs);
      expect(await readFile(copy, 'utf8')).toBe('a picture');
    } finally {
      await rm(join(storageDir, 'media'), { recursive: true, force: true });
      await rm(marker, { force: true });
    }
  }, 60_000);

  it('R-HLT-1: one line sums the accounts up by health and fails naming the worst with their reasons', async () => {
    const db = new pg.Pool({ connectionString: env.DATABASE_URL });
    const { upsertAccount, removeAccount } = await import('../../src/store/accounts.ts');
    const now = new Date();
    try {
      // Connected but without a token (an import that stopped half-way): nothing can sync it.
      await upsertAccount(db, { id: '17841400000000077', username: 'no.token.shop' }, now);
      const r = await doctor([]);
      expect(r.code).toBe(1);
      expect(r.by('accounts health')).toMatchObject({
        status: 'fail',
        detail: expect.stringMatching(
          /^1 account: 0 ok, 0 warn, 1 fail; @no\.token\.shop \(17841400000000077\) fail: \[token_missing\] no token is stored/,
        ),
        fix: expect.stringMatching(/accounts list/),
      });
      const io = memoryIO({ env });
      expect(await main(['doctor'], io)).toBe(1);
      expect(io.out()).toMatch(/^FAIL {2}accounts health: 1 account: 0 ok, 0 warn, 1 fail; @no\.token\.shop/m);
    } finally {
      await removeAccount(db, '17841400000000077', now);
      await db.end();
    }
    expect((await doctor([])).by('accounts health')).toMatchObject({ status: 'ok' });
  }, 60_000);
});
