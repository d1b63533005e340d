import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config.ts';
import { preflight, type Role } from '../../src/cli/preflight.ts';
import { interpolate, parseComposeEnvFile } from '../support/compose-env.ts';
import { main } from '../../src/cli/main.ts';
import { memoryIO } from '../support/memory-io.ts';

/**
 * .env.example works as shipped: it loads in bash (`set -a; . ./.env.example`) and as a compose
 * env file to the same values, and feedmirror's configuration accepts every one of them. The
 * compose services, resolved as compose would (env file, then `environment:`), start as their
 * command would check them.
 */
const ROOT = path.resolve('.');
const EXAMPLE = readFileSync(path.join(ROOT, '.env.example'), 'utf8');
const KEYS = EXAMPLE.split('\n')
  .map((l) => /^([A-Z0-9_]+)=/.exec(l)?.[1])
  .filter((k): k is string => !!k);

/** What bash makes of an env file: `set -a; . file`, then every exported variable. */
function loadInBash(file: string): { env: Record<string, string>; stderr: string; status: number | null } {
  const r = spawnSync('bash', ['--norc', '--noprofile', '-c', `set -a; . "${file}"; set +a; env -0`], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const env: Record<string, string> = {};
  for (const entry of r.stdout.split('\0')) {
    const eq = entry.indexOf('=');
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return { env, stderr: r.stderr, status: r.status };
}

const only = (env: Record<string, string>) => Object.fromEntries(KEYS.map((k) => [k, env[k]]));

describe('.env.example', () => {
  it('loads in bash without a single error, and the configuration accepts it', () => {
    const { env, stderr, status } = loadInBash(path.join(ROOT, '.env.example'));
    expect(stderr).toBe('');
    expect(status).toBe(0);
    expect(env.EXPIRY_SWEEP_CRON).toBe('0 8 * * *');
    expect(env.ALERT_EMAIL_FROM).toBe('feedmirror@localhost');
    const config = loadConfig(env);
    expect(config.EXPIRY_SWEEP_CRON).toBe('0 8 * * *');
    expect(config.ALERT_EMAIL_FROM).toBe('feedmirror@localhost');
    expect(config.STORAGE_URL).toBe('./data/storage');
  });

  it('as a compose env file gives exactly the values bash gives, and the configuration accepts them', () => {
    const compose = parseComposeEnvFile(EXAMPLE);
    expect(Object.keys(compose).sort()).toEqual([...KEYS].sort());
    expect(compose).toEqual(only(loadInBash(path.join(ROOT, '.env.example')).env));
    expect(() => loadConfig(compose)).not.toThrow();
  });

  it('every value is written the portable way: no inline comment, no $, spaces only inside double quotes', () => {
    for (const line of EXAMPLE.split('\n').filter((l) => /^[A-Z0-9_]+=/.test(l))) {
      const value = line.slice(line.indexOf('=') + 1);
      expect(value, line).not.toMatch(/\s#/);
      expect(value, line).not.toContain('$');
      if (/\s/.test(value)) expect(value, line).toMatch(/^"[^"]*"$/);
    }
  });

  it('the config module accepts the documented default sender feedmirror@localhost and names a bad address without echoing it', () => {
    expect(
      loadConfig({ ALERT_EMAIL_FROM: 'feedmirror@localhost', ALERT_EMAIL_TO: 'ops@mail.internal' }).ALERT_EMAIL_FROM,
    ).toBe('feedmirror@localhost');
    expect(() => loadConfig({ ALERT_EMAIL_TO: 'not an address' })).toThrow(/ALERT_EMAIL_TO: must be an email address/);
    expect(() => loadConfig({ ALERT_EMAIL_TO: 'ops@' })).toThrow(/ALERT_EMAIL_TO/);
  });
});

describe('infra/compose.yaml services, resolved as compose does', () => {
  const doc = parse(readFileSync(path.join(ROOT, 'infra', 'compose.yaml'), 'utf8'), { merge: true }) as {
    services: Record<string, { command?: string[]; environment?: Record<string, unknown> }>;
  };
  const ROLE: Record<string, Role> = { migrate: 'migrate', worker: 'worker', serve: 'serve' };

  /** The service's environment: the env file, then `environment:` (which wins), interpolated from the env file (`--env-file .env`). */
  function resolveService(name: string, dotEnv: string): { env: Record<string, string>; role: Role } {
    const fileVars = parseComposeEnvFile(dotEnv);
    const service = doc.services[name]!;
    const env = { ...fileVars };
    for (const [k, v] of Object.entries(service.environment ?? {})) env[k] = interpolate(String(v), fileVars);
    const role = ROLE[service.command?.[0] ?? ''];
    expect(role, `${name} runs a feedmirror command`).toBeDefined();
    return { env, role: role! };
  }

  /** What the compose file's header says to run first, as written: `npx feedmirror init …`. */
  async function initDotEnv(): Promise<string> {
    const header = readFileSync(path.join(ROOT, 'infra', 'compose.yaml'), 'utf8');
    const args = /^# +npx feedmirror (init[^#]*?)\s*#/m.exec(header)![1]!.split(/\s+/);
    const dir = mkdtempSync(path.join(tmpdir(), 'fm-compose-'));
    expect(await main(args, memoryIO({ cwd: dir }))).toBe(0);
    return readFileSync(path.join(dir, '.env'), 'utf8');
  }

  it('the header says to start with feedmirror init', () => {
    expect(readFileSync(path.join(ROOT, 'infra', 'compose.yaml'), 'utf8')).toMatch(/^# +npx feedmirror init /m);
  });

  it.each(['migrate', 'worker', 'server'])('%s starts on the .env that feedmirror init writes', async (name) => {
    const { env, role } = resolveService(name, await initDotEnv());
    const pre = await preflight(env, role);
    expect(pre.ok ? [] : pre.problems).toEqual([]);
    if (!pre.ok) return;
    // The addresses inside the compose network win over the file's.
    expect(pre.config.REDIS_URL).toBe('redis://redis:6379');
    expect(pre.config.STORAGE_URL).toMatch(/^s3:\/\//);
  });

  it('migrate starts on .env.example as copied; worker and server refuse it naming what to fill in', async () => {
    expect((await preflight(resolveService('migrate', EXAMPLE).env, 'migrate')).ok).toBe(true);
    const worker = await preflight(resolveService('worker', EXAMPLE).env, 'worker');
    expect(worker.ok ? [] : worker.problems.join('\n')).toMatch(/TOKEN_ENCRYPTION_KEY/);
    const server = await preflight(resolveService('server', EXAMPLE).env, 'serve');
    expect(server.ok ? [] : server.problems.join('\n')).toMatch(/DASHBOARD_USER and DASHBOARD_PASSWORD/);
  });
});
