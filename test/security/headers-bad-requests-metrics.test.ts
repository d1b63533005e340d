import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/http/app.ts';
import { createMetrics } from '../../src/metrics/index.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { recordCaptured } from '../support/capture.ts';
import { loginForm, startServeForTest, type ServedForTest, operatorSession, stopServe } from './support.ts';
import { FORM_MAX_FIELDS } from '../../src/http/dashboard/index.ts';
import { WIDGET_FORM_MAX_FIELDS } from '../../src/http/dashboard/widgets-routes.ts';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * 5 and 6 against `feedmirror serve` on 0.0.0.0 (non-loopback address):
 * bad requests are short 4xx answers logged below error level (main answered 500 and logged an
 * error); every response carries the security headers (main had no CSP or frame protection on
 * the login page and the callback, no nosniff on feeds); /metrics needs METRICS_TOKEN when the
 * server is reachable from other machines (main served account ids to anyone).
 */
let s: ServedForTest;
const METRICS_TOKEN = 'metrics-token-for-the-security-test';

beforeAll(async () => {
  s = await startServeForTest('sec-headers', { TRUST_PROXY: '1', METRICS_TOKEN });
  // A published feed and a mirrored image, so feeds and media are real responses.
  await s.ctx.storage.put('feeds/17841400000000001.json', Buffer.from('{"schemaVersion":1}'), {
    contentType: 'application/json; charset=utf-8',
    cacheControl: 'public, max-age=60',
  });
  await s.ctx.storage.put('media/17841400000000001/1/cover.jpg', Buffer.from([0xff, 0xd8, 0xff, 0xe0]), {
    contentType: 'image/jpeg',
    cacheControl: 'public, max-age=60',
  });
}, 60_000);

afterAll(async () => {
  await stopServe(s);
});

const errorLines = () => s.logs.filter((l) => l.level >= 50);

describe('bad requests answer 4xx with a short body, logged below error level', () => {
  it('/feeds/%ff.json answers 400', async () => {
    const before = errorLines().length;
    const res = await fetch(`${s.url}/feeds/%ff.json`);
    const body = await res.text();
    expect(res.status).toBe(400);
    expect(body.length).toBeLessThan(100);
    expect(errorLines().length).toBe(before);
    expect(s.logs.some((l) => l.msg === 'bad request refused' && l.status === 400 && l.level < 50)).toBe(true);
  });

  it('malformed percent-encoding elsewhere (dashboard, media) is 400 too', async () => {
    for (const p of ['/dashboard/accounts/%E0%A4%A/preview', '/media/%ff/x.jpg', '/callback%ff']) {
      const res = await fetch(`${s.url}${p}`, { redirect: 'manual' });
      expect([400, 404, 303], p).toContain(res.status);
      expect(res.status, p).not.toBe(500);
    }
  });

  const loginPost = async (body: string, contentType = 'application/x-www-form-urlencoded') => {
    const form = await loginForm(s.url, '198.51.100.40');
    const res = await fetch(`${s.url}/dashboard/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': contentType, cookie: form.cookie, origin: s.url, 'x-forwarded-for': '198.51.100.40' },
      body,
    });
    const text = await res.text();
    recordCaptured('http', text);
    return { status: res.status, text };
  };

  it('a login POST with more than 20 parameters, more than 8 KB, or charset=utf-7 answers 413, 413, 415', async () => {
    const before = errorLines().length;
    const many = new URLSearchParams(Array.from({ length: 30 }, (_, i) => [`p${i}`, 'x'])).toString();
    expect(await loginPost(many)).toMatchObject({ status: 413, text: 'The request has too many parameters.\n' });
    expect(await loginPost(`user=a&password=${'x'.repeat(9000)}`)).toMatchObject({
      status: 413,
      text: 'The request body is too large.\n',
    });
    expect(await loginPost('user=a&password=b', 'application/x-www-form-urlencoded; charset=utf-7')).toMatchObject({
      status: 415,
      text: 'Unsupported charset: send UTF-8.\n',
    });
    expect(errorLines().length).toBe(before);
  });

  it('a dashboard form over its field bound (20; a widget form 72) or 8 KB answers 413 in one line, not a flash or a 500', async () => {
    expect([FORM_MAX_FIELDS, WIDGET_FORM_MAX_FIELDS]).toEqual([20, 72]); // docs/security.md names both
    const client = '198.51.100.42';
    const cookie = await operatorSession(s, client);
    const page = await (await fetch(`${s.url}/dashboard`, { headers: { cookie, 'x-forwarded-for': client } })).text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
    /** A POST with the session's token and `fields` fields in all (the token one of them). */
    const post = async (path: string, fields: number, pad = 'x') => {
      const body = new URLSearchParams([['_csrf', csrf]]);
      for (let i = 1; i < fields; i++) body.append(`f${i}`, pad);
      const res = await fetch(`${s.url}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          cookie,
          origin: s.url,
          'x-forwarded-for': client,
        },
        body,
      });
      const text = await res.text();
      recordCaptured('http', text);
      return { status: res.status, text };
    };
    const before = errorLines().length;
    const tooMany = { status: 413, text: 'The request has too many parameters.\n' };
    // An account action: 20 fields are read (then the unknown account is a 404 page), 21 are not.
    expect((await post('/dashboard/accounts/17841400000000404/sync', 20)).status).toBe(404);
    expect(await post('/dashboard/accounts/17841400000000404/sync', 21)).toEqual(tooMany);
    expect(await post('/dashboard/accounts/17841400000000404/sync', 81)).toEqual(tooMany);
    expect(await post('/dashboard/webhooks', 21)).toEqual(tooMany);
    // A widget's settings: 72 are read (an unknown widget is a 404), 73 are not; its Hide form is a plain form.
    expect((await post('/dashboard/widgets/w_aaaaaaaaaa', 72)).status).toBe(404);
    expect(await post('/dashboard/widgets/w_aaaaaaaaaa', 73)).toEqual(tooMany);
    expect(await post('/dashboard/widgets', 73)).toEqual(tooMany);
    expect(await post('/dashboard/widgets/w_aaaaaaaaaa/hide', 21)).toEqual(tooMany);
    expect(await post('/dashboard/accounts/17841400000000404/sync', 2, 'x'.repeat(9000))).toEqual({
      status: 413,
      text: 'The request body is too large.\n',
    });
    expect(errorLines().length).toBe(before);
  });
});

describe('security headers on every response', () => {
  const csp = (res: Response) => res.headers.get('content-security-policy') ?? '';

  it('the login page carries a CSP without inline script, frame protection and nosniff', async () => {
    const { res } = await loginForm(s.url, '198.51.100.41');
    expect(csp(res)).toMatch(/script-src 'self'(;|$)/);
    expect(csp(res)).not.toMatch(/script-src[^;]*unsafe-inline/);
    expect(csp(res)).toContain("frame-ancestors 'none'");
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('same-origin');
    expect(res.headers.get('strict-transport-security')).toBeNull(); // PUBLIC_URL is http here
  });

  it('feeds, media, the callback, bull-board, 404s and errors carry nosniff and the CSP', async () => {
    for (const p of [
      '/feeds/17841400000000001.json',
      '/media/17841400000000001/1/cover.jpg',
      '/callback',
      '/connect',
      '/dashboard/queues/',
      '/nope',
      '/feeds/%ff.json',
      '/healthz',
    ]) {
      const res = await fetch(`${s.url}${p}`, { redirect: 'manual' });
      await res.arrayBuffer();
      expect(res.headers.get('x-content-type-options'), p).toBe('nosniff');
      expect(csp(res), p).toContain("frame-ancestors 'none'");
      expect(csp(res), p).toContain("default-src 'none'");
    }
    // Other sites read feeds and load media: both say so explicitly.
    const feed = await fetch(`${s.url}/feeds/17841400000000001.json`);
    expect(feed.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
    expect(feed.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('HSTS only when PUBLIC_URL is https', async () => {
    for (const [publicUrl, expected] of [
      ['https://feeds.example', /max-age=31536000/],
      ['http://feeds.example', null],
    ] as const) {
      const app = createApp({ logger: silentLogger, publicUrl });
      const server: Server = createServer(app);
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/healthz`);
      await new Promise<void>((r) => server.close(() => r()));
      if (expected) expect(res.headers.get('strict-transport-security')).toMatch(expected);
      else expect(res.headers.get('strict-transport-security')).toBeNull();
    }
  });
});

describe('/metrics is for the scraper only', () => {
  it('on 0.0.0.0 it needs METRICS_TOKEN as a bearer token', async () => {
    expect((await fetch(`${s.url}/metrics`)).status).toBe(401);
    expect(
      (await fetch(`${s.url}/metrics`, { headers: { authorization: 'Bearer wrong-token-wrong-token' } })).status,
    ).toBe(401);
    const ok = await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('feedmirror_');
  });

  it('without METRICS_TOKEN on a non-loopback address it is not served at all', async () => {
    const open = await startServeForTest('sec-metrics-off', {});
    try {
      expect((await fetch(`${open.url}/metrics`)).status).toBe(404);
      expect(open.logs.some((l) => /METRICS_TOKEN is not set/.test(l.msg))).toBe(true);
    } finally {
      await open.close();
      await open.drop();
    }
  });

  it('scrapes are cheap: within the cache window no store is read again', async () => {
    const clock = new ManualClock();
    let reads = 0;
    const metrics = createMetrics({
      clock,
      processMetrics: false,
      tokenExpiries: async () => (
        reads++,
        [{ accountId: '1', expiresAt: new Date(clock.now().getTime() + 86_400_000) }]
      ),
    });
    const app = createApp({
      logger: silentLogger,
      health: { metrics, metricsAccess: 'open', clock, metricsCacheMs: 5_000 },
    });
    const server: Server = createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      for (let i = 0; i < 20; i++) expect((await fetch(`${base}/metrics`)).status).toBe(200);
      expect(reads).toBe(1);
      clock.advance(5_000);
      await fetch(`${base}/metrics`);
      expect(reads).toBe(2);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
