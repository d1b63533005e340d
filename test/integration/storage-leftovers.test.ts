import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { housekeepingJob, type MaintenanceDeps } from '../../jobs/maintenance.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { HOUR, ManualClock, MINUTE } from '../../src/util/clock.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { freshDatabase } from '../support/services.ts';
import { ownStorage } from '../support/storage-owner.ts';

/**
 * R-NET-4: local storage leaves no temporary file behind. A write that fails (here: a real
 * file size limit, `ulimit -f`, on a real process, which makes write(2) fail with EFBIG as a
 * full disk fails it with ENOSPC) removes its temporary file; one that a crash left is removed by
 * the daily housekeeping job once it is more than an hour old.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dirs: string[] = [];

async function tempDir(): Promise<string> {
  const d = await mkdtemp(path.join(tmpdir(), 'fm-leftovers-'));
  dirs.push(d);
  return d;
}

/** Every file under dir, relative, dot files and folders included. */
async function allFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true }))
    if (e.isFile()) out.push(path.relative(dir, path.join(e.parentPath, e.name)));
  return out.sort();
}

/** Run `code` (an ES module body) in a node process whose files may not grow past `kb` KB. */
function runLimited(code: string, kb: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', `ulimit -f ${kb} && exec node --import tsx --input-type=module -e "$FM_CODE"`], {
      cwd: ROOT,
      env: { ...process.env, FM_CODE: code },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (exit) => resolve({ code: exit, stdout, stderr }));
  });
}

let pool: pg.Pool;
let drop: () => Promise<void>;

beforeAll(async () => {
  const d = await freshDatabase('leftovers');
  drop = d.drop;
  pool = createPool(d.url);
  await migrate(pool);
});

afterAll(async () => {
  await pool?.end();
  await drop?.();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('R-NET-4 temporary files of local storage', () => {
  it('a write that fails (file size limit: EFBIG) leaves no temporary file; a small write in the same process works', async () => {
    const dir = await tempDir();
    const code = `
      const { LocalStorage } = await import(${JSON.stringify(path.join(ROOT, 'src/storage/local.ts'))});
      const s = new LocalStorage(${JSON.stringify(dir)});
      const out = [];
      const opts = { contentType: 'image/jpeg', cacheControl: 'public, max-age=60' };
      for (let i = 0; i < 10; i++) {
        try { await s.put('media/acc/' + i + '/cover.jpg', Buffer.alloc(64 * 1024, 7), opts); out.push('written'); }
        catch (e) { out.push(e.name + ' ' + (e.cause && e.cause.code)); }
      }
      await s.put('feeds/acc.json', Buffer.from('{}'), { contentType: 'application/json', cacheControl: 'no-cache' });
      out.push('small written');
      console.log(JSON.stringify(out));
    `;
    const run = await runLimited(code, 16);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const out = JSON.parse(run.stdout) as string[];
    expect(out.slice(0, 10)).toEqual(Array(10).fill('StorageError EFBIG'));
    expect(out[10]).toBe('small written');
    const files = await allFiles(dir);
    expect(files.filter((f) => f.endsWith('.tmp'))).toEqual([]);
    expect(files).toContain('feeds/acc.json');
    expect(files.filter((f) => f.endsWith('cover.jpg'))).toEqual([]);
  }, 60_000);

  it('a rename that fails (a folder where the object goes) leaves no temporary file either', async () => {
    const dir = await tempDir();
    const s = new LocalStorage(dir);
    await mkdir(path.join(dir, 'media/acc/1/cover.jpg'), { recursive: true });
    await writeFile(path.join(dir, 'media/acc/1/cover.jpg/x'), 'in the way');
    await expect(
      s.put('media/acc/1/cover.jpg', Buffer.from('jpeg'), { contentType: 'image/jpeg', cacheControl: 'no-cache' }),
    ).rejects.toThrow(/local storage put of media\/acc\/1\/cover\.jpg/);
    expect((await allFiles(dir)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('the housekeeping job removes what a crash left more than an hour ago, and nothing else', async () => {
    const dir = await tempDir();
    const s = new LocalStorage(dir);
    const clock = new ManualClock(new Date());
    const opts = { contentType: 'image/jpeg', cacheControl: 'no-cache' };
    await s.put('media/acc/1/cover.jpg', Buffer.from('jpeg'), opts);
    await s.put('feeds/acc.json', Buffer.from('{}'), { contentType: 'application/json', cacheControl: 'no-cache' });
    // What a process killed between writing and renaming leaves, in the shape writeAtomic names them.
    const crashed = [
      'media/acc/1/.cover.jpg.0123456789ab.tmp',
      'feeds/.acc.json.a1b2c3d4e5f6.tmp',
      '.meta/media/acc/1/.cover.jpg.json.ffffffffffff.tmp',
    ];
    const notOurs = ['media/acc/1/.notes.tmp', 'media/acc/1/cover.jpg.0123456789ab.tmp'];
    for (const f of [...crashed, ...notOurs]) {
      await mkdir(path.dirname(path.join(dir, f)), { recursive: true });
      await writeFile(path.join(dir, f), 'partial');
    }
    const deps = {
      db: pool,
      clock,
      logger: silentLogger,
      storage: s,
      eventRetentionDays: 30,
    } as unknown as MaintenanceDeps;
    const run = () =>
      housekeepingJob.process(deps, {}, undefined as unknown as Parameters<typeof housekeepingJob.process>[2]);

    // 59 minutes on: a write may still be under way.
    clock.advance(59 * MINUTE);
    expect((await run()).leftovers).toBe(0);
    // R-DEL-1: a folder that is not this deployment's (no marker) loses nothing, however old.
    clock.advance(2 * MINUTE);
    expect((await run()).leftovers).toBe(0);
    for (const f of crashed) expect(await allFiles(dir)).toContain(f);
    await ownStorage(pool, s);
    // A write that started just now (its file as fresh as the clock) stays at the next run too.
    const young = 'media/acc/1/.cover.jpg.0000000000aa.tmp';
    await writeFile(path.join(dir, young), 'in progress');
    await utimes(path.join(dir, young), clock.now(), clock.now());
    clock.advance(2 * MINUTE);
    expect((await run()).leftovers).toBe(3);
    const left = await allFiles(dir);
    for (const f of crashed) expect(left).not.toContain(f);
    for (const f of [...notOurs, young, 'media/acc/1/cover.jpg', 'feeds/acc.json', '.meta/media/acc/1/cover.jpg.json'])
      expect(left).toContain(f);
    clock.advance(HOUR);
    expect((await run()).leftovers).toBe(1);
  });
});
