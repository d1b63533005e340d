import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chmod, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { healthRoutes, STORAGE_PROBE_EVERY_MS, type HealthDeps } from '../../src/http/health.ts';
import { createStorage, LocalStorage, type ObjectStorage } from '../../src/storage/index.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { S3RVER_CREDENTIALS, startS3, type TestS3 } from '../support/s3.ts';

/**
 * R-NET-5: /readyz says storage is ready only when it takes writes where feedmirror writes:
 * feeds/, media/ and widget/ each get a probe object written, read back and deleted, at most once
 * a minute (the injectable clock moves the minute). A prefix is made unwritable in ways that hold
 * for root too (root passes every permission check): a file where its folder should be, or the
 * folder made immutable (chattr +i) when this machine allows it, else read-only for a non-root
 * user. The old check (access(root, W_OK)) said ready in all of these.
 */
type Ready = {
  status: number;
  body: {
    status: string;
    down: string[];
    checks: Record<
      string,
      { ok: boolean; reason?: string; prefixes?: Record<string, { ok: boolean; reason?: string }> }
    >;
  };
};

const cleanups: Array<() => Promise<unknown>> = [];
let s3: TestS3;

beforeAll(async () => {
  s3 = await startS3('feedmirror-readiness');
});

afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  await s3?.close();
});

async function serve(deps: HealthDeps): Promise<() => Promise<Ready>> {
  const app = express();
  app.use(healthRoutes(deps));
  const server: Server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return async () => {
    const res = await fetch(`${base}/readyz`);
    return { status: res.status, body: (await res.json()) as Ready['body'] };
  };
}

async function localRoot(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'fm-readiness-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Every file under dir, relative (dot files included). */
async function allFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
}

/** Make a folder refuse writes for whoever runs the test: immutable as root where chattr works, read-only otherwise. */
async function makeUnwritable(dir: string): Promise<{ how: string; undo: () => Promise<void> }> {
  if (process.getuid?.() === 0) {
    try {
      execFileSync('chattr', ['+i', dir], { stdio: 'ignore' });
      return { how: 'chattr +i', undo: async () => void execFileSync('chattr', ['-i', dir], { stdio: 'ignore' }) };
    } catch {
      // No chattr, or a file system without the flag: a file in the folder's place below.
    }
    const aside = `${dir}.aside`;
    await rm(aside, { recursive: true, force: true });
    execFileSync('mv', [dir, aside]);
    await writeFile(dir, 'not a folder');
    return {
      how: 'a file in its place',
      undo: async () => {
        await rm(dir, { force: true });
        execFileSync('mv', [aside, dir]);
      },
    };
  }
  await chmod(dir, 0o500);
  return { how: 'chmod 0500', undo: () => chmod(dir, 0o755) };
}

describe('R-NET-5 readiness writes where feedmirror writes', () => {
  it('local storage that takes writes: ready, every prefix ok, no probe object left behind', async () => {
    const root = await localRoot();
    const ready = await serve({ storage: new LocalStorage(root), clock: new ManualClock(new Date()) });
    const r = await ready();
    expect(r.status).toBe(200);
    expect(r.body.checks.storage?.prefixes).toEqual({ feeds: { ok: true }, media: { ok: true }, widget: { ok: true } });
    expect(await allFiles(root)).toEqual([]);
  });

  it('a file where feeds/ should be: 503, storage down, feeds named with its code, media and widget ok', async () => {
    const root = await localRoot();
    await writeFile(path.join(root, 'feeds'), 'not a folder');
    const ready = await serve({ storage: new LocalStorage(root), clock: new ManualClock(new Date()) });
    const r = await ready();
    expect(r.status).toBe(503);
    expect(r.body.down).toEqual(['storage']);
    expect(r.body.checks.storage).toMatchObject({ ok: false, reason: expect.stringMatching(/^E[A-Z]+$/) });
    expect(r.body.checks.storage?.prefixes).toEqual({
      feeds: { ok: false, reason: expect.stringMatching(/^(EEXIST|ENOTDIR)$/) },
      media: { ok: true },
      widget: { ok: true },
    });
  });

  it('an existing media/ folder that refuses writes: 503 naming media (EPERM or EACCES)', async () => {
    const root = await localRoot();
    const storage = new LocalStorage(root);
    await storage.put('media/1784/1/cover.jpg', Buffer.from('jpeg'), { contentType: 'image/jpeg', cacheControl: 'x' });
    const locked = await makeUnwritable(path.join(root, 'media'));
    cleanups.push(locked.undo);
    const ready = await serve({ storage, clock: new ManualClock(new Date()) });
    const r = await ready();
    expect(r.status, locked.how).toBe(503);
    expect(r.body.checks.storage?.prefixes?.media, locked.how).toMatchObject({ ok: false });
    expect(r.body.checks.storage?.prefixes?.media?.reason, locked.how).toMatch(/^(EPERM|EACCES|EEXIST|ENOTDIR)$/);
    expect(r.body.checks.storage?.prefixes?.feeds).toEqual({ ok: true });
  });

  it('probes at most once a minute: a repaired prefix is ready once the minute has passed, not before', async () => {
    const root = await localRoot();
    const clock = new ManualClock(new Date());
    await writeFile(path.join(root, 'widget'), 'not a folder');
    const ready = await serve({ storage: new LocalStorage(root), clock });
    expect((await ready()).body.checks.storage?.prefixes?.widget?.ok).toBe(false);
    // Repaired: the cached answer stands until a minute has passed.
    await rm(path.join(root, 'widget'));
    await mkdir(path.join(root, 'widget'));
    clock.advance(STORAGE_PROBE_EVERY_MS - 1_000);
    expect((await ready()).status).toBe(503);
    clock.advance(1_000);
    const r = await ready();
    expect(r.status).toBe(200);
    expect(r.body.checks.storage?.prefixes?.widget).toEqual({ ok: true });
    // And no probe a second time within the minute: the folder broken again goes unseen for it.
    await rm(path.join(root, 'widget'), { recursive: true, force: true });
    await writeFile(path.join(root, 'widget'), 'not a folder');
    clock.advance(STORAGE_PROBE_EVERY_MS - 1);
    expect((await ready()).status).toBe(200);
    clock.advance(1);
    expect((await ready()).status).toBe(503);
  });

  it('S3: ready with every prefix written, read back and deleted (no probe object left in the bucket)', async () => {
    const storage: ObjectStorage = createStorage(
      loadConfig({ STORAGE_URL: `s3://${s3.bucket}/r`, S3_ENDPOINT: s3.endpoint, S3_FORCE_PATH_STYLE: 'true' }),
      { credentials: S3RVER_CREDENTIALS, maxAttempts: 1, requestTimeoutMs: 2_000 },
    );
    const ready = await serve({ storage, clock: new ManualClock(new Date()) });
    const r = await ready();
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.checks.storage?.prefixes).toEqual({ feeds: { ok: true }, media: { ok: true }, widget: { ok: true } });
    const left: string[] = [];
    for await (const k of storage.list('')) left.push(k);
    expect(left).toEqual([]);
  });
});
