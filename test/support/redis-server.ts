import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from './wait.ts';

export { freePort } from './closed-port.ts';

/**
 * A private redis-server for tests that restart or flush Redis: never the shared one, whose
 * other users (other test files, a person's own worker) would lose their data.
 */
export function requireRedisServer(): void {
  if (
    !existsSync('/usr/bin/redis-server') &&
    !process.env.PATH?.split(':').some((d) => existsSync(join(d, 'redis-server')))
  ) {
    throw new Error(
      'this test runs its own redis-server: install it (apt-get install redis-server); infra/ensure.sh does',
    );
  }
}

export async function spawnRedis(
  port: number,
  dir: string = mkdtempSync(join(tmpdir(), 'fm-redis-')),
): Promise<ChildProcess> {
  const p = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'yes',
      '--appendfsync',
      'always',
      '--dir',
      dir,
    ],
    { stdio: 'ignore' },
  );
  await until(
    () =>
      new Promise<boolean>((resolve) => {
        const sock = connect(port, '127.0.0.1');
        sock.once('connect', () => {
          sock.destroy();
          resolve(true);
        });
        sock.once('error', () => resolve(false));
      }),
    'redis-server to listen',
  );
  return p;
}

export async function stopRedis(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null) return;
  const exited = new Promise((r) => p.once('exit', r));
  p.kill('SIGTERM');
  await exited;
}
