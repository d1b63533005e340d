import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordCaptured } from '../support/capture.ts';
import { freshDatabase, redisForTest } from '../support/services.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';
import {
  DASHBOARD_USER,
  loginForm,
  postLogin,
  sessionCookie,
  startServeForTest,
  type ServeUnderTest,
} from './support.ts';

/**
 * `feedmirror serve` (its composition root, on 0.0.0.0, reached through the non-loopback address,
 * TRUST_PROXY=1 with the test playing the proxy) at the edges a hostile network finds: bodies in
 * other charsets (R-NET-2), the login throttle's grouping of IPv6 addresses (R-NET-3), the
 * /metrics bearer scheme in any case, and PostgreSQL going away under the dashboard (a real
 * outage: its connections go through a TCP proxy the test takes down).
 */
let s: ServeUnderTest;
let db: { url: string; drop: () => Promise<void> };
let pgProxy: TcpProxy;
let password = '';
const METRICS_TOKEN = 'metrics-token-for-the-edges-test';

beforeAll(async () => {
  db = await freshDatabase('sec-edges');
  const u = new URL(db.url);
  pgProxy = await startTcpProxy({ host: u.hostname, port: Number(u.port || 5432) });
  u.port = String(pgProxy.port);
  s = await startServeForTest(
    'sec-edges',
    { TRUST_PROXY: '1', METRICS_TOKEN },
    { databaseUrl: u.toString(), redisPrefix: redisForTest('sec-edges').prefix },
  );
  password = s.env.DASHBOARD_PASSWORD!;
}, 60_000);

afterAll(async () => {
  await s?.close();
  await pgProxy?.close();
  await db?.drop();
});

/** POST the login form with this Content-Type, from this (forwarded) client. */
async function loginWith(
  contentType: string,
  client: string,
  pw = password,
): Promise<{ status: number; text: string }> {
  const form = await loginForm(s.url, client);
  const res = await fetch(`${s.url}/dashboard/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': contentType, cookie: form.cookie, origin: s.url, 'x-forwarded-for': client },
    body: new URLSearchParams({ user: DASHBOARD_USER, password: pw, _csrf: form.csrf }).toString(),
  });
  const text = await res.text();
  recordCaptured('http', text);
  return { status: res.status, text };
}

const FORM = 'application/x-www-form-urlencoded';

describe('R-NET-2 request bodies: UTF-8 or 415', () => {
  const REFUSED = [
    'iso-8859-1',
    'ISO-8859-1',
    '"iso-8859-1"',
    'latin1',
    'l1',
    'iso-8859-15',
    'windows-1252',
    'cp1252',
    'us-ascii',
    'ascii',
    'utf-16',
    'UTF-16LE',
    'utf-16be',
    'utf-32',
    'utf-7',
    'koi8-r',
    'shift_jis',
    'gbk',
    'big5',
    'x-user-defined',
    'utf8', // not the IANA name
    '"utf8"',
    'unicode-1-1-utf-8',
    'utf-8x',
    '',
    '""',
  ];

  it.each(REFUSED)(
    'charset=%s gets 415 before anything reads the form (the right password does not log in)',
    async (label) => {
      const client = '198.51.100.60';
      const res = await loginWith(`${FORM}; charset=${label}`, client);
      expect(res).toEqual({ status: 415, text: 'Unsupported charset: send UTF-8.\n' });
    },
  );

  it('two charset parameters, one of them not UTF-8, get 415 whichever comes first', async () => {
    for (const type of [`${FORM}; charset=utf-8; charset=iso-8859-1`, `${FORM};charset=latin1;charset=utf-8`])
      expect((await loginWith(type, '198.51.100.61')).status, type).toBe(415);
  });

  it('utf-8 in any case, quoted or not, with spaces or none, and no charset at all are read (the right password logs in)', async () => {
    for (const type of [
      FORM,
      `${FORM}; charset=utf-8`,
      `${FORM}; charset=UTF-8`,
      `${FORM};charset=Utf-8`,
      `${FORM}; charset="utf-8"`,
      `${FORM}; CHARSET="UTF-8"`,
    ]) {
      const res = await loginWith(type, '198.51.100.62');
      expect(res.status, type).toBe(303);
    }
  });

  it('the dashboard forms behind the login refuse other charsets too', async () => {
    const cookie = sessionCookie(await postLogin(s.url, '198.51.100.63', DASHBOARD_USER, password));
    const res = await fetch(`${s.url}/dashboard/logout`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        cookie,
        origin: s.url,
        'content-type': `${FORM}; charset=iso-8859-1`,
        'x-forwarded-for': '198.51.100.63',
      },
      body: '_csrf=x',
    });
    expect(res.status).toBe(415);
  });
});

describe('R-NET-3 login throttle: IPv6 by /64, IPv4 by address', () => {
  it('12 wrong passwords from 12 addresses of one /64: the last two get 429, and so does the right password from a 13th', async () => {
    const statuses: number[] = [];
    for (let i = 1; i <= 12; i++)
      statuses.push((await postLogin(s.url, `2001:db8:aa:1::${i.toString(16)}`, DASHBOARD_USER, `wrong-${i}`)).status);
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
    expect(statuses.slice(10)).toEqual([429, 429]);
    expect((await postLogin(s.url, '2001:db8:aa:1:ffff:ffff:ffff:fffe', DASHBOARD_USER, password)).status).toBe(429);
    // The neighbouring /64 is someone else.
    expect((await postLogin(s.url, '2001:db8:aa:2::1', DASHBOARD_USER, password)).status).toBe(303);
  });

  it('IPv4 stays per address; an IPv4-mapped IPv6 address counts as its IPv4 address', async () => {
    for (let i = 0; i < 10; i++)
      expect((await postLogin(s.url, '203.0.113.10', DASHBOARD_USER, `guess-${i}`)).status).toBe(401);
    expect((await postLogin(s.url, '203.0.113.10', DASHBOARD_USER, password)).status).toBe(429);
    expect((await postLogin(s.url, '::ffff:203.0.113.10', DASHBOARD_USER, password)).status).toBe(429);
    expect((await postLogin(s.url, '203.0.113.11', DASHBOARD_USER, password)).status).toBe(303);
  });
});

describe('/metrics: the Bearer scheme in any case', () => {
  it('bearer, BEARER and Bearer with extra spaces are read; a wrong token or another scheme is not', async () => {
    const status = async (authorization: string) => {
      const res = await fetch(`${s.url}/metrics`, { headers: { authorization } });
      await res.arrayBuffer();
      return res.status;
    };
    for (const h of [
      `Bearer ${METRICS_TOKEN}`,
      `bearer ${METRICS_TOKEN}`,
      `BEARER ${METRICS_TOKEN}`,
      `bEaReR  ${METRICS_TOKEN}`,
    ])
      expect(await status(h), h).toBe(200);
    for (const h of [
      'bearer wrong-token-wrong-token',
      `Basic ${METRICS_TOKEN}`,
      `Bearer${METRICS_TOKEN}`,
      METRICS_TOKEN,
    ])
      expect(await status(h), h).toBe(401);
  });
});

describe('PostgreSQL down under the dashboard', () => {
  it('answers 503 with a plain page that names the database, and 200 again once it is back', async () => {
    const client = '198.51.100.70';
    const cookie = sessionCookie(await postLogin(s.url, client, DASHBOARD_USER, password));
    const page = () => fetch(`${s.url}/dashboard`, { headers: { cookie, 'x-forwarded-for': client } });
    expect((await page()).status).toBe(200);

    await pgProxy.down();
    try {
      const res = await page();
      const text = await res.text();
      recordCaptured('http', text);
      expect(res.status).toBe(503);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(res.headers.get('retry-after')).toBe('30');
      expect(text).toMatch(/cannot reach its database \(PostgreSQL\)/);
      expect(text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|postgres:\/\//);
    } finally {
      await pgProxy.up();
    }
    const back = await page();
    await back.text();
    expect(back.status).toBe(200);
  });
});
