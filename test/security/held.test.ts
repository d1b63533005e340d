import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { downloadImage } from '../../src/mirror/download.ts';
import { DisallowedHostError, ImageTooLargeError, InvalidImageError } from '../../src/mirror/errors.ts';
import { processImage } from '../../src/mirror/image.ts';
import { upsertAccount } from '../../src/store/accounts.ts';
import { recordCaptured } from '../support/capture.ts';
import {
  DASHBOARD_USER,
  loginForm,
  startServeForTest,
  type ServedForTest,
  stopServe,
  operatorSession,
} from './support.ts';

/**
 * The attacks of a security review that were already refused, kept as tests so they keep
 * being refused: 13 CSRF variants, 30 path-traversal variants, SSRF through image links and
 * redirects, and decompression ("pixel") bombs. Forged and tampered session cookies are in
 * login-throttle-sessions.test.ts, XSS in a real browser in browser-xss-csp.test.ts.
 */
let s: ServedForTest;
let cookie = '';
let csrf = '';
const ACCOUNT = '17841400000000042';

beforeAll(async () => {
  s = await startServeForTest('sec-held', { TRUST_PROXY: '1' });
  await upsertAccount(s.ctx.db, { id: ACCOUNT, username: 'held.test' }, new Date());
  await s.ctx.storage.put(`media/${ACCOUNT}/1/cover.jpg`, Buffer.from([0xff, 0xd8, 0xff]), {
    contentType: 'image/jpeg',
    cacheControl: 'public, max-age=60',
  });
  cookie = await operatorSession(s, '198.51.100.90');
  const html = await (await fetch(`${s.url}/dashboard`, { headers: { cookie } })).text();
  csrf = /name="_csrf" value="([^"]+)"/.exec(html)![1]!;
}, 60_000);

afterAll(async () => {
  await stopServe(s);
});

describe('CSRF: 13 variants, none queues anything', () => {
  const waiting = async () =>
    (await s.ctx.queues.feedSync.getJobCounts('waiting', 'delayed', 'prioritized')) as Record<string, number>;
  const sync = (headers: Record<string, string>, body: string, opts: { method?: string; path?: string } = {}) =>
    fetch(`${s.url}${opts.path ?? `/dashboard/accounts/${ACCOUNT}/sync`}`, {
      method: opts.method ?? 'POST',
      redirect: 'manual',
      headers,
      body: opts.method === 'GET' ? null : body,
    });
  const form = { 'content-type': 'application/x-www-form-urlencoded' };

  it('each is refused', async () => {
    const otherSession = await operatorSession(s, '198.51.100.91');
    const otherCsrf = /name="_csrf" value="([^"]+)"/.exec(
      await (await fetch(`${s.url}/dashboard`, { headers: { cookie: otherSession } })).text(),
    )![1]!;
    const before = await waiting();
    const variants: Array<[string, () => Promise<Response>]> = [
      ['no token', () => sync({ ...form, cookie, origin: s.url }, '')],
      ['empty token', () => sync({ ...form, cookie, origin: s.url }, '_csrf=')],
      ['wrong token', () => sync({ ...form, cookie, origin: s.url }, `_csrf=${'x'.repeat(43)}`)],
      ["another session's token", () => sync({ ...form, cookie, origin: s.url }, `_csrf=${otherCsrf}`)],
      [
        'token in the query string',
        () =>
          sync({ ...form, cookie, origin: s.url }, '', { path: `/dashboard/accounts/${ACCOUNT}/sync?_csrf=${csrf}` }),
      ],
      ['right token, foreign Origin', () => sync({ ...form, cookie, origin: 'https://evil.example' }, `_csrf=${csrf}`)],
      ['right token, Origin null', () => sync({ ...form, cookie, origin: 'null' }, `_csrf=${csrf}`)],
      [
        'right token, Sec-Fetch-Site cross-site',
        () => sync({ ...form, cookie, 'sec-fetch-site': 'cross-site' }, `_csrf=${csrf}`),
      ],
      [
        'right token, Sec-Fetch-Site same-site (a sibling subdomain)',
        () => sync({ ...form, cookie, 'sec-fetch-site': 'same-site', origin: s.url }, `_csrf=${csrf}`),
      ],
      ['right token, neither Origin nor Sec-Fetch-Site', () => sync({ ...form, cookie }, `_csrf=${csrf}`)],
      [
        'token in a JSON body',
        () => sync({ 'content-type': 'application/json', cookie, origin: s.url }, JSON.stringify({ _csrf: csrf })),
      ],
      [
        'no session cookie (another site cannot send a SameSite=Strict cookie)',
        () => sync({ ...form, origin: s.url }, `_csrf=${csrf}`),
      ],
      ['GET on the action', () => sync({ cookie }, '', { method: 'GET' })],
    ];
    expect(variants).toHaveLength(13);
    for (const [name, send] of variants) {
      const res = await send();
      recordCaptured('http', await res.text());
      expect([401, 403, 404, 405], name).toContain(res.status);
    }
    expect(await waiting()).toEqual(before);
    // The same request done right goes through: the refusals above are the checks, not a broken route.
    expect((await sync({ ...form, cookie, origin: s.url }, `_csrf=${csrf}`)).status).toBe(303);
  });

  it('login CSRF: a login form posted without its nonce cookie, or from another site, is refused', async () => {
    const f = await loginForm(s.url, '198.51.100.92');
    const body = new URLSearchParams({ user: DASHBOARD_USER, password: s.env.DASHBOARD_PASSWORD!, _csrf: f.csrf });
    const noNonce = await fetch(`${s.url}/dashboard/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { ...form, origin: s.url },
      body,
    });
    expect(noNonce.status).toBe(403);
    const foreign = await fetch(`${s.url}/dashboard/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { ...form, origin: 'https://evil.example', cookie: f.cookie },
      body,
    });
    expect(foreign.status).toBe(403);
  });
});

describe('path traversal: 30 variants, none reaches a file outside storage', () => {
  const paths = [
    '/media/../package.json',
    '/media/..%2F..%2Fpackage.json',
    '/media/%2e%2e/%2e%2e/package.json',
    '/media/%252e%252e/package.json',
    '/media/..%5c..%5cpackage.json',
    '/media/....//....//package.json',
    `/media/${ACCOUNT}/1/../../../../etc/passwd`,
    `/media/${ACCOUNT}/.meta/x.json`,
    '/media/.tmp-upload',
    '/media/%00/x.jpg',
    '/media//etc/passwd',
    '/media/%2Fetc%2Fpasswd',
    '/media/..\\..\\package.json',
    '/media/%c0%ae%c0%ae/package.json',
    '/media/%ef%bc%8e%ef%bc%8e/package.json',
    '/widget/../package.json',
    '/widget/..%2Fpackage.json',
    '/widget/.%2e/package.json',
    '/widget/%2e%2e%2f%2e%2e%2fetc%2fpasswd',
    '/widget/.env',
    '/feeds/..%2F..%2Fpackage.json',
    '/feeds/../package.json',
    '/feeds/%2e%2e%2fpackage.json',
    '/feeds/..json',
    '/feeds/.json',
    `/dashboard/accounts/..%2F..%2Fetc/preview`,
    '/dashboard/accounts/%2e%2e/preview',
    '/dashboard/widget.js/../../package.json',
    '/dashboard/queues/../../package.json',
    '/dashboard/queues/static/../../../package.json',
  ];

  it('every one answers 400 or 404 (or a redirect inside the dashboard), never a file', async () => {
    expect(paths).toHaveLength(30);
    for (const p of paths) {
      const res = await fetch(`${s.url}${p}`, { redirect: 'manual', headers: { cookie } });
      const body = await res.text();
      recordCaptured('http', body);
      expect([400, 404, 303, 301, 308], `${p} -> ${res.status}`).toContain(res.status);
      expect(body, p).not.toMatch(/"name": "feedmirror"|root:x:0:0|TOKEN_ENCRYPTION_KEY/);
    }
    // A real object still answers: the refusals are the checks.
    expect((await fetch(`${s.url}/media/${ACCOUNT}/1/cover.jpg`)).status).toBe(200);
  });
});

describe('SSRF through image links and redirects', () => {
  let redirector: Server;
  let allowed = '';
  beforeAll(async () => {
    redirector = createServer((req, res) => {
      const to = new URL(req.url ?? '/', 'http://x').searchParams.get('to') ?? '/';
      res.writeHead(302, { location: to }).end();
    });
    await new Promise<void>((r) => redirector.listen(0, '127.0.0.1', r));
    allowed = `127.0.0.1:${(redirector.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((r) => redirector.close(() => r()));
  });

  const targets = [
    'http://127.0.0.1/',
    'http://localhost/',
    'http://169.254.169.254/latest/meta-data/',
    'http://[::1]/',
    'http://0x7f000001/',
    'http://2130706433/',
    'http://0177.0.0.1/',
    'http://metadata.google.internal/',
    'http://scontent.cdninstagram.com.evil.example/x.jpg',
    'http://scontent.cdninstagram.com@127.0.0.1/x.jpg',
    'http://cdninstagram.com/x.jpg',
    'http://10.0.0.1/',
    'http://192.168.0.1/',
    'file:///etc/passwd',
    'ftp://scontent.cdninstagram.com/x.jpg',
    'gopher://127.0.0.1:6379/_INFO',
  ];

  it.each(targets)('%s is refused before any connection', async (url) => {
    const err = await downloadImage(url, {
      allowedHosts: ['.cdninstagram.com', '.fbcdn.net'],
      maxBytes: 1024,
      timeoutMs: 2_000,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DisallowedHostError);
  });

  it.each([
    'http://169.254.169.254/latest/meta-data/',
    'http://127.0.0.1:6379/',
    'file:///etc/passwd',
    'http://[::1]:5432/',
  ])('a redirect from an allowed host to %s is not followed', async (to) => {
    const err = await downloadImage(`http://${allowed}/r?to=${encodeURIComponent(to)}`, {
      allowedHosts: [allowed],
      maxBytes: 1024,
      timeoutMs: 2_000,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DisallowedHostError);
  });
});

describe('pixel bombs', () => {
  async function pngDeclaring(width: number, height: number): Promise<Buffer> {
    const png = Buffer.from(
      await sharp({ create: { width: 1, height: 1, channels: 3, background: '#000' } })
        .png()
        .toBuffer(),
    );
    png.writeUInt32BE(width, 16);
    png.writeUInt32BE(height, 20);
    png.writeUInt32BE(zlib.crc32(png.subarray(12, 29)) >>> 0, 29);
    return png;
  }
  const limits = { maxPixels: 50_000_000, variantWidths: [320] };

  it.each([
    [20_000, 20_000],
    [100_000, 1_000],
    [65_535, 65_535],
  ])('a %i x %i PNG header is refused before decoding', async (w, h) => {
    const err = await processImage(await pngDeclaring(w, h), limits).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImageTooLargeError);
  });

  it('a real, highly compressible 8000 x 8000 image (64 MP, a few hundred KB) is refused', async () => {
    const big = await sharp({ create: { width: 8000, height: 8000, channels: 3, background: '#fff' } })
      .png({ compressionLevel: 9 })
      .toBuffer();
    expect(big.length).toBeLessThan(2_000_000);
    await expect(processImage(big, limits)).rejects.toBeInstanceOf(ImageTooLargeError);
  });

  it('an SVG (entity expansion, script) is refused outright', async () => {
    const lol = `<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><text>&c;</text><script>alert(1)</script></svg>`;
    const err = await processImage(Buffer.from(lol), limits).catch((e: unknown) => e);
    expect(err instanceof InvalidImageError || err instanceof ImageTooLargeError).toBe(true);
  });
});
