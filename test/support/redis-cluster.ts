import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, requireRedisServer } from './redis-server.ts';
import { until } from './wait.ts';

const run = promisify(execFile);

/**
 * A private Redis Cluster of three masters (no replicas) from Debian's redis-server and
 * redis-cli, on free ports, without persistence: a master restarted loses its keys, as a managed
 * cluster's node replaced without a replica would. Never the shared test Redis.
 */
export interface LocalCluster {
  ports: number[];
  /** `redis+cluster://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3` */
  url: string;
  cli(port: number, ...args: string[]): Promise<string>;
  /** The port of the master serving `key`'s slot. */
  masterOf(key: string): Promise<number>;
  /** Kill the master on `port` (SIGKILL) and start it again with its nodes.conf; waits for cluster_state:ok. */
  restart(port: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startRedisCluster(): Promise<LocalCluster> {
  requireRedisServer();
  const dir = mkdtempSync(join(tmpdir(), 'fm-redis-cluster-'));
  const ports: number[] = [];
  while (ports.length < 3) {
    const p = await freePort();
    if (!ports.includes(p) && !ports.includes(p - 10000) && p + 10000 < 65536) ports.push(p);
  }
  const procs = new Map<number, ChildProcess>();
  const spawnNode = (port: number) => {
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'no',
        '--daemonize',
        'no',
      ],
      { stdio: 'ignore' },
    );
    procs.set(port, child);
  };
  const cli = async (port: number, ...args: string[]) =>
    (await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 10_000 })).stdout;
  const answers = (port: number) =>
    cli(port, 'ping').then(
      (out) => out.trim() === 'PONG',
      () => false,
    );
  const clusterOk = async () => {
    for (const p of ports) {
      const info = await cli(p, 'cluster', 'info').catch(() => '');
      if (!/cluster_state:ok/.test(info)) return false;
    }
    return true;
  };
  for (const p of ports) spawnNode(p);
  for (const p of ports) await until(() => answers(p), `redis-server on ${p}`, 10_000);
  await run(
    'redis-cli',
    ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'],
    { timeout: 20_000 },
  );
  await until(clusterOk, 'cluster_state:ok', 20_000);

  return {
    ports,
    url: `redis+cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`,
    cli,
    async masterOf(key: string) {
      const slot = Number((await cli(ports[0]!, 'cluster', 'keyslot', key)).trim());
      for (const line of (await cli(ports[0]!, 'cluster', 'nodes')).split('\n')) {
        const fields = line.trim().split(/\s+/);
        if (!fields[2]?.includes('master')) continue;
        const port = Number(/:(\d+)@/.exec(fields[1] ?? '')?.[1]);
        for (const range of fields.slice(8)) {
          const [from, to] = range.split('-').map(Number);
          if (slot >= from! && slot <= (to ?? from)!) return port;
        }
      }
      throw new Error(`no master serves slot ${slot}`);
    },
    async restart(port: number) {
      const old = procs.get(port)!;
      const gone = new Promise((r) => old.once('exit', r));
      old.kill('SIGKILL');
      await gone;
      spawnNode(port);
      await until(() => answers(port), `redis-server on ${port} again`, 10_000);
      await until(clusterOk, 'cluster_state:ok after the restart', 30_000);
    },
    async stop() {
      for (const child of procs.values()) {
        if (child.exitCode !== null || child.signalCode !== null) continue;
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGKILL');
        await gone;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
