import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { preflight } from '../../src/cli/preflight.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { memoryIO } from '../support/memory-io.ts';
import { parseComposeEnvFile } from '../support/compose-env.ts';
import { registerSecretForAudit } from '../support/capture.ts';

/** `feedmirror init`: a .env that works as written, never overwriting one. */
const fresh = () => mkdtempSync(path.join(tmpdir(), 'fm-init-'));

function bashEnv(file: string): Record<string, string> {
  const r = spawnSync('bash', ['--norc', '--noprofile', '-c', `set -a; . "${file}"; set +a; env -0`], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  expect(r.stderr).toBe('');
  return Object.fromEntries(
    r.stdout
      .split('\0')
      .filter((e) => e.includes('='))
      .map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
  );
}

describe('feedmirror init', () => {
  it('writes .env (mode 600) with a fresh key and dashboard login and the storage named; worker and serve accept it in bash and compose alike', async () => {
    const dir = fresh();
    const io = memoryIO({ cwd: dir });
    expect(
      await main(['init', '--storage', 's3://my-feeds/feedmirror', '--public-url', 'https://feeds.example.com/'], io),
    ).toBe(0);
    const file = path.join(dir, '.env');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const text = readFileSync(file, 'utf8');
    const env = bashEnv(file);
    registerSecretForAudit(env.TOKEN_ENCRYPTION_KEY!);
    registerSecretForAudit(env.DASHBOARD_PASSWORD!);
    expect(parseComposeEnvFile(text)).toEqual(
      Object.fromEntries(Object.keys(parseComposeEnvFile(text)).map((k) => [k, env[k]])),
    );
    expect(Buffer.from(env.TOKEN_ENCRYPTION_KEY!, 'base64')).toHaveLength(32);
    expect(() => TokenCipher.fromEnv(env.TOKEN_ENCRYPTION_KEY)).not.toThrow();
    expect(env.DASHBOARD_USER).toBe('admin');
    expect(env.DASHBOARD_PASSWORD!.length).toBeGreaterThanOrEqual(20);
    expect(env.STORAGE_URL).toBe('s3://my-feeds/feedmirror');
    expect(env.PUBLIC_URL).toBe('https://feeds.example.com');
    for (const role of ['worker', 'serve'] as const) {
      const pre = await preflight({ ...env, HOST: '0.0.0.0' }, role);
      expect(pre.ok ? [] : pre.problems).toEqual([]);
    }
    // What is left to fill in is said in the file and on stdout; no secret is printed.
    expect(text).toMatch(/^# TODO: fill in\nAPP_ID=$/m);
    expect(text).toMatch(/AWS_ACCESS_KEY_ID/);
    expect(io.out()).toMatch(/left to fill in:\n {2}- APP_ID and APP_SECRET/);
    expect(io.out()).toMatch(/MEDIA_PUBLIC_URL/);
    expect(io.out()).not.toContain(env.TOKEN_ENCRYPTION_KEY!);
    expect(io.out()).not.toContain(env.DASHBOARD_PASSWORD!);
  });

  it('a folder: storage served by feedmirror serve, so MEDIA_PUBLIC_URL is set; every run makes a new key', async () => {
    const a = fresh();
    const b = fresh();
    expect(await main(['init', '--storage', './mirror'], memoryIO({ cwd: a }))).toBe(0);
    expect(await main(['init'], memoryIO({ cwd: b }))).toBe(0);
    const ea = bashEnv(path.join(a, '.env'));
    const eb = bashEnv(path.join(b, '.env'));
    // Absolute: a command run from another folder sees the same feeds and outbox.
    expect(ea.STORAGE_URL).toBe(path.join(a, 'mirror'));
    expect(ea.OUTBOX_DIR).toBe(path.join(a, 'outbox'));
    expect(ea.MEDIA_PUBLIC_URL).toBe('http://127.0.0.1:8080/');
    expect(eb.STORAGE_URL).toBe(path.join(b, 'data/storage'));
    expect(eb.OUTBOX_DIR).toBe(path.join(b, 'data/outbox'));
    expect(ea.TOKEN_ENCRYPTION_KEY).not.toBe(eb.TOKEN_ENCRYPTION_KEY);
  });

  it('the outbox goes with the data, not into the folder init ran in; it is said on stdout; --outbox chooses another', async () => {
    const data = fresh();
    const elsewhere = fresh();
    const io = memoryIO({ cwd: elsewhere });
    expect(await main(['init', '--storage', path.join(data, 'storage')], io)).toBe(0);
    const env = bashEnv(path.join(elsewhere, '.env'));
    expect(env.STORAGE_URL).toBe(path.join(data, 'storage'));
    expect(env.OUTBOX_DIR).toBe(path.join(data, 'outbox'));
    expect(io.out()).toContain(
      `alert emails are written to OUTBOX_DIR=${path.join(data, 'outbox')} until SMTP_URL is set`,
    );
    const s3 = fresh();
    expect(
      await main(
        ['init', '--storage', 's3://my-feeds/x', '--outbox', '/var/lib/feedmirror/outbox'],
        memoryIO({ cwd: s3 }),
      ),
    ).toBe(0);
    expect(bashEnv(path.join(s3, '.env')).OUTBOX_DIR).toBe('/var/lib/feedmirror/outbox');
  });

  it('--out elsewhere: the file and the next step name that file, absolute or relative', async () => {
    const dir = fresh();
    const target = path.join(fresh(), 'env');
    const io = memoryIO({ cwd: dir });
    expect(await main(['init', '--out', target], io)).toBe(0);
    expect(io.out()).toContain(`then: set -a; . ${target}; set +a; npx feedmirror doctor\n`);
    expect(readFileSync(target, 'utf8')).toContain(`# Then: \`set -a; . ${target}; set +a; npx feedmirror doctor\`.`);
    const relative = memoryIO({ cwd: dir });
    expect(await main(['init', '--out', 'config.env'], relative)).toBe(0);
    expect(relative.out()).toContain('then: set -a; . ./config.env; set +a; npx feedmirror doctor\n');
    for (const file of [target, path.join(dir, 'config.env')]) {
      const env = bashEnv(file);
      registerSecretForAudit(env.TOKEN_ENCRYPTION_KEY!);
      registerSecretForAudit(env.DASHBOARD_PASSWORD!);
    }
  });

  it("docs/production.md's init line works as written (only its --out moved to a temporary folder): copies and outbox in the service user's home", async () => {
    const doc = readFileSync(path.resolve('docs/production.md'), 'utf8');
    const line = /^npx feedmirror (init .*)$/m.exec(doc)![1]!;
    const args = line.split(/\s+/);
    expect(args[args.indexOf('--out') + 1]).toBe('/etc/feedmirror/env');
    const target = path.join(fresh(), 'env');
    args[args.indexOf('--out') + 1] = target;
    const io = memoryIO({ cwd: fresh() });
    expect(await main(args, io), io.err()).toBe(0);
    const env = bashEnv(target);
    registerSecretForAudit(env.TOKEN_ENCRYPTION_KEY!);
    registerSecretForAudit(env.DASHBOARD_PASSWORD!);
    expect(env.STORAGE_URL).toBe('/var/lib/feedmirror/storage');
    expect(env.OUTBOX_DIR).toBe('/var/lib/feedmirror/outbox');
    expect(doc).toContain(
      'useradd --system --user-group --create-home --home-dir /var/lib/feedmirror --shell /usr/sbin/nologin feedmirror',
    );
  });

  it('writes no LOG_LEVEL unless asked (a command on a terminal then logs warnings as human lines)', async () => {
    const plain = fresh();
    expect(await main(['init'], memoryIO({ cwd: plain }))).toBe(0);
    const text = readFileSync(path.join(plain, '.env'), 'utf8');
    expect(text).toMatch(/^LOG_LEVEL=$/m);
    expect(text).toMatch(/^LOG_FORMAT=$/m);
    const env = bashEnv(path.join(plain, '.env'));
    registerSecretForAudit(env.TOKEN_ENCRYPTION_KEY!);
    registerSecretForAudit(env.DASHBOARD_PASSWORD!);
    const { loadConfig } = await import('../../src/config.ts');
    expect(loadConfig(env).LOG_LEVEL).toBeUndefined();
    const asked = fresh();
    expect(await main(['init', '--log-level', 'debug'], memoryIO({ cwd: asked }))).toBe(0);
    expect(bashEnv(path.join(asked, '.env')).LOG_LEVEL).toBe('debug');
    const io = memoryIO({ cwd: fresh() });
    expect(await main(['init', '--log-level', 'loud'], io)).toBe(2);
  });

  it('PORT follows a plain http://host:port PUBLIC_URL (serve itself); an https address is a proxy, PORT stays; doctor warns when they disagree', async () => {
    const direct = fresh();
    expect(await main(['init', '--public-url', 'http://127.0.0.1:8090'], memoryIO({ cwd: direct }))).toBe(0);
    const d = bashEnv(path.join(direct, '.env'));
    expect(d.PORT).toBe('8090');
    expect(d.MEDIA_PUBLIC_URL).toBe('http://127.0.0.1:8090/');
    const proxied = fresh();
    expect(await main(['init', '--public-url', 'https://feeds.example.com:8443'], memoryIO({ cwd: proxied }))).toBe(0);
    expect(bashEnv(path.join(proxied, '.env')).PORT).toBe('8080');
    const { checkPlaces } = await import('../../src/cli/doctor.ts');
    const { loadConfig } = await import('../../src/config.ts');
    registerSecretForAudit(d.TOKEN_ENCRYPTION_KEY!);
    registerSecretForAudit(d.DASHBOARD_PASSWORD!);
    expect(checkPlaces(loadConfig(d))).toEqual([]);
    const [mismatch] = checkPlaces(loadConfig({ ...d, PORT: '8080' }));
    expect(mismatch).toMatchObject({ name: 'serve address', status: 'warn' });
    expect(mismatch!.fix).toBe('set PORT=8090, or put a proxy on 8090 that forwards to 8080');
    // Not this machine: the port is the proxy's business.
    expect(checkPlaces(loadConfig({ ...d, PORT: '8080', PUBLIC_URL: 'http://203.0.113.9:8090' }))).toEqual([]);
    expect(checkPlaces(loadConfig({ ...d, STORAGE_URL: './data/storage' }))[0]).toMatchObject({ name: 'folders' });
  });

  it('refuses to overwrite an existing file (exit 1, file unchanged)', async () => {
    const dir = fresh();
    writeFileSync(path.join(dir, '.env'), 'TOKEN_ENCRYPTION_KEY=the-one-that-reads-the-tokens\n');
    const io = memoryIO({ cwd: dir });
    expect(await main(['init'], io)).toBe(1);
    expect(io.err()).toMatch(/\.env exists; not overwritten/);
    expect(readFileSync(path.join(dir, '.env'), 'utf8')).toBe('TOKEN_ENCRYPTION_KEY=the-one-that-reads-the-tokens\n');
  });

  it('a malformed storage or URL is a usage error and writes nothing', async () => {
    for (const argv of [
      ['--storage', 's3://Bad_Bucket/x'],
      ['--public-url', 'not a url'],
      ['--s3-endpoint', 'minio 9000'],
    ]) {
      const dir = fresh();
      const io = memoryIO({ cwd: dir });
      expect(await main(['init', ...argv], io), argv.join(' ')).toBe(2);
      expect(io.err()).toMatch(/^feedmirror init: /);
      expect(existsSync(path.join(dir, '.env'))).toBe(false);
    }
  });
});
