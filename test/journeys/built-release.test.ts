import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildRelease, compilerReachable, type BuiltRelease } from '../support/built-release.ts';
import { openStage, type Stage } from './stage.ts';

/**
 * The image runs JavaScript: `npm run build` turns src/ and jobs/ into dist/, and bin/feedmirror.js
 * runs dist/ when there are no newer sources beside it. Here the image's /app is laid out without
 * a container engine (dist/, bin/, package.json, a node_modules with no TypeScript, tsx or
 * esbuild) and its commands run: --help, migrate, accounts add, a worker that syncs, and serve.
 */
describe('journey: the built release runs without TypeScript', () => {
  let release: BuiltRelease;
  let stage: Stage;
  beforeAll(async () => {
    release = buildRelease();
    stage = await openStage('builtrelease');
  }, 300_000);
  afterAll(async () => {
    await stage?.close();
    await release?.close();
  });

  it('is laid out as the image is: dist/ with its migrations and assets, no sources, no compiler', () => {
    for (const f of [
      'dist/build.json',
      'dist/src/cli/main.js',
      'dist/jobs/worker.js',
      'dist/migrations',
      'dist/.env.example',
    ])
      expect(existsSync(join(release.dir, f)), f).toBe(true);
    for (const f of [
      'dist/src/alerts/email-templates/layout.html',
      'dist/src/embed/feedmirror-widget.js',
      'dist/src/http/dashboard/dashboard.css',
    ])
      expect(existsSync(join(release.dir, f)), f).toBe(true);
    expect(existsSync(join(release.dir, 'src'))).toBe(false);
    expect(compilerReachable(release.dir)).toEqual([]);
  });

  it('answers --help, migrates, adds an account and its worker syncs it', async () => {
    const help = await stage.cli(['--help'], { bin: release.bin });
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^Usage: feedmirror/);
    const migrated = await stage.cli(['migrate'], { bin: release.bin });
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(migrated.stdout).toMatch(/^applied 001_accounts_tokens\.sql, .*; database at \d{3}_\w+\.sql$/m);
    const worker = await stage.startWorker({ bin: release.bin });
    const acc = await stage.connect({ username: 'built.release', posts: 3, bin: release.bin });
    expect(acc.add.code, acc.add.stderr).toBe(0);
    await stage
      .until(async () => (await stage.feed(acc.id))?.posts.length === 3, 'the built worker to publish', 90_000)
      .catch((err: Error) => {
        throw new Error(`${err.message}; the worker said:\n${worker.output().slice(-6000)}`);
      });
    // The embed script the built worker published is the bundle the build wrote: no esbuild here.
    const script = await stage.fetchPublic('widget/feedmirror-widget.js');
    expect(script.status).toBe(200);
    const built = await readFile(join(release.dir, 'dist/src/embed/feedmirror-widget.js'));
    expect(Buffer.from(await script.arrayBuffer()).equals(built)).toBe(true);
    expect(worker.output()).not.toContain('could not publish the widget script');
    await worker.stop();
    expect(await worker.exited).toBe(0);
  }, 180_000);

  it('serves, answers /serving, and on SIGTERM drains and exits 0', async () => {
    const serve = await stage.startServe({ bin: release.bin });
    const serving = await fetch(`${serve.url}/serving`);
    expect(serving.status).toBe(200);
    await serve.stop();
    expect(await serve.exited).toBe(0);
    expect(serve.output()).toContain('shutting down: no new connections, the requests in flight may finish');
  }, 60_000);
});
