import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { recordCaptured } from '../support/capture.ts';
import { closedPort } from '../support/closed-port.ts';

/**
 * `feedmirror serve` as a real process: it refuses to start on a non-loopback HOST without
 * DASHBOARD_USER / DASHBOARD_PASSWORD, before it touches Postgres or Redis (both point at a closed
 * port here, so reaching them would fail differently), and says which variables to set.
 */
const BIN = path.resolve('bin/feedmirror.js');

async function runServe(env: Record<string, string>): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const port = await closedPort();
  const child = spawn(process.execPath, [BIN, 'serve'], {
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/none`,
      REDIS_URL: `redis://127.0.0.1:${port}`,
      PORT: '0',
      LOG_LEVEL: 'error',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  recordCaptured('process', stdout + stderr);
  return { code, stderr, stdout };
}

describe('feedmirror serve start-up checks', () => {
  it('refuses to start on 0.0.0.0 without DASHBOARD_USER / DASHBOARD_PASSWORD, naming both', async () => {
    const { code, stderr } = await runServe({ HOST: '0.0.0.0' });
    expect(code).toBe(1);
    expect(stderr).toContain('DASHBOARD_USER');
    expect(stderr).toContain('DASHBOARD_PASSWORD');
    expect(stderr).toContain('0.0.0.0');
    expect(stderr).not.toMatch(/ECONNREFUSED|database/i); // refused before touching any service
  }, 30_000);

  it('refuses a user without a password (half-configured login)', async () => {
    const { code, stderr } = await runServe({ HOST: '0.0.0.0', DASHBOARD_USER: 'operator' });
    expect(code).toBe(1);
    expect(stderr).toContain('Set both DASHBOARD_USER and DASHBOARD_PASSWORD (only DASHBOARD_USER is set)');
  }, 30_000);

  it('with credentials set it gets past the dashboard check (and then needs Redis and Postgres)', async () => {
    const { code, stderr } = await runServe({
      HOST: '0.0.0.0',
      DASHBOARD_USER: 'operator',
      DASHBOARD_PASSWORD: 'long-enough-password',
      TOKEN_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    });
    expect(code).toBe(3); // EXIT.unavailable: a service is down
    // Redis is checked first, then PostgreSQL: both are closed here.
    expect(stderr).toMatch(/cannot reach (Redis|PostgreSQL)/);
    expect(stderr).not.toContain('DASHBOARD_USER');
    expect(stderr).not.toContain('long-enough-password');
  }, 30_000);
});
