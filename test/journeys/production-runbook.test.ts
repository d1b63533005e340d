import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, statSync, symlinkSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { recordCaptured } from '../support/capture.ts';
import { extractRelease, previousReleaseRef, type ExtractedRelease } from '../support/previous-release.ts';
import { loadEnvFile, openStage, type Stage, type StageProcess, type StageServer } from './stage.ts';

/**
 * docs/production.md's upgrade, rollback, backup and restore sections, followed as written on the
 * stage: each ```sh block of those sections is run line by line by bash. What a test machine has
 * no such thing as is mapped, and only that (MAPPED_PATHS and the `systemctl` and `runuser` lines):
 * /opt/feedmirror is a folder of the test's own whose releases are the previous release (taken out
 * of git, infra/previous-release) as 0.1.0 and this checkout as 0.2.0, /etc/feedmirror/env is the
 * stage's .env, `systemctl start|stop|restart feedmirror-worker feedmirror-serve` starts and stops
 * the stage's worker and serve from /opt/feedmirror/current, and `runuser -u feedmirror --` runs
 * what follows as this user. A line the doc adds that the test cannot run fails the test.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const DOC = readFileSync(join(ROOT, 'docs/production.md'), 'utf8');

/** The lines of the first ```sh block under `### heading`. */
function runbook(heading: string): string[] {
  const at = DOC.indexOf(`\n### ${heading}\n`);
  expect(at, `docs/production.md has "### ${heading}"`).toBeGreaterThan(-1);
  const block = /```sh\n([\s\S]*?)```/.exec(DOC.slice(at))!;
  return block[1]!.split('\n').filter((l) => l.trim() !== '' && !l.trimStart().startsWith('#'));
}

describe('journey: docs/production.md upgrade, rollback, backup and restore, as written', () => {
  let stage: Stage;
  let previous: ExtractedRelease;
  let machine: string;
  let restoredDb: string;
  const running: { worker?: StageProcess; serve?: StageServer } = {};
  let accountId = '';

  const paths = (): Array<[string, string]> => [
    ['/opt/feedmirror', join(machine, 'opt/feedmirror')],
    ['/etc/feedmirror/env', join(stage.dir, '.env')],
    ['/var/backups/feedmirror', join(machine, 'backups')],
    ['feedmirror_restored', restoredDb],
  ];
  const mapped = (line: string) => paths().reduce((l, [from, to]) => l.split(from).join(to), line);
  const currentBin = () => join(realpathSync(join(machine, 'opt/feedmirror/current')), 'bin/feedmirror.js');

  const systemctl = async (action: string, units: string[]) => {
    expect(units.sort()).toEqual(['feedmirror-serve', 'feedmirror-worker']);
    if (action === 'stop' || action === 'restart') {
      await running.worker?.stop();
      await running.serve?.stop();
    }
    if (action === 'start' || action === 'restart') {
      // As systemd does: the env file read again, the program under /opt/feedmirror/current.
      const env = loadEnvFile(stage.dir);
      running.worker = await stage.startWorker({ bin: currentBin(), env });
      running.serve = await stage.startServe({ bin: currentBin(), env });
    }
  };

  const bash = (script: string) =>
    new Promise<{ code: number | null; out: string }>((done) => {
      const child = spawn('bash', ['--norc', '--noprofile', '-e', '-c', script], {
        cwd: stage.dir,
        env: { PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, HOME: stage.dir },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      const keep = (b: Buffer) => {
        out += b.toString('utf8');
        recordCaptured('process', b.toString('utf8'));
      };
      child.stdout.on('data', keep);
      child.stderr.on('data', keep);
      child.once('close', (code) => done({ code, out }));
    });

  /** Runs a section: consecutive shell lines as one bash script, systemctl lines on the stage. */
  const follow = async (heading: string): Promise<string[]> => {
    const outputs: string[] = [];
    let script: string[] = [];
    const flush = async () => {
      if (script.length === 0) return;
      const r = await bash(script.join('\n'));
      expect(r.code, `${heading}:\n${script.join('\n')}\n${r.out}`).toBe(0);
      outputs.push(r.out);
      script = [];
    };
    for (const raw of runbook(heading)) {
      const line = mapped(raw);
      const ctl = /^systemctl (start|stop|restart) (.+)$/.exec(line);
      if (ctl) {
        await flush();
        await systemctl(ctl[1]!, ctl[2]!.split(/\s+/));
        continue;
      }
      const as = /^runuser -u feedmirror -- (.*)$/.exec(line);
      script.push(as ? as[1]! : line);
    }
    await flush();
    return outputs;
  };

  beforeAll(async () => {
    stage = await openStage('runbook');
    previous = extractRelease(previousReleaseRef());
    machine = mkdtempSync(join(tmpdir(), 'fm-runbook-'));
    restoredDb = `fm_restored_${randomBytes(4).toString('hex')}`;
    mkdirSync(join(machine, 'opt/feedmirror/releases'), { recursive: true });
    mkdirSync(join(machine, 'backups'));
    symlinkSync(previous.dir, join(machine, 'opt/feedmirror/releases/0.1.0'));
    symlinkSync(ROOT, join(machine, 'opt/feedmirror/releases/0.2.0'));
    // The first install, as the section above the runbook sets it up: 0.1.0 migrated and running.
    symlinkSync(join(machine, 'opt/feedmirror/releases/0.1.0'), join(machine, 'opt/feedmirror/current'));
    const migrated = await stage.cli(['migrate'], { bin: currentBin() });
    expect(migrated.code, migrated.stderr).toBe(0);
    await systemctl('start', ['feedmirror-worker', 'feedmirror-serve']);
    const acc = await stage.connect({ username: 'runbook.shop', posts: 4, bin: currentBin() });
    expect(acc.add.code, acc.add.stderr).toBe(0);
    accountId = acc.id;
    await stage.until(async () => (await stage.feed(acc.id))?.posts.length === 4, 'the first feed', 90_000);
  }, 240_000);

  afterAll(async () => {
    await stage?.close();
    await previous?.close();
    if (machine) await rm(machine, { recursive: true, force: true });
    const admin = new pg.Client({ connectionString: inject('databaseUrl') });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${restoredDb} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  });

  it('upgrading: a dump first, migrate with the new release while the old one runs, switch, restart', async () => {
    const oldWorker = running.worker!;
    await follow('Upgrading');
    expect(statSync(join(machine, 'backups/before-0.2.0.dump')).size).toBeGreaterThan(1000);
    expect(oldWorker.child.exitCode).toBe(0);
    expect(currentBin()).toBe(join(ROOT, 'bin/feedmirror.js'));
    const ready = await fetch(`${running.serve!.url}/readyz`);
    expect(ready.status, await ready.text()).toBe(200);
    expect((await stage.feed(accountId))?.posts).toHaveLength(4);
  }, 180_000);

  it('rolling back: the previous release runs again on the migrated database', async () => {
    await follow('Rolling back');
    expect(currentBin()).toBe(join(previous.dir, 'bin/feedmirror.js'));
    const ready = await fetch(`${running.serve!.url}/readyz`);
    expect(ready.status, await ready.text()).toBe(200);
    expect(running.worker!.child.exitCode).toBeNull();
    expect(running.worker!.output()).not.toMatch(/database is newer than this feedmirror/);
  }, 180_000);

  it('backing up and restoring: a dump, the services stopped, restored into a new database, started, verify exits 0', async () => {
    await follow('Backing up');
    expect(existsSync(join(machine, 'backups/feedmirror.dump'))).toBe(true);
    const stoppedBefore = running.worker!;
    const outputs = await follow('Restoring a backup');
    // Stopped before pg_restore: the worker that ran on the old database exited cleanly.
    expect(stoppedBefore.child.exitCode).toBe(0);
    expect(loadEnvFile(stage.dir).DATABASE_URL).toMatch(new RegExp(`/${restoredDb}$`));
    // verify exited 0 (the block runs under bash -e): the restored database and storage agree.
    expect(outputs.at(-1)).toMatch(/all well/);
    const list = await stage.cli(['accounts', 'list', '--json'], { env: loadEnvFile(stage.dir) });
    expect(list.code, list.stderr).toBe(0);
    expect((JSON.parse(list.stdout) as Array<{ id: string }>).map((a) => a.id)).toEqual([accountId]);
  }, 240_000);
});
