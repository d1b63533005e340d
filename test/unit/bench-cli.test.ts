import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { closedPort } from '../support/closed-port.ts';

/**
 * `npm run bench` is a command people run by hand: --help answers without touching a service,
 * and a mistyped flag or value is one line and the usage, exit 2, never a stack. PostgreSQL and
 * Redis point at a closed port, so any attempt to reach them (or to start them: infra/ensure.sh
 * would try a local server on that port) would show as a slow or failed run.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));

describe('bench command line', () => {
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    const port = await closedPort();
    env = {
      ...process.env,
      DATABASE_URL: `postgres://nobody@127.0.0.1:${port}/none`,
      REDIS_URL: `redis://127.0.0.1:${port}`,
    };
  });
  const bench = (...args: string[]) => {
    const started = Date.now();
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/run.ts', ...args], {
      cwd: root,
      env,
      encoding: 'utf8',
      timeout: 30_000,
    });
    return { ...r, ms: Date.now() - started };
  };

  it.each([['--help'], ['-h']])('%s: the usage on stdout, exit 0, nothing on stderr', (flag) => {
    const r = bench(flag);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^usage: npm run bench -- \[options\]/);
    for (const f of [
      '--accounts',
      '--rounds',
      '--curve',
      '--scale',
      '--posts-mean',
      '--catch-up-seconds',
      '--seed',
      '--downtime',
      '--catch-up-limit-minutes',
      '--workers-compare',
      '--chaos',
      '--days',
      '--faults-per-day',
      '--history',
      '--json',
    ])
      expect(r.stdout).toContain(f);
    expect(r.stderr).toBe('');
    expect(r.ms).toBeLessThan(15_000);
  });

  it.each([
    [['--no-such-flag'], /^bench: Unknown option '--no-such-flag'/],
    [['--accounts', 'many'], /^bench: --accounts must be a number/],
    [['--curve', '1,,2'], /^bench: --curve must be a list like 1,2,4,8/],
    [['--scale', '0'], /^bench: --scale must be > 0/],
    [['--scale', '10', '--posts-mean', '80'], /^bench: --posts-mean must be < 50.5/],
    [['--scale', '10', '--catch-up-seconds', 'soon'], /^bench: --catch-up-seconds must be a number/],
    [['--downtime', '10', '--catch-up-limit-minutes', '0'], /^bench: --catch-up-limit-minutes must be > 0/],
    [['--chaos', '--days', '0'], /^bench: --days must be > 0/],
    [['--chaos', '--days', 'a month'], /^bench: --days must be a number/],
    [['--chaos', '--days', '400'], /^bench: --days must be at most 365/],
    [['--chaos', '--seed', '0'], /^bench: --seed must be > 0/],
    [['--chaos', '--faults-per-day', 'many'], /^bench: --faults-per-day must be a number/],
    [['--chaos', '--history', ''], /^bench: --history must name a file/],
  ])('%j: one line naming what is wrong, then the usage; exit 2, no stack', (args, first) => {
    const r = bench(...args);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(first);
    expect(r.stderr).toContain('usage: npm run bench');
    expect(r.stderr).not.toMatch(/^\s+at /m);
    expect(r.stdout).toBe('');
  });
});
