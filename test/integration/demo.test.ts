import { afterAll, describe, expect, inject, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnFeedmirror, type Spawned } from '../support/processes.ts';
import { until } from '../support/wait.ts';
import { validateFeed } from '../../src/schema/validate.ts';

/**
 * `npm run demo` as a newcomer runs it (issue 5): on embedded defaults it connects a demo account,
 * syncs, mirrors and publishes, and every address it prints opens.
 */
describe('the demo (npm run demo)', () => {
  let demo: Spawned;
  const cwd = mkdtempSync(join(tmpdir(), 'fm-demo-'));

  afterAll(async () => {
    if (demo && demo.child.exitCode === null) {
      demo.child.kill('SIGKILL');
      await demo.exited;
    }
  });

  it('prints a dashboard, its login, the feed path and the widget preview, and each of them opens', async () => {
    demo = spawnFeedmirror(['demo-run', '--port', '0', '--posts', '12'], { DATABASE_URL: inject('databaseUrl'), REDIS_URL: inject('redisUrl'), LOG_LEVEL: 'warn' }, { cwd });
    await until(() => demo.output().includes('press Ctrl-C to stop') || demo.child.exitCode !== null, 'the demo to publish its feed', 120_000);
    const out = demo.output();
    expect(demo.child.exitCode, out).toBeNull();
    const field = (label: string) => new RegExp(`^${label}:\\s+(\\S+)`, 'm').exec(out)?.[1];

    const dashboard = field('dashboard');
    const password = /password: (\S+)\)/.exec(out)?.[1];
    expect(dashboard).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/dashboard$/);
    expect(password).toBeTruthy();
    const login = await fetch(dashboard!);
    expect(login.status).toBe(200); // redirected to the login page
    expect(await login.text()).toMatch(/password/i);

    const feedPath = field('feed')!;
    const onDisk = validateFeed(JSON.parse(readFileSync(feedPath, 'utf8')));
    expect(onDisk.ok).toBe(true);

    const feedUrl = field('feed over HTTP')!;
    const res = await fetch(feedUrl);
    expect(res.status).toBe(200);
    const feed = validateFeed(await res.json());
    if (!feed.ok) throw new Error(JSON.stringify(feed.problems));
    expect(feed.feed.demo).toBe(false);
    expect(feed.feed.posts.length).toBeGreaterThan(5);
    // The mirrored images load from the demo server.
    const image = await fetch(feed.feed.posts[0]!.thumbnailUrl!);
    expect(image.status).toBe(200);
    expect(image.headers.get('content-type')).toMatch(/^image\//);

    const widget = await fetch(field('widget preview')!);
    expect(widget.status).toBe(200);
    expect(await widget.text()).toContain(`data-feedmirror-feed="${feedUrl}"`);

    const preview = await fetch(field('feed preview')!, { redirect: 'manual' });
    expect([200, 302, 303]).toContain(preview.status); // behind the dashboard login

    demo.child.kill('SIGTERM');
    expect(await demo.exited).toBe(0);
  }, 150_000);
});
