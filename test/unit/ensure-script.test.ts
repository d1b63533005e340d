import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort } from '../support/closed-port.ts';

/**
 * infra/ensure.sh run as `npm run demo` and `npm test` run it, from a copy in a temporary folder,
 * with a PATH of its own: the few tools it uses, stubs of apt-get, sudo and id that record how
 * they were called, and none of docker, redis-server, pgbouncer or pg_ctlcluster. Nothing is
 * installed or started: the stubs only answer as apt-get does when it is locked, when a package
 * is unknown, and so on.
 */
const ROOT = path.resolve('.');
const TOOLS = ['bash', 'dirname', 'seq', 'sleep', 'ls', 'sort', 'tail', 'mktemp', 'cat', 'grep', 'rm', 'env', 'true'];

interface Stubs {
  /** What `apt-get install` prints on stderr and its exit code; `update` always succeeds. */
  aptInstall?: { stderr: string; code: number };
  /** `id -u`'s answer (the real one otherwise). */
  uid?: number;
  /** A sudo whose `sudo -n true` fails (a password would be needed); no sudo at all when unset. */
  sudoNeedsPassword?: boolean;
}

function sandbox(stubs: Stubs): { dir: string; calls: () => string[] } {
  const dir = mkdtempSync(path.join(tmpdir(), 'fm-ensure-'));
  mkdirSync(path.join(dir, 'infra'));
  copyFileSync(path.join(ROOT, 'infra/ensure.sh'), path.join(dir, 'infra/ensure.sh'));
  const bin = path.join(dir, 'bin');
  mkdirSync(bin);
  for (const tool of TOOLS) {
    const real = ['/usr/bin', '/bin'].map((d) => path.join(d, tool)).find((p) => existsSync(p));
    if (real) symlinkSync(real, path.join(bin, tool));
  }
  const log = path.join(dir, 'calls.txt');
  const stub = (name: string, body: string) => {
    writeFileSync(path.join(bin, name), `#!/bin/bash\necho "${name} $*" >> ${JSON.stringify(log)}\n${body}\n`);
    chmodSync(path.join(bin, name), 0o755);
  };
  const install = stubs.aptInstall ?? { stderr: '', code: 0 };
  stub(
    'apt-get',
    `if [ "$1" = install ]; then printf '%s\\n' ${JSON.stringify(install.stderr)} >&2; exit ${install.code}; fi\nexit 0`,
  );
  if (stubs.uid !== undefined) stub('id', `echo ${stubs.uid}`);
  else symlinkSync('/usr/bin/id', path.join(bin, 'id'));
  if (stubs.sudoNeedsPassword) stub('sudo', 'echo "sudo: a password is required" >&2; exit 1');
  return {
    dir,
    calls: () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : []),
  };
}

function ensure(dir: string, targets: string[], env: Record<string, string>) {
  const r = spawnSync(path.join(dir, 'bin/bash'), [path.join(dir, 'infra/ensure.sh'), ...targets], {
    env: { PATH: path.join(dir, 'bin'), TMPDIR: dir, ...env },
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { code: r.status, lines: r.stderr.trim().split('\n'), stderr: r.stderr };
}

describe('infra/ensure.sh', () => {
  let redis: Server;
  let postgres: Server;
  let listening: Record<string, string>;
  let unreachable: Record<string, string>;
  const listen = async () => {
    const s = createServer((c) => c.destroy());
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    return s;
  };
  beforeAll(async () => {
    redis = await listen();
    postgres = await listen();
    const port = (s: Server) => (s.address() as { port: number }).port;
    listening = {
      REDIS_URL: `redis://127.0.0.1:${port(redis)}`,
      DATABASE_URL: `postgres://postgres@127.0.0.1:${port(postgres)}/postgres`,
    };
    const closed = await closedPort();
    unreachable = { REDIS_URL: `redis://127.0.0.1:${closed}`, DATABASE_URL: listening.DATABASE_URL! };
  });
  afterAll(() => {
    redis?.close();
    postgres?.close();
  });

  it('the demo installs only what it runs: with PostgreSQL and Redis reachable, no package is asked for', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    const demoTargets = /bash infra\/ensure\.sh ([\w -]+?) &&/.exec(pkg.scripts.demo!)?.[1]?.split(' ');
    expect(demoTargets).toEqual(['deps', 'services']);
    expect(pkg.scripts.test).toMatch(/^bash infra\/ensure\.sh deps services test-tools && /);

    const box = sandbox({});
    const r = ensure(box.dir, ['services'], listening);
    expect(r.code, r.stderr).toBe(0);
    expect(r.lines).toEqual([
      `[ensure] redis: using the server already listening on 127.0.0.1:${(redis.address() as { port: number }).port}`,
      `[ensure] postgres: using the server already listening on 127.0.0.1:${(postgres.address() as { port: number }).port}`,
    ]);
    expect(box.calls()).toEqual([]);
  });

  it('the demo with Redis unreachable asks for redis-server only, never pgbouncer or chromium; apt locked is one line naming what to do, exit 1', () => {
    const box = sandbox({
      aptInstall: {
        stderr:
          'E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)\nE: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?',
        code: 100,
      },
    });
    const r = ensure(box.dir, ['services'], unreachable);
    expect(r.code).toBe(1);
    expect(r.lines).toEqual([
      "[ensure] installing redis-server from Debian's packages",
      expect.stringMatching(
        /^\[ensure\] cannot install redis-server: apt is locked by another process \(apt-get, unattended-upgrades\); wait for it to finish, then run this again \(apt-get's output: .+\)$/,
      ),
    ]);
    const asked = box.calls().filter((c) => c.startsWith('apt-get install'));
    expect(asked).toEqual(['apt-get install -y -qq redis-server']);
    expect(box.calls().join('\n')).not.toMatch(/pgbouncer|chromium/);
  });

  it('the test tools: a package the lists do not have is one line, exit 1', () => {
    const box = sandbox({ aptInstall: { stderr: 'E: Unable to locate package redis-server', code: 100 } });
    const r = ensure(box.dir, ['test-tools'], listening);
    expect(r.code).toBe(1);
    expect(r.lines.at(-1)).toMatch(
      /^\[ensure\] cannot install redis-server: Debian's package lists have no such package; run 'apt-get update' as root or check \/etc\/apt\/sources\.list, then run this again/,
    );
    expect(r.lines.filter((l) => !l.startsWith('[ensure] '))).toEqual([]);
  });

  it('not root and no sudo (or one that wants a password): one line, exit 1, apt-get never run', () => {
    for (const stubs of [{ uid: 1000 }, { uid: 1000, sudoNeedsPassword: true }]) {
      const box = sandbox(stubs);
      const r = ensure(box.dir, ['services'], unreachable);
      expect(r.code).toBe(1);
      expect(r.lines).toEqual([
        '[ensure] cannot install redis-server: not root and no sudo without a password; install it as root (apt-get install redis-server), then run this again',
      ]);
      expect(box.calls().filter((c) => c.startsWith('apt-get'))).toEqual([]);
    }
  });

  it('an unknown target is a usage error naming the targets', () => {
    const r = ensure(sandbox({}).dir, ['browser'], listening);
    expect(r.code).toBe(2);
    expect(r.lines).toEqual(['[ensure] unknown target browser (deps, services, test-tools)']);
  });
});
