import { afterAll, describe, expect, inject, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import pg from 'pg';
import { Redis } from 'ioredis';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { runFeedmirror, spawnFeedmirror, type Spawned } from '../support/processes.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { until } from '../support/wait.ts';
import { validateFeed } from '../../src/schema/validate.ts';
import { chromium } from 'playwright-core';
import { cssRgb, measureDensity } from '../support/density.ts';
import { closestPhoto } from '../support/photo-match.ts';

/**
 * `npm run demo` as a newcomer runs it: on embedded defaults it connects a demo account,
 * syncs, mirrors and publishes, and every address it prints opens; its pictures are photographs.
 */
describe('the demo (npm run demo)', () => {
  let demo: Spawned;
  const cwd = mkdtempSync(join(tmpdir(), 'fm-demo-'));

  afterAll(async () => {
    if (demo && demo.child.exitCode === null) {
      demo.child.kill('SIGKILL');
      await demo.exited;
    }
    // The demo's database and keys are named after its folder (a fresh one per run here): drop them.
    const envFile = join(cwd, 'data', 'demo', 'demo.env');
    if (!existsSync(envFile)) return;
    const vars = Object.fromEntries(
      readFileSync(envFile, 'utf8')
        .split('\n')
        .filter((l) => /^[A-Z_]+=/.test(l))
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    const admin = new URL(vars.DATABASE_URL!);
    const name = admin.pathname.slice(1);
    admin.pathname = '/postgres';
    const c = new pg.Client({ connectionString: admin.toString() });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    await c.end();
    const redis = new Redis(inject('redisUrl'));
    for await (const keys of redis.scanStream({ match: `${vars.REDIS_PREFIX}:*`, count: 500 }))
      if ((keys as string[]).length) await redis.del(...(keys as string[]));
    redis.disconnect();
  });

  it('prints a dashboard, its login, the feed path and the widget preview, and each of them opens', async () => {
    demo = spawnFeedmirror(
      ['demo-run', '--port', '0', '--posts', '12'],
      { DATABASE_URL: inject('databaseUrl'), REDIS_URL: inject('redisUrl'), LOG_LEVEL: 'warn' },
      { cwd },
    );
    await until(
      () => demo.output().includes('press Ctrl-C to stop') || demo.child.exitCode !== null,
      'the demo to publish its feed',
      120_000,
    );
    const out = demo.output();
    expect(demo.child.exitCode, out).toBeNull();
    // What the docs show it printing is what it prints: getting-started.md every line (by its
    // label, in order), the README some of them.
    const labelsOf = (lines: string[]) => lines.map((l) => l.slice(0, l.indexOf(':')));
    const printed = out.split('\n');
    const first = printed.findIndex((l) => l.startsWith('dashboard:'));
    const last = printed.findIndex((l) => l.startsWith('drive the platform:'));
    expect(first, out).toBeGreaterThanOrEqual(0);
    expect(last, out).toBeGreaterThan(first);
    const printedLabels = labelsOf(printed.slice(first, last + 1));
    const block = (file: string, after: string) => {
      const text = readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');
      const at = text.indexOf(after);
      expect(at, `${file} no longer says: ${after}`).toBeGreaterThanOrEqual(0);
      return /```\n([\s\S]*?)```/.exec(text.slice(at))![1]!.trim().split('\n');
    };
    expect(labelsOf(block('docs/getting-started.md', 'the dashboard, and prints:'))).toEqual(printedLabels);
    const inReadme = labelsOf(block('README.md', 'prints where everything is:'));
    expect(inReadme.filter((l) => printedLabels.includes(l))).toEqual(inReadme);
    expect(inReadme).toEqual(printedLabels.filter((l) => inReadme.includes(l)));
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
    // A photograph (one of the bundled ones, src/simulator/photos/), not a generated scene.
    const closest = await closestPhoto(Buffer.from(await image.arrayBuffer()));
    expect(closest.diff, closest.file).toBeLessThan(8);

    // The demo's widget, made as `feedmirror widgets add` makes it: its document shows the feed's
    // posts, and the preview page embeds it by id.
    const widgetId = field('widget')!;
    expect(widgetId).toMatch(/^w_[a-z2-7]{10}$/);
    const documentUrl = field('widget document')!;
    expect(documentUrl).toBe(feedUrl.replace(/\/feeds\/\d+\.json$/, `/widgets/${widgetId}.json`));
    const widgetDoc = (await (await fetch(documentUrl)).json()) as { id: string; posts: Array<{ id: string }> };
    expect(widgetDoc.id).toBe(widgetId);
    expect(widgetDoc.posts.map((p) => p.id)).toEqual(feed.feed.posts.map((p) => p.id));
    const widget = await fetch(field('widget preview')!);
    expect(widget.status).toBe(200);
    const page = await widget.text();
    expect(page).toContain(`<div data-feedmirror-widget="${widgetId}"></div>`);
    expect(page).not.toContain('data-feedmirror-feed');

    const preview = await fetch(field('feed preview')!, { redirect: 'manual' });
    expect([200, 302, 303]).toContain(preview.status); // behind the dashboard login

    // the widget preview in headless Chromium picks fitting sizes and paints placeholders.
    const browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
    });
    try {
      for (const [width, dpr] of [
        [360, 2],
        [1280, 1],
      ] as const) {
        const report = await measureDensity(browser, field('widget preview')!, { width, height: 3200, dpr });
        expect(report.ratios.length).toBeGreaterThanOrEqual(6);
        expect(
          report.median,
          `${width}px DPR ${dpr}: ${report.ratios.map((r) => r.toFixed(2)).join(' ')}`,
        ).toBeLessThanOrEqual(1.6);
        for (const p of report.placeholders) {
          expect(p.complete).toBe(false);
          expect(p.painted).toBe(cssRgb(p.expected!));
        }
        console.log(
          `demo widget preview at ${width}px DPR ${dpr}: median ${report.median.toFixed(2)}x over ${report.ratios.length} images`,
        );
      }
    } finally {
      await browser.close();
    }

    // GET / leads to the dashboard; the login page is styled by the dashboard's stylesheet file.
    const root = await fetch(dashboard!.replace(/\/dashboard$/, '/'), { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/dashboard');
    const loginHtml = await (await fetch(dashboard!)).text();
    expect(loginHtml).toContain('<link rel="stylesheet" href="/dashboard/assets/dashboard.css">');
    expect(loginHtml).not.toMatch(/<style|<script|style="/);
    const css = await fetch(dashboard!.replace(/\/dashboard$/, '/dashboard/assets/dashboard.css'));
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
    expect(await css.text()).toMatch(/body\.login main\s*\{/);

    // data/demo/demo.env holds every setting, loads in bash, and points the CLI at the running demo.
    const envFile = field('demo settings')!;
    expect(envFile).toBe(join(cwd, 'data', 'demo', 'demo.env'));
    expect(out).toMatch(/^try the CLI: +set -a; \. data\/demo\/demo\.env; set \+a; npx feedmirror accounts list$/m);
    const sh = spawnSync('bash', ['--norc', '--noprofile', '-c', 'set -a; . data/demo/demo.env; set +a; env -0'], {
      cwd,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(sh.stderr).toBe('');
    const demoEnv = Object.fromEntries(
      sh.stdout
        .split('\0')
        .filter((e) => e.includes('='))
        .map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
    );
    registerSecretForAudit(demoEnv.TOKEN_ENCRYPTION_KEY!);
    // (Not the dashboard password: the demo prints it on purpose, next to the dashboard's address.)
    // Its own database and key prefix: never the tests' nor another checkout's.
    expect(new URL(demoEnv.DATABASE_URL!).pathname).toMatch(/^\/feedmirror_demo_[0-9a-f]{8}$/);
    expect(demoEnv.REDIS_PREFIX).toMatch(/^feedmirror-demo-[0-9a-f]{8}$/);
    // Owners get their alerts (the tour's reconnect through the owner's email), and the tour's
    // commands find the widget by DEMO_WIDGET_ID.
    expect(demoEnv.OWNER_ALERTS).toBe('on');
    expect(demoEnv.DEMO_WIDGET_ID).toBe(widgetId);
    const list = await runFeedmirror(['accounts', 'list', '--json'], demoEnv, { cwd });
    expect(list.code, list.stderr).toBe(0);
    const accounts = JSON.parse(list.stdout) as Array<{ id: string; username: string }>;
    expect(accounts.map((a) => a.username)).toEqual(['demo.bakery']);
    // Its invitation carried the owner's address: the account has its owner.
    const shown = await runFeedmirror(['accounts', 'show', accounts[0]!.id, '--json'], demoEnv, { cwd });
    expect(JSON.parse(shown.stdout).owner).toMatchObject({ email: 'owner@demo-bakery.example', alerts: true });
    // The key in demo.env reads the stored token: a refresh is attempted (not due yet: exit 1, said so).
    const refresh = await runFeedmirror(['refresh', accounts[0]!.id, '--json'], demoEnv, { cwd });
    expect(JSON.parse(refresh.stdout).outcome).toBe('not-due');
    const sync = await runFeedmirror(['sync', accounts[0]!.id, '--wait'], demoEnv, { cwd });
    expect(sync.code, sync.stderr).toBe(0);

    // `feedmirror verify` on the demo's settings: all well; one copy deleted from the demo's
    // storage folder: named, exit 1; `verify --repair`: copied again, exit 0, the image loads.
    const verified = await runFeedmirror(['verify'], demoEnv, { cwd });
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    const published = JSON.parse(readFileSync(feedPath, 'utf8')) as { posts: Array<{ thumbnailUrl?: string }> };
    const copyUrl = published.posts.find((p) => p.thumbnailUrl)!.thumbnailUrl!;
    const copyKey = copyUrl.slice(demoEnv.MEDIA_PUBLIC_URL!.length);
    rmSync(join(demoEnv.STORAGE_URL!, copyKey));
    const broken = await runFeedmirror(['verify'], demoEnv, { cwd });
    expect(broken.code, broken.stdout + broken.stderr).toBe(1);
    expect(broken.stdout).toMatch(new RegExp(`object-missing .*${copyKey}`));
    // The repair downloads the copy again and makes its variants: on a loaded machine that took
    // longer than runFeedmirror's default 30 s, and the killed command failed the test.
    const repaired = await runFeedmirror(['verify', '--repair'], demoEnv, { cwd, timeoutMs: 120_000 });
    expect(repaired.code, repaired.stdout + repaired.stderr).toBe(0);
    expect((await fetch(copyUrl)).status).toBe(200);

    // The dashboard says what "Refresh now" did: here, not due yet (and until when).
    {
      const base = dashboard!.replace(/\/dashboard$/, '');
      const jar = new Map<string, string>();
      const keep = (r: Response) =>
        r.headers.getSetCookie().forEach((c) => {
          const [kv] = c.split(';');
          const i = kv!.indexOf('=');
          jar.set(kv!.slice(0, i), kv!.slice(i + 1));
        });
      const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
      const form = await fetch(`${base}/dashboard/login`);
      keep(form);
      const loginCsrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
      const logged = await fetch(`${base}/dashboard/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookie(), origin: base },
        body: new URLSearchParams({ user: 'demo', password: password!, _csrf: loginCsrf, next: '/dashboard' }),
      });
      keep(logged);
      const page = await fetch(`${base}/dashboard`, { headers: { cookie: cookie() } });
      keep(page);
      const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1]!;
      const action = await fetch(`${base}/dashboard/accounts/${accounts[0]!.id}/refresh`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookie(), origin: base },
        body: new URLSearchParams({ _csrf: csrf }),
      });
      expect(action.status).toBe(303);
      keep(action);
      const after = await (await fetch(`${base}/dashboard`, { headers: { cookie: cookie() } })).text();
      // bull-board's page needs nothing from the internet (its web-font link is dropped).
      const board = await fetch(`${base}/dashboard/queues`, { headers: { cookie: cookie() } });
      expect(board.status).toBe(200);
      const boardHtml = await board.text();
      expect(boardHtml).toMatch(/<div id="root">|static\//);
      expect(boardHtml).not.toMatch(/https?:\/\/(?!127\.0\.0\.1)[a-z]/i);
      expect(after).toMatch(
        /class="flash info" role="status">@demo\.bakery: not refreshed: the platform refreshes tokens only once they are 24 hours old; possible from \d{4}-/,
      );
    }

    // A second connect goes through the platform's consent page (only the demo's own was automatic).
    const invite = await runFeedmirror(['accounts', 'invite', '--json'], demoEnv, { cwd });
    expect(invite.code, invite.stderr).toBe(0);
    const toLogin = await fetch(JSON.parse(invite.stdout).url, { redirect: 'manual' });
    const consent = await fetch(toLogin.headers.get('location')!, { redirect: 'manual' });
    expect(consent.status).toBe(200);
    expect(await consent.text()).toMatch(/Allow access to your account/);

    demo.child.kill('SIGTERM');
    expect(await demo.exited).toBe(0);
  }, 240_000);
});
