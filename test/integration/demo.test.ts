import { afterAll, describe, expect, inject, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnFeedmirror, type Spawned } from '../support/processes.ts';
import { until } from '../support/wait.ts';
import { validateFeed } from '../../src/schema/validate.ts';
import { chromium } from 'playwright-core';
import { cssRgb, measureDensity } from '../support/density.ts';

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

    // Issue 12: the widget preview in headless Chromium picks fitting sizes and paints placeholders.
    const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'] });
    try {
      for (const [width, dpr] of [[360, 2], [1280, 1]] as const) {
        const report = await measureDensity(browser, field('widget preview')!, { width, height: 3200, dpr });
        expect(report.ratios.length).toBeGreaterThanOrEqual(6);
        expect(report.median, `${width}px DPR ${dpr}: ${report.ratios.map((r) => r.toFixed(2)).join(' ')}`).toBeLessThanOrEqual(1.6);
        for (const p of report.placeholders) {
          expect(p.complete).toBe(false);
          expect(p.painted).toBe(cssRgb(p.expected!));
        }
        console.log(`demo widget preview at ${width}px DPR ${dpr}: median ${report.median.toFixed(2)}x over ${report.ratios.length} images`);
      }
    } finally {
      await browser.close();
    }

    demo.child.kill('SIGTERM');
    expect(await demo.exited).toBe(0);
  }, 150_000);
});
