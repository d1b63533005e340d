import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DASHBOARD_USER,
  loginForm,
  postLogin,
  sessionCookie,
  startServeForTest,
  type ServedForTest,
  stopServe,
} from './support.ts';
import { recordCaptured } from '../support/capture.ts';

/**
 * Against `feedmirror serve` built by its composition root, listening on
 * 0.0.0.0 and reached through the machine's non-loopback address with TRUST_PROXY=1 (the test
 * plays the one proxy in front and appends X-Forwarded-For as a proxy does). Two replicas share
 * one Postgres and one Redis prefix, as two Kubernetes pods do.
 *
 * On the main branch before this issue: trust proxy was "loopback", so every client behind a
 * non-loopback proxy had the proxy's address and shared one throttle (the operator got 429
 * after an attacker's 10 wrong passwords); the throttle lived in one process; the session was a
 * signed cookie that logout did not end.
 */
let a: ServedForTest;
let b: ServedForTest;
let password = '';

beforeAll(async () => {
  a = await startServeForTest('sec-login', { TRUST_PROXY: '1' });
  password = a.env.DASHBOARD_PASSWORD!;
  b = await startServeForTest(
    'sec-login-b',
    { TRUST_PROXY: '1', DASHBOARD_PASSWORD: password, TOKEN_ENCRYPTION_KEY: a.env.TOKEN_ENCRYPTION_KEY! },
    { databaseUrl: a.env.DATABASE_URL!, redisPrefix: a.env.REDIS_PREFIX! },
  );
}, 60_000);

afterAll(async () => {
  await b?.close();
  await stopServe(a);
});

describe('login throttle behind a proxy (TRUST_PROXY=1)', () => {
  it('after 12 wrong passwords from one forwarded address, the correct password from another logs in and the attacker gets 429; failures are logged with the address', async () => {
    const attacker = '203.0.113.66';
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await postLogin(a.url, attacker, DASHBOARD_USER, `wrong-${i}`)).status);
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
    expect(statuses.slice(10)).toEqual([429, 429]);

    // The operator, from another address, with the right password: in.
    const operator = await postLogin(a.url, '198.51.100.7', DASHBOARD_USER, password);
    expect(operator.status).toBe(303);
    expect(operator.headers.get('location')).toBe('/dashboard');
    sessionCookie(operator);

    // The attacker, even with the right password now, waits; Retry-After says how long.
    const blocked = await postLogin(a.url, attacker, DASHBOARD_USER, password);
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(60);

    // Each failure was logged with the client's (forwarded) address, at warn, never the password.
    const refused = a.logs.filter((l) => l.msg.startsWith('dashboard login refused'));
    expect(refused).toHaveLength(10);
    expect(new Set(refused.map((l) => l.client))).toEqual(new Set([attacker]));
    expect(refused.every((l) => l.level === 40)).toBe(true);
    expect(JSON.stringify(a.logs)).not.toContain('wrong-3');
  });

  it('the throttle is shared by replicas: the attacker is refused by the other replica too', async () => {
    const res = await postLogin(b.url, '203.0.113.66', DASHBOARD_USER, 'wrong-again');
    expect(res.status).toBe(429);
  });

  it('changing X-Forwarded-For does not walk around it: the address the proxy appended counts', async () => {
    const real = '203.0.113.77';
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++)
      statuses.push((await postLogin(a.url, `10.9.${i}.1, ${real}`, DASHBOARD_USER, `guess-${i}`)).status);
    expect(statuses.filter((s) => s === 429)).toHaveLength(2);
  });

  it('the login form keeps its fields: user, password, _csrf (and next)', async () => {
    const { html } = await loginForm(a.url, '198.51.100.8');
    const names = [...html.matchAll(/<input[^>]*name="([^"]+)"/g)].map((m) => m[1]).sort();
    expect(names).toEqual(['_csrf', 'next', 'password', 'user']);
  });
});

describe('server-side sessions', () => {
  const get = (base: string, path: string, cookie: string, accept = 'text/html') =>
    fetch(`${base}${path}`, { redirect: 'manual', headers: { cookie, accept } });

  async function logIn(base: string, client: string): Promise<string> {
    const res = await postLogin(base, client, DASHBOARD_USER, password);
    expect(res.status).toBe(303);
    return sessionCookie(res);
  }

  async function csrfFor(base: string, cookie: string): Promise<string> {
    const html = await (await get(base, '/dashboard', cookie)).text();
    recordCaptured('http', html);
    return /name="_csrf" value="([^"]+)"/.exec(html)![1]!;
  }

  async function post(base: string, path: string, cookie: string, csrf: string): Promise<Response> {
    return fetch(`${base}${path}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, origin: base, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf }),
    });
  }

  it("a cookie saved before logout answers 401 after it, on the dashboard and on bull-board's API, on every replica", async () => {
    const saved = await logIn(a.url, '198.51.100.20');
    expect((await get(a.url, '/dashboard', saved)).status).toBe(200);
    expect((await get(a.url, '/dashboard/queues/api/queues', saved, 'application/json')).status).toBe(200);
    expect((await get(b.url, '/dashboard', saved)).status).toBe(200); // the other replica knows it

    const out = await post(a.url, '/dashboard/logout', saved, await csrfFor(a.url, saved));
    expect(out.status).toBe(303);
    expect(out.headers.getSetCookie().some((c) => /^fm_session=;.*Max-Age=0/.test(c))).toBe(true);

    for (const base of [a.url, b.url]) {
      expect((await get(base, '/dashboard', saved, 'application/json')).status).toBe(401);
      expect((await get(base, '/dashboard/queues/api/queues', saved, 'application/json')).status).toBe(401);
      const page = await get(base, '/dashboard', saved);
      expect(page.status).toBe(303); // a browser is sent to the login form
      expect(page.headers.get('location')).toMatch(/^\/dashboard\/login/);
    }
  });

  it('"log out everywhere" ends every session of the user, in every browser', async () => {
    const one = await logIn(a.url, '198.51.100.21');
    const two = await logIn(b.url, '198.51.100.22');
    expect((await get(b.url, '/dashboard', one)).status).toBe(200);
    const res = await post(b.url, '/dashboard/logout-everywhere', two, await csrfFor(b.url, two));
    expect(res.status).toBe(303);
    for (const c of [one, two])
      expect((await get(a.url, '/dashboard/queues/api/queues', c, 'application/json')).status).toBe(401);
  });

  it('a session cookie is an opaque random id: forged and tampered values never pass', async () => {
    const good = await logIn(a.url, '198.51.100.23');
    const value = good.slice('fm_session='.length);
    const forged = [
      `${value.slice(0, -2)}AA`,
      Buffer.from(JSON.stringify({ sid: 'a'.repeat(24), u: DASHBOARD_USER, exp: 4e12 })).toString('base64url'),
      `${Buffer.from(JSON.stringify({ sid: 'a'.repeat(24), u: DASHBOARD_USER, exp: 4e12 })).toString('base64url')}.${'A'.repeat(43)}`,
      'x'.repeat(43),
      '',
    ];
    for (const f of forged)
      expect((await get(a.url, '/dashboard/queues/api/queues', `fm_session=${f}`, 'application/json')).status, f).toBe(
        401,
      );
    expect((await get(a.url, '/dashboard/queues/api/queues', good, 'application/json')).status).toBe(200);
  });

  it('sessions live in Redis under a hash of their id (a Redis dump holds no usable cookie), with a TTL', async () => {
    const cookie = await logIn(a.url, '198.51.100.24');
    const id = cookie.slice('fm_session='.length);
    const keys = await a.ctx.redisClient.keys(`${a.env.REDIS_PREFIX}:session:*`);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.some((k) => k.includes(id))).toBe(false);
    for (const k of keys) {
      expect(await a.ctx.redisClient.get(k)).not.toContain(id);
      expect(await a.ctx.redisClient.pttl(k)).toBeGreaterThan(0);
    }
  });
});

describe('Redis out of reach', () => {
  it('a login answers 503 in words (sessions and the throttle live in Redis), never hangs', async () => {
    const down = await startServeForTest('sec-redis-down', { REDIS_URL: 'redis://127.0.0.1:1' });
    try {
      const form = await fetch(`${down.url}/dashboard/login`);
      const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
      const cookie = form.headers
        .getSetCookie()
        .map((c) => c.split(';')[0])
        .join('; ');
      const started = Date.now();
      const res = await fetch(`${down.url}/dashboard/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, origin: down.url },
        body: new URLSearchParams({ user: DASHBOARD_USER, password, _csrf: csrf }),
      });
      const text = await res.text();
      recordCaptured('http', text);
      expect(res.status).toBe(503);
      expect(text).toContain('cannot reach its session store (Redis)');
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(
        (
          await fetch(`${down.url}/dashboard/queues/api/queues`, {
            headers: { cookie: 'fm_session=' + 'a'.repeat(43), accept: 'application/json' },
          })
        ).status,
      ).toBe(503);
    } finally {
      await down.close();
      await down.drop();
    }
  });
});
