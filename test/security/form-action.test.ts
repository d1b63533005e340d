import { existsSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { runSyncNow } from '../../src/feeds/sync.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { setAccountStatus } from '../../src/store/accounts.ts';
import { saveRemovalHold } from '../../src/store/holds.ts';
import { createInvitation } from '../../src/store/invitations.ts';
import { createReconnectLink } from '../../src/store/owners.ts';
import { DAY } from '../../src/util/clock.ts';
import { recordCaptured } from '../support/capture.ts';
import { memoryIO } from '../support/memory-io.ts';
import { DASHBOARD_USER, nonLoopbackAddress, startServeForTest, type ServedForTest, stopServe } from './support.ts';
import { freePort } from '../support/closed-port.ts';
import { CHROMIUM, launchChromium } from '../support/chromium.ts';
import { simulatorEnv } from '../support/worker-env.ts';

/**
 * Every form `feedmirror serve` shows, against the redirects its POST answers with. Chromium
 * checks a page's CSP form-action against the form's target AND every redirect that follows it,
 * and blocks the navigation at the first one the policy does not allow (the owner's Reconnect
 * button, whose POST answers 303 to the platform's login on another origin, did nothing in
 * Chromium while the page said form-action 'self'). Here each page is opened in Chromium (the
 * browser reads its forms: action, method, the fields and the submit button it would send), each
 * form is posted as the browser would (its cookies, its Origin), and the whole redirect chain is
 * checked against that page's own form-action. Every form is reached: the owner's status page,
 * the dashboard's login, and every page the dashboard links to, with an account that has an
 * owner, a held removal, a widget and a webhook endpoint, so that each kind of form is on show.
 */
let sim: Simulator;
let s: ServedForTest;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let base = '';
let statusPage = '';

const cli = async (args: string[]) => {
  const io = memoryIO({ env: s.env });
  const code = await main(args, io);
  expect(code, io.err()).toBe(0);
  return io.out();
};

/** The sources of a policy's form-action ('self' made concrete); null when it has none. */
export function formActionSources(csp: string | undefined): string[] | null {
  const directive = (csp ?? '')
    .split(';')
    .map((d) => d.trim().split(/\s+/))
    .find(([name]) => name?.toLowerCase() === 'form-action');
  return directive ? directive.slice(1) : null;
}

/**
 * Whether `target` matches one of the sources (CSP3 source matching for what a policy of ours can
 * hold: 'none', 'self', a scheme, an origin; a path is ignored, as it is after a redirect).
 */
export function allows(sources: string[], target: URL, self: string): boolean {
  return sources.some((src) => {
    if (src === "'none'") return false;
    if (src === "'self'") return target.origin === self;
    if (/^[a-z][a-z0-9+.-]*:$/i.test(src)) return target.protocol === src.toLowerCase();
    const m = /^(?:([a-z][a-z0-9+.-]*):\/\/)?([^/:]+)(?::(\d+|\*))?/i.exec(src);
    if (!m) return false;
    const [, scheme, host, port] = m;
    if (scheme && `${scheme.toLowerCase()}:` !== target.protocol) return false;
    const hostOk = host!.startsWith('*.')
      ? target.hostname.endsWith(host!.slice(1).toLowerCase())
      : target.hostname === host!.toLowerCase();
    const defaultPort = target.protocol === 'https:' ? '443' : '80';
    const portOk = port === '*' || (port ?? defaultPort) === (target.port || defaultPort);
    return hostOk && portOk;
  });
}

interface FormSeen {
  page: string;
  sources: string[];
  action: string;
  method: string;
  fields: Array<[string, string]>;
}

/** The forms of the page at `url` as Chromium reads them, with the page's form-action. */
async function formsOf(url: string, prepare?: (p: Page) => Promise<void>): Promise<FormSeen[]> {
  const res = await page.goto(url);
  expect(res?.status(), url).toBe(200);
  await prepare?.(page);
  const forms = await page.evaluate(() =>
    [...document.forms].map((f) => {
      const submitter = f.querySelector<HTMLElement>('button:not([type]), button[type=submit], input[type=submit]');
      const data = new FormData(f, submitter);
      return {
        action: f.action,
        method: f.method,
        fields: [...data.entries()].map(([k, v]) => [k, typeof v === 'string' ? v : v.name] as [string, string]),
      };
    }),
  );
  const sources = formActionSources(res!.headers()['content-security-policy']);
  if (forms.length > 0) expect(sources, `${url} has forms but its CSP names no form-action`).not.toBeNull();
  return forms.map((f) => ({ ...f, page: url, sources: sources ?? [] }));
}

/** Same-origin dashboard pages linked from the page open in `page` (not bull-board's app, not the platform). */
async function dashboardLinks(): Promise<string[]> {
  const hrefs = await page.evaluate(() =>
    [...document.querySelectorAll('a[href]')].map((a) => (a as HTMLAnchorElement).href),
  );
  return hrefs
    .map((h) => new URL(h))
    .filter(
      (u) =>
        u.origin === base &&
        u.pathname.startsWith('/dashboard') &&
        !u.pathname.startsWith('/dashboard/queues') &&
        u.pathname !== '/dashboard/connect' && // a link (GET), not a form: it redirects to the platform
        !/\.(js|css)$/.test(u.pathname),
    )
    .map((u) => `${u.origin}${u.pathname}${u.search}`);
}

/**
 * Post a form as the browser would (its cookies, its Origin), then follow the redirects with
 * GETs as the browser would: every hop's address, each checked against the page's form-action.
 */
async function submit(form: FormSeen): Promise<{ status: number; hops: string[]; refused: string[] }> {
  const hops: string[] = [];
  const refused: string[] = [];
  const check = (to: URL) => {
    hops.push(to.href);
    if (!allows(form.sources, to, base)) refused.push(`${to.href} (form-action ${form.sources.join(' ')})`);
  };
  check(new URL(form.action));
  let res = await context.request.fetch(form.action, {
    method: form.method.toUpperCase(),
    form: Object.fromEntries(form.fields),
    headers: { origin: base },
    maxRedirects: 0,
  });
  for (let i = 0; i < 5 && res.status() >= 300 && res.status() < 400; i++) {
    const to = new URL(res.headers().location!, res.url());
    check(to);
    if (to.origin !== base) break; // another site's page: the browser is gone from ours
    res = await context.request.get(to.href, { maxRedirects: 0 });
  }
  recordCaptured('http', await res.text().catch(() => ''));
  return { status: res.status(), hops, refused };
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (this test never downloads a browser)`);
  sim = await startSimulator({ start: Date.now() });
  const port = await freePort('0.0.0.0');
  base = `http://${nonLoopbackAddress()}:${port}`;
  s = await startServeForTest('form-action', {
    PORT: String(port),
    PUBLIC_URL: base,
    MEDIA_PUBLIC_URL: `${base}/`,
    MEDIA_VARIANT_WIDTHS: '160',
    ...simulatorEnv(sim),
    OWNER_ALERTS: 'on',
    WEBHOOK_ALLOW_PRIVATE: 'true',
  });
  // An account connected through an invitation that carries its owner, synced and published.
  const acc = sim.createAccount({ username: 'forms.bakery', posts: 3 });
  sim.autoApprove = acc.id;
  const inv = await createInvitation(s.ctx.db, s.ctx.clock.now(), DAY, 'cli', {
    email: 'owner@forms.example',
    name: 'Owner',
    language: null,
  });
  const start = await fetch(`${base}/connect?invite=${inv.token}`, { redirect: 'manual' });
  const back = await fetch(start.headers.get('location')!, { redirect: 'manual' });
  expect((await fetch(back.headers.get('location')!)).status).toBe(200);
  const synced = await runSyncNow(await s.ctx.feedDeps(), acc.id);
  expect(synced.publish?.outcome).toBe('written');
  // Everything that shows a form of its own: a held removal, a widget, a webhook endpoint, the owner's link.
  await saveRemovalHold(
    s.ctx.db,
    acc.id,
    { since: new Date(), removing: ['1'], listedPosts: 1, publishedPosts: 3 },
    new Date(),
  );
  await cli(['widgets', 'add', '--name', 'Shop', '--account', acc.id]);
  await cli(['webhooks', 'add', 'http://127.0.0.1:9/hooks']);
  const link = await createReconnectLink(s.ctx.db, {
    accountId: acc.id,
    reason: 'reauth',
    now: s.ctx.clock.now(),
    ttlMs: 14 * DAY,
  });
  statusPage = `${base}/reconnect/${link.token}`;
  // An account waiting for its owner: its page offers a new reconnect link (emailed, or to copy).
  const revoked = sim.createAccount({ username: 'forms.florist', posts: 1 });
  sim.autoApprove = revoked.id;
  const inv2 = await createInvitation(s.ctx.db, s.ctx.clock.now(), DAY, 'cli', {
    email: 'florist@forms.example',
    name: 'Florist',
    language: null,
  });
  const start2 = await fetch(`${base}/connect?invite=${inv2.token}`, { redirect: 'manual' });
  const back2 = await fetch(start2.headers.get('location')!, { redirect: 'manual' });
  expect((await fetch(back2.headers.get('location')!)).status).toBe(200);
  await setAccountStatus(s.ctx.db, revoked.id, 'reauth_required', 'the platform refused the token', {
    at: s.ctx.clock.now(),
    reasonKind: 'token_invalid',
  });

  browser = await launchChromium();
  context = await browser.newContext();
  context.setDefaultTimeout(10_000);
  page = await context.newPage();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await stopServe(s);
  await sim?.close();
});

describe("every form's redirects are allowed by its page's form-action", () => {
  it('the matcher itself: an origin, a scheme and self; another origin is refused', () => {
    const self = 'http://192.0.2.1:8080';
    expect(allows(["'self'"], new URL(`${self}/dashboard`), self)).toBe(true);
    expect(allows(["'self'"], new URL('http://127.0.0.1:9000/oauth/authorize?x=1'), self)).toBe(false);
    expect(allows(["'self'", 'http://127.0.0.1:9000'], new URL('http://127.0.0.1:9000/oauth/authorize'), self)).toBe(
      true,
    );
    expect(allows(["'self'", 'https://www.instagram.com'], new URL('https://www.instagram.com/oauth/a'), self)).toBe(
      true,
    );
    expect(allows(['https://www.instagram.com'], new URL('https://instagram.com/oauth/a'), self)).toBe(false);
    expect(allows(['https:'], new URL('https://x.example/'), self)).toBe(true);
    expect(allows(["'none'"], new URL(`${self}/`), self)).toBe(false);
    expect(formActionSources("default-src 'none'; form-action 'self' http://a.example:1; base-uri 'none'")).toEqual([
      "'self'",
      'http://a.example:1',
    ]);
    expect(formActionSources("default-src 'none'")).toBeNull();
  });

  it("R-OWN-15: the owner's status page: Reconnect answers 303 to the platform's login, which its form-action names; nothing else is added", async () => {
    const [form, ...more] = await formsOf(statusPage);
    expect(more).toEqual([]);
    const done = await submit(form!);
    expect(done.refused).toEqual([]);
    const login = new URL(done.hops.at(-1)!);
    expect(login.origin).toBe(new URL(sim.authorizeUrl).origin);
    expect(login.pathname).toBe('/oauth/authorize');
    expect(form!.sources).toEqual(["'self'", new URL(sim.authorizeUrl).origin]);
    // Every other page keeps form-action 'self' alone, the owner's other pages included.
    for (const url of [`${base}/reconnect/${'A'.repeat(43)}`, `${base}/connect`, `${base}/dashboard/login`]) {
      const res = await fetch(url);
      expect(formActionSources(res.headers.get('content-security-policy') ?? ''), url).toEqual(["'self'"]);
    }
  });

  it('the dashboard: the login form, then every form of every page it links to (logout last)', async () => {
    const forms: FormSeen[] = [];
    // The login page, filled in as the operator does.
    const logIn = async () => {
      const login = await formsOf(`${base}/dashboard/login`, async (p) => {
        await p.fill('#user', DASHBOARD_USER);
        await p.fill('#password', s.env.DASHBOARD_PASSWORD!);
      });
      expect(login).toHaveLength(1);
      const loggedIn = await submit(login[0]!);
      expect(loggedIn.refused).toEqual([]);
      expect(loggedIn.hops.slice(1)).toEqual([`${base}/dashboard`]); // 303 to the dashboard, then its page
      expect(loggedIn.status).toBe(200);
    };
    await logIn();

    // Every dashboard page reachable by a link, breadth first.
    const seen = new Set<string>();
    const queue = [`${base}/dashboard`];
    while (queue.length > 0) {
      const url = queue.shift()!;
      if (seen.has(url)) continue;
      seen.add(url);
      forms.push(...(await formsOf(url)));
      for (const next of await dashboardLinks()) if (!seen.has(next)) queue.push(next);
    }
    // One form per action (a button repeated on several pages or rows posts to the same place).
    const byAction = new Map<string, FormSeen>();
    for (const f of forms) if (!byAction.has(f.action)) byAction.set(f.action, f);
    const last = (f: FormSeen) => (/\/logout(-everywhere)?$/.test(f.action) ? 2 : /\/remove$/.test(f.action) ? 1 : 0);
    const ordered = [...byAction.values()].sort((a, b) => last(a) - last(b));
    const report: string[] = [];
    for (let f of ordered) {
      if (/\/logout-everywhere$/.test(f.action)) {
        // The plain logout before it ended the session: log in again, and take the form anew (its token).
        await logIn();
        f = (await formsOf(`${base}/dashboard`)).find((g) => g.action === f.action)!;
      }
      const done = await submit(f);
      report.push(
        `${new URL(f.action).pathname} -> ${done.status} via ${done.hops.slice(1).join(' -> ') || '(no redirect)'}`,
      );
      expect(done.refused, `${f.action} from ${f.page}`).toEqual([]);
      expect(done.status, `${f.action}: ${report.at(-1)}`).toBe(200);
    }
    const actions = ordered.map((f) =>
      new URL(f.action).pathname.replace(/\/(17\d+|w_[^/]+|wh_[^/]+)(?=\/|$)/g, '/:id'),
    );
    // The test reaches every kind of form; a page that stops showing one fails here, not silently.
    expect(new Set(actions), report.join('\n')).toEqual(
      new Set([
        '/dashboard/accounts/:id/sync',
        '/dashboard/accounts/:id/refresh',
        '/dashboard/accounts/:id/confirm-removal',
        '/dashboard/accounts/:id/owner',
        '/dashboard/accounts/:id/owner/clear',
        '/dashboard/accounts/:id/reconnect-link',
        '/dashboard/accounts/:id/remove',
        '/dashboard/invitations',
        '/dashboard/widgets',
        '/dashboard/widgets/:id',
        '/dashboard/widgets/:id/hide',
        '/dashboard/widgets/:id/feed-hide',
        '/dashboard/widgets/:id/remove',
        '/dashboard/webhooks',
        '/dashboard/webhooks/:id/rotate',
        '/dashboard/webhooks/:id/remove',
        '/dashboard/logout',
        '/dashboard/logout-everywhere',
      ]),
    );
  }, 120_000);
});
