import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { createInvitation } from '../../src/store/invitations.ts';
import { main } from '../../src/cli/main.ts';
import { memoryIO } from '../support/memory-io.ts';
import { recordCaptured } from '../support/capture.ts';
import {
  cookiesOf,
  nonLoopbackAddress,
  startServeForTest,
  type ServedForTest,
  stopServe,
  operatorSession,
} from './support.ts';
import { freePort } from '../support/closed-port.ts';
import { platformEnv } from '../support/worker-env.ts';

/**
 * Against `feedmirror serve` on 0.0.0.0 with the simulator as the platform.
 * On main before this issue an anonymous GET /connect started the login (a stranger connected
 * their own account) and wrote a login_states row on every request (2,000 rows/s from one
 * client); /callback showed the platform's error_description on the operator's domain.
 */
let sim: Simulator;
let s: ServedForTest;

const loginStates = async () =>
  Number((await s.ctx.db.query<{ n: string }>('SELECT count(*) AS n FROM login_states')).rows[0]!.n);
const accounts = async () =>
  Number((await s.ctx.db.query<{ n: string }>('SELECT count(*) AS n FROM accounts')).rows[0]!.n);

async function fetchText(url: string, init: RequestInit = {}): Promise<{ res: Response; text: string }> {
  const res = await fetch(url, { redirect: 'manual', ...init });
  const text = await res.text();
  if (url.startsWith(s.url)) recordCaptured('http', text);
  return { res, text };
}

/** Follow /connect?invite=... through the simulator's login to the callback page. */
async function connectWith(url: string, client = '198.51.100.60'): Promise<{ status: number; text: string }> {
  const start = await fetchText(url, { headers: { 'x-forwarded-for': client } });
  if (start.res.status !== 302) return { status: start.res.status, text: start.text };
  const toCallback = await fetch(start.res.headers.get('location')!, { redirect: 'manual' });
  const done = await fetchText(toCallback.headers.get('location')!, { headers: { 'x-forwarded-for': client } });
  return { status: done.res.status, text: done.text };
}

beforeAll(async () => {
  sim = await startSimulator();
  const port = await freePort('0.0.0.0');
  s = await startServeForTest('sec-connect', {
    PORT: String(port),
    PUBLIC_URL: `http://${nonLoopbackAddress()}:${port}`,
    TRUST_PROXY: '1',
    ...platformEnv(sim),
    BRAND_NAME: 'Northwind Studio',
    BRAND_ACCENT_COLOR: '#0f766e',
  });
}, 60_000);

afterAll(async () => {
  await stopServe(s);
  await sim?.close();
});

describe('connecting by invitation', () => {
  it('an anonymous GET /connect is refused with a page that says how to get an invitation, and writes no login state', async () => {
    const before = await loginStates();
    for (let i = 0; i < 50; i++) {
      const { res, text } = await fetchText(`${s.url}/connect`, { headers: { 'x-forwarded-for': '203.0.113.90' } });
      expect(res.status).toBe(403);
      if (i === 0) {
        expect(text).toContain('needs an invitation link from its operator');
        expect(text).toContain('feedmirror accounts invite');
      }
    }
    expect(await loginStates()).toBe(before);
  });

  it('an invitation link works once; an unknown or expired one is refused', async () => {
    const owner = sim.createAccount({ username: 'invited.shop', posts: 1 });
    sim.autoApprove = owner.id;
    const inv = await createInvitation(s.ctx.db, s.ctx.clock.now(), 86_400_000, 'cli');
    const link = `${s.url}/connect?invite=${inv.token}`;
    const first = await connectWith(link);
    expect(first.status, first.text).toBe(200);
    expect(first.text).toContain('@invited.shop is connected');
    // Branded, and it says what happens next and where the feed is.
    expect(first.text).toContain('<title>Account connected · Northwind Studio</title>');
    expect(first.text).toContain('--accent:#0f766e');
    expect(first.text).toContain('What happens next');
    expect(first.text).toContain(`${s.env.PUBLIC_URL}/feeds/${owner.id}.json`);
    expect(await accounts()).toBe(1);

    const again = await connectWith(link);
    expect(again.status).toBe(403);
    expect(again.text).toContain('already used');

    const bogus = await connectWith(`${s.url}/connect?invite=${'A'.repeat(43)}`);
    expect(bogus.status).toBe(403);
    const old = await createInvitation(
      s.ctx.db,
      new Date(s.ctx.clock.now().getTime() - 2 * 86_400_000),
      86_400_000,
      'cli',
    );
    const expired = await connectWith(`${s.url}/connect?invite=${old.token}`);
    expect(expired.status).toBe(403);
    expect(expired.text).toContain('expired');
    expect(await accounts()).toBe(1);
  });

  it('`feedmirror accounts invite --expires 2d --json` prints a link that works once', async () => {
    const io = memoryIO({ env: s.env });
    expect(await main(['accounts', 'invite', '--expires', '2d', '--json'], io)).toBe(0);
    const out = JSON.parse(io.out()) as { url: string; expiresAt: string };
    expect(out.url.startsWith(`${s.env.PUBLIC_URL}/connect?invite=`)).toBe(true);
    expect(Date.parse(out.expiresAt) - Date.now()).toBeGreaterThan(47 * 3_600_000);
    expect(Date.parse(out.expiresAt) - Date.now()).toBeLessThanOrEqual(48 * 3_600_000);
    const owner = sim.createAccount({ username: 'cli.invited', posts: 1 });
    sim.autoApprove = owner.id;
    expect((await connectWith(out.url, '198.51.100.66')).status).toBe(200);
    expect((await connectWith(out.url, '198.51.100.66')).status).toBe(403);

    const bad = memoryIO({ env: s.env });
    expect(await main(['accounts', 'invite', '--expires', 'soon'], bad)).toBe(2);
    expect(bad.err()).toMatch(/--expires.*must be a number and a unit/);
  });

  it('two logins started from one invitation connect one account only', async () => {
    const owner = sim.createAccount({ username: 'twice.shop', posts: 1 });
    sim.autoApprove = owner.id;
    const inv = await createInvitation(s.ctx.db, s.ctx.clock.now(), 86_400_000, 'cli');
    const link = `${s.url}/connect?invite=${inv.token}`;
    // Both start (the invitation is only checked then), both come back: one wins.
    const starts = await Promise.all([
      fetch(link, { redirect: 'manual', headers: { 'x-forwarded-for': '198.51.100.61' } }),
      fetch(link, { redirect: 'manual', headers: { 'x-forwarded-for': '198.51.100.62' } }),
    ]);
    const callbacks = await Promise.all(
      starts.map(async (r) =>
        (await fetch(r.headers.get('location')!, { redirect: 'manual' })).headers.get('location')!,
      ),
    );
    const done = await Promise.all(callbacks.map(async (c) => (await fetchText(c)).res.status));
    expect(done.sort()).toEqual([200, 403]);
  });

  it('a declined login gives the invitation back, and the callback shows only fixed texts (never error_description)', async () => {
    const owner = sim.createAccount({ username: 'declined.shop', posts: 1 });
    sim.autoApprove = owner.id;
    const inv = await createInvitation(s.ctx.db, s.ctx.clock.now(), 86_400_000, 'cli');
    const start = await fetch(`${s.url}/connect?invite=${inv.token}`, {
      redirect: 'manual',
      headers: { 'x-forwarded-for': '198.51.100.63' },
    });
    const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
    const phishing = 'Your account is locked. Call +1 555 0100 to unlock it.';
    const cb = await fetchText(
      `${s.url}/callback?state=${encodeURIComponent(state)}&error=server_error&error_description=${encodeURIComponent(phishing)}`,
    );
    expect(cb.res.status).toBe(403);
    expect(cb.text).toContain('The platform did not complete the login.');
    expect(cb.text).not.toContain('555 0100'); // the phone number (a random app id may hold "555")
    expect(cb.text).not.toContain('locked');
    // Not consumed: the owner can still use the link.
    const ok = await connectWith(`${s.url}/connect?invite=${inv.token}`);
    expect(ok.status, ok.text).toBe(200);
  });

  it('a declined login offers "Try again": a fresh login bound to the same invitation, which is used only when it connects', async () => {
    const owner = sim.createAccount({ username: 'changed.mind', posts: 1 });
    sim.autoApprove = owner.id;
    const inv = await createInvitation(s.ctx.db, s.ctx.clock.now(), 86_400_000, 'cli');
    const start = await fetch(`${s.url}/connect?invite=${inv.token}`, {
      redirect: 'manual',
      headers: { 'x-forwarded-for': '198.51.100.65' },
    });
    const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
    const declined = await fetchText(
      `${s.url}/callback?state=${encodeURIComponent(state)}&error=access_denied&error_reason=user_denied`,
    );
    expect(declined.res.status).toBe(403);
    expect(declined.text).toContain('The login was cancelled or the permission was declined.');
    const href = /<a class="button" href="([^"]+)">Try again<\/a>/.exec(declined.text)?.[1]?.replace(/&amp;/g, '&');
    expect(href, declined.text).toBeDefined();
    // Straight back to the platform's login, with a new state (the old one is spent).
    const retry = new URL(href!);
    expect(`${retry.origin}${retry.pathname}`).toBe(sim.authorizeUrl);
    expect(retry.searchParams.get('state')).not.toBe(state);
    const toCallback = await fetch(href!, { redirect: 'manual' });
    const done = await fetchText(toCallback.headers.get('location')!, {
      headers: { 'x-forwarded-for': '198.51.100.65' },
    });
    expect(done.res.status, done.text).toBe(200);
    expect(done.text).toContain('@changed.mind is connected');
    // The invitation worked once: its own link is now spent.
    expect((await connectWith(`${s.url}/connect?invite=${inv.token}`)).status).toBe(403);
  });

  it('starting a login is rate-limited per client address (10 a minute), other clients unaffected', async () => {
    const inv = await createInvitation(s.ctx.db, s.ctx.clock.now(), 86_400_000, 'cli');
    const link = `${s.url}/connect?invite=${inv.token}`;
    const before = await loginStates();
    const statuses: number[] = [];
    for (let i = 0; i < 15; i++)
      statuses.push((await fetch(link, { redirect: 'manual', headers: { 'x-forwarded-for': '203.0.113.91' } })).status);
    expect(statuses.filter((x) => x === 302)).toHaveLength(10);
    expect(statuses.slice(10)).toEqual(Array(5).fill(429));
    expect(await loginStates()).toBe(before + 10);
    expect((await fetch(link, { redirect: 'manual', headers: { 'x-forwarded-for': '203.0.113.92' } })).status).toBe(
      302,
    );
  });

  it('from the dashboard session, connect works without an invitation; the dashboard makes invitations', async () => {
    const cookie = await operatorSession(s, '198.51.100.64');
    const owner = sim.createAccount({ username: 'operator.own', posts: 1 });
    sim.autoApprove = owner.id;
    const start = await fetch(`${s.url}/dashboard/connect`, { redirect: 'manual', headers: { cookie } });
    expect(start.status).toBe(302);
    expect(start.headers.get('location')!.startsWith(sim.authorizeUrl)).toBe(true);
    const toCallback = await fetch(start.headers.get('location')!, { redirect: 'manual' });
    const done = await fetchText(toCallback.headers.get('location')!);
    expect(done.res.status, done.text).toBe(200);
    expect(done.text).toContain('@operator.own is connected');

    // Without the session: no.
    expect(
      (await fetch(`${s.url}/dashboard/connect`, { redirect: 'manual', headers: { accept: 'application/json' } }))
        .status,
    ).toBe(401);

    // An invitation made in the dashboard (CSRF-protected form) is a working link.
    const page = await fetchText(`${s.url}/dashboard`, { headers: { cookie } });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!;
    const made = await fetchText(`${s.url}/dashboard/invitations`, {
      method: 'POST',
      headers: {
        cookie: [cookie, cookiesOf(page.res)].filter(Boolean).join('; '),
        origin: s.url,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ _csrf: csrf, expires: '1d' }),
    });
    expect(made.res.status).toBe(200);
    const link = /value="(http[^"]+\/connect\?invite=[^"]+)"/.exec(made.text)![1]!.replace(/&amp;/g, '&');
    const other = sim.createAccount({ username: 'from.dashboard', posts: 1 });
    sim.autoApprove = other.id;
    expect((await connectWith(link, '198.51.100.65')).status).toBe(200);
    // Without the form token the dashboard makes none.
    const refused = await fetch(`${s.url}/dashboard/invitations`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, origin: s.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'expires=1d',
    });
    expect(refused.status).toBe(403);
  });
});

describe('CONNECT_OPEN=true restores self-service', () => {
  it('an anonymous /connect starts the login', async () => {
    const port = await freePort('0.0.0.0');
    const open = await startServeForTest('sec-connect-open', {
      PORT: String(port),
      PUBLIC_URL: `http://${nonLoopbackAddress()}:${port}`,
      CONNECT_OPEN: 'true',
      ...platformEnv(sim),
    });
    try {
      const res = await fetch(`${open.url}/connect`, { redirect: 'manual' });
      expect(res.status).toBe(302);
      expect(res.headers.get('location')!.startsWith(sim.authorizeUrl)).toBe(true);
    } finally {
      await open.close();
      await open.drop();
    }
  });
});
