import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './redis-server.ts';
import { until } from './wait.ts';

/**
 * A private PgBouncer in transaction pooling mode in front of the test PostgreSQL: what a managed
 * pooler gives feedmirror. Debian's `pgbouncer` (infra/ensure.sh installs it). It refuses to run
 * as root, so as root it runs as `nobody` (-u).
 */
export interface Bouncer {
  /** `postgresUrl` with host and port swapped for the pooler's. */
  url(postgresUrl: string): string;
  port: number;
  output(): string;
  stop(): Promise<void>;
}

export const PGBOUNCER = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((p) => existsSync(p));

export async function startPgBouncer(postgresUrl: string, opts: { poolSize?: number } = {}): Promise<Bouncer> {
  if (!PGBOUNCER)
    throw new Error('this test runs its own pgbouncer: install it (apt-get install pgbouncer); infra/ensure.sh does');
  const target = new URL(postgresUrl);
  const user = decodeURIComponent(target.username || 'postgres');
  const dir = mkdtempSync(join(tmpdir(), 'fm-pgbouncer-'));
  chmodSync(dir, 0o755);
  const port = await freePort();
  const ini = join(dir, 'pgbouncer.ini');
  const users = join(dir, 'users.txt');
  writeFileSync(users, `"${user}" ""\n`, { mode: 0o644 });
  writeFileSync(
    ini,
    [
      '[databases]',
      // Any database name, to the test server: each test makes its own database.
      `* = host=${target.hostname} port=${target.port || '5432'}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${users}`,
      'pool_mode = transaction',
      `default_pool_size = ${opts.poolSize ?? 3}`,
      'max_client_conn = 200',
      'ignore_startup_parameters = extra_float_digits',
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const asRoot = process.getuid?.() === 0;
  const child: ChildProcess = spawn(PGBOUNCER, [...(asRoot ? ['-u', 'nobody'] : []), ini], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString('utf8')));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString('utf8')));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await until(
    () =>
      child.exitCode === null &&
      new Promise<boolean>((resolve) => {
        const sock = connect(port, '127.0.0.1');
        sock.once('connect', () => {
          sock.destroy();
          resolve(true);
        });
        sock.once('error', () => resolve(false));
      }),
    `pgbouncer to listen on ${port}`,
    10_000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; pgbouncer said: ${out.trim()}`);
  });
  return {
    port,
    url(pgUrl: string) {
      const u = new URL(pgUrl);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    output: () => out,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGINT'); // immediate shutdown
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
