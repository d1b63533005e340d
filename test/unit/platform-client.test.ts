import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PlatformClient, type PlatformClientOptions } from '../../src/platform/client.ts';
import {
  InsufficientDeveloperRoleError,
  MalformedResponseError,
  PlatformError,
  PlatformRequestError,
  RateLimitedError,
  TokenExpiredError,
  TransientError,
} from '../../src/platform/errors.ts';
import { FULL_FEED_FIELDS } from '../../src/platform/media-item.ts';
import { ManualClock, SECOND } from '../../src/util/clock.ts';
import { createLogger } from '../../src/util/logger.ts';
import { recordCaptured, registerSecretForAudit } from '../support/capture.ts';

/**
 * The client over real HTTP against a tiny scripted server: each test sets `handle`. Used for
 * behaviour the simulator cannot easily show (a slow server, a huge body, a reset socket) and for
 * every rule before the simulator exists. test/integration/platform-client.test.ts runs the same
 * client against the simulator.
 */

interface Recorded {
  method: string;
  path: string;
  query: URLSearchParams;
  form?: URLSearchParams;
}
type Handler = (req: Recorded, res: ServerResponse, raw: IncomingMessage) => void;

const TOKEN = 'IGAAlongLivedSECRETtoken0001';
const APP_SECRET = 'app-secret-value-xyz-9876';
let handle: Handler;
let requests: Recorded[];
let base: string;
const server = createServer((raw, res) => {
  const chunks: Buffer[] = [];
  raw.on('data', (c: Buffer) => chunks.push(c));
  raw.on('end', () => {
    const url = new URL(raw.url ?? '/', 'http://x');
    const rec: Recorded = { method: raw.method ?? 'GET', path: url.pathname, query: url.searchParams };
    if (chunks.length) rec.form = new URLSearchParams(Buffer.concat(chunks).toString());
    requests.push(rec);
    handle(rec, res, raw);
  });
});

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}
const item = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  media_type: 'IMAGE',
  media_url: `https://scontent.cdninstagram.com/${id}.jpg?oe=6A000000`,
  ...extra,
});

let sleeps: number[];
let clock: ManualClock;
function client(opts: Partial<PlatformClientOptions> = {}) {
  return new PlatformClient({
    graphUrl: base,
    apiVersion: 'v25.0',
    oauthTokenUrl: `${base}/oauth/access_token`,
    appId: '1234567890',
    appSecret: APP_SECRET,
    clock,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    random: () => 0.5,
    ...opts,
  });
}

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  requests = [];
  sleeps = [];
  clock = new ManualClock(Date.UTC(2026, 0, 1));
  handle = (_req, res) => json(res, 404, { error: { message: 'no handler', code: 803 } });
});

describe('tokens', () => {
  it('R-TOK-1 R-TOK-4 R-MED-1 exchange: unversioned GET carrying the app secret; expiresAt = now + expires_in', async () => {
    handle = (_r, res) => json(res, 200, { access_token: 'LONG', token_type: 'bearer', expires_in: 5_183_944 });
    const grant = await client().exchangeToken('SHORT');
    expect(requests).toHaveLength(1);
    const r = requests[0]!;
    expect([r.method, r.path]).toEqual(['GET', '/access_token']);
    expect(r.query.get('grant_type')).toBe('ig_exchange_token');
    expect(r.query.get('client_secret')).toBe(APP_SECRET);
    expect(r.query.get('access_token')).toBe('SHORT');
    expect(grant).toEqual({
      accessToken: 'LONG',
      tokenType: 'bearer',
      expiresIn: 5_183_944,
      expiresAt: new Date(Date.UTC(2026, 0, 1) + 5_183_944 * SECOND),
    });
  });

  it('R-TOK-2 refresh: unversioned GET without the app secret; token_type defaults to bearer', async () => {
    handle = (_r, res) => json(res, 200, { access_token: 'NEW', expires_in: 60 });
    clock.advance(1000);
    const grant = await client().refreshToken(TOKEN);
    const r = requests[0]!;
    expect(r.path).toBe('/refresh_access_token');
    expect(r.query.get('grant_type')).toBe('ig_refresh_token');
    expect(r.query.get('access_token')).toBe(TOKEN);
    expect(r.query.has('client_secret')).toBe(false);
    expect([...r.query.values()].join()).not.toContain(APP_SECRET);
    expect(grant.tokenType).toBe('bearer');
    expect(grant.expiresAt.getTime()).toBe(Date.UTC(2026, 0, 1) + 1000 + 60_000);
  });

  it('R-TOK-3 a 200 without access_token is a failure naming the field', async () => {
    handle = (_r, res) => json(res, 200, { token_type: 'bearer', expires_in: 10 });
    const err = await client({ maxRetries: 0 })
      .refreshToken(TOKEN)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MalformedResponseError);
    expect((err as Error).message).toMatch(/token refresh: .*access_token/);
  });

  it('R-TOK-3 a non-positive expires_in is refused', async () => {
    handle = (_r, res) => json(res, 200, { access_token: 'X', expires_in: 0 });
    await expect(client({ maxRetries: 0 }).refreshToken(TOKEN)).rejects.toThrow(/expires_in/);
  });

  it('R-TOK-3 R-TOK-10 HTTP non-success => typed failure from status, code, subcode, message', async () => {
    handle = (_r, res) =>
      json(res, 400, {
        error: {
          message: 'Error validating access token: Session has expired',
          type: 'OAuthException',
          code: 190,
          error_subcode: 463,
        },
      });
    const err = (await client()
      .refreshToken(TOKEN)
      .catch((e: unknown) => e)) as TokenExpiredError;
    expect(err).toBeInstanceOf(TokenExpiredError);
    expect([err.status, err.code, err.subcode]).toEqual([400, 190, 463]);
    expect(err.platformMessage).toMatch(/Session has expired/);
    expect(requests).toHaveLength(1); // never retried
  });

  it('code exchange: POST form with client_id, client_secret, grant_type, redirect_uri, code; flat answer', async () => {
    handle = (_r, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      // A user id beyond 2^53 must keep every digit.
      res.end('{"access_token":"SHORT","user_id":17841405793187218,"permissions":"instagram_business_basic,other"}');
    };
    const grant = await client().exchangeCode('CODE123', 'https://app.example/callback');
    const r = requests[0]!;
    expect([r.method, r.path]).toEqual(['POST', '/oauth/access_token']);
    expect(Object.fromEntries(r.form!)).toEqual({
      client_id: '1234567890',
      client_secret: APP_SECRET,
      grant_type: 'authorization_code',
      redirect_uri: 'https://app.example/callback',
      code: 'CODE123',
    });
    expect(grant).toEqual({
      accessToken: 'SHORT',
      userId: '17841405793187218',
      permissions: ['instagram_business_basic', 'other'],
    });
  });

  it('code exchange: the {data:[...]} answer is accepted too', async () => {
    handle = (_r, res) =>
      json(res, 200, { data: [{ access_token: 'SHORT', user_id: '42', permissions: ['instagram_business_basic'] }] });
    expect(await client().exchangeCode('C', 'https://a/cb')).toEqual({
      accessToken: 'SHORT',
      userId: '42',
      permissions: ['instagram_business_basic'],
    });
  });

  it('code exchange: the single-use code is never sent twice, even after a 5xx or a reset', async () => {
    handle = (_r, res) => json(res, 503, { error: { message: 'down', code: 2 } });
    await expect(client().exchangeCode('C', 'https://a/cb')).rejects.toBeInstanceOf(TransientError);
    expect(requests).toHaveLength(1);
    handle = (_r, _res, raw) => raw.socket.destroy();
    await expect(client().exchangeCode('C', 'https://a/cb')).rejects.toBeInstanceOf(TransientError);
    expect(requests).toHaveLength(2);
    expect(sleeps).toEqual([]);
  });

  it('R-TOK-11 exchange without APP_SECRET configured fails before any request', async () => {
    await expect(client({ appSecret: undefined }).exchangeToken('S')).rejects.toThrow(/APP_SECRET/);
    expect(requests).toHaveLength(0);
  });
});

describe('profile (R-OWN-5)', () => {
  it('R-OWN-5 R-MED-1 asks for user_id, username, name, account_type, profile_picture_url on the versioned /me', async () => {
    handle = (_r, res) =>
      json(res, 200, {
        id: 'app-scoped',
        user_id: '1784',
        username: 'shop',
        name: 'Shop',
        account_type: 'BUSINESS',
        profile_picture_url: 'https://cdn/p.jpg',
      });
    const p = await client().getProfile(TOKEN);
    expect(requests[0]!.path).toBe('/v25.0/me');
    expect(requests[0]!.query.get('fields')).toBe('user_id,username,name,account_type,profile_picture_url');
    expect(p).toEqual({
      id: '1784',
      username: 'shop',
      name: 'Shop',
      accountType: 'BUSINESS',
      profilePictureUrl: 'https://cdn/p.jpg',
    });
  });
  it('R-OWN-5 refused optional fields => asks again with fewer; no username => the media items username', async () => {
    handle = (r, res) => {
      if (r.path === '/v25.0/me/media') return json(res, 200, { data: [{ id: 'm1', username: 'fromMedia' }] });
      if (r.query.get('fields')!.split(',').includes('name'))
        return json(res, 400, { error: { message: 'Tried accessing nonexisting field (name)', code: 100 } });
      return json(res, 200, { id: '77', account_type: 'CREATOR' });
    };
    const p = await client().getProfile(TOKEN);
    expect(requests.map((r) => r.query.get('fields'))).toEqual([
      'user_id,username,name,account_type,profile_picture_url',
      'user_id,username,account_type',
      'username',
    ]);
    expect(p).toEqual({
      id: '77',
      username: 'fromMedia',
      accountType: 'CREATOR',
      name: undefined,
      profilePictureUrl: undefined,
    });
  });
});

describe('media list', () => {
  const pageUrl = (after: string) => `${base}/v25.0/me/media?access_token=${TOKEN}&limit=2&after=${after}`;

  it('R-MED-1 R-MED-2 R-MED-3 versioned path, the full field list, limit = page size, token in the query', async () => {
    handle = (_r, res) => json(res, 200, { data: [item('1')], paging: { cursors: { after: 'a' } } });
    const listing = await client({ pageSize: 25 }).listMedia(TOKEN);
    const r = requests[0]!;
    expect(r.path).toBe('/v25.0/me/media');
    expect(r.query.get('fields')).toBe(FULL_FEED_FIELDS.join(','));
    expect(r.query.get('fields')).toContain('children{media_type,media_url,thumbnail_url}');
    expect(r.query.get('limit')).toBe('25');
    expect(r.query.get('access_token')).toBe(TOKEN);
    expect(listing).toMatchObject({ complete: true, pages: 1, calls: 1, refusedFields: [] });
  });

  it('R-MED-5 R-MED-7 follows paging.next through short pages until absent; merges by id, first wins', async () => {
    handle = (r, res) => {
      const after = r.query.get('after');
      if (!after)
        return json(res, 200, { data: [item('1', { caption: 'first' }), item('2')], paging: { next: pageUrl('p2') } });
      if (after === 'p2') return json(res, 200, { data: [item('3')], paging: { next: pageUrl('p3') } }); // short page, not the end
      if (after === 'p3') return json(res, 200, { data: [], paging: { next: pageUrl('p4') } }); // empty page, not the end
      return json(res, 200, { data: [item('1', { caption: 'dup' }), item('4')], paging: {} });
    };
    const pagesSeen: number[] = [];
    const listing = await client({ pageSize: 2 }).listMedia(TOKEN, { onPage: (p) => pagesSeen.push(p.items) });
    expect(listing.complete).toBe(true);
    expect(listing.items.map((i) => i.id)).toEqual(['1', '2', '3', '4']);
    expect(listing.items[0]!.caption).toBe('first');
    expect([listing.pages, listing.calls]).toEqual([4, 4]);
    expect(pagesSeen).toEqual([2, 1, 0, 2]);
  });

  it('R-MED-6 a paging.next on another host is not followed: incomplete, and the token never leaves', async () => {
    let foreignHit = false;
    const foreign = createServer((_q, s) => {
      foreignHit = true;
      s.end('{}');
    });
    await new Promise<void>((resolve) => foreign.listen(0, '127.0.0.1', resolve));
    const foreignBase = `http://localhost:${(foreign.address() as AddressInfo).port}`;
    handle = (_r, res) =>
      json(res, 200, {
        data: [item('1')],
        paging: { next: `${foreignBase}/v25.0/me/media?access_token=${TOKEN}&after=x` },
      });
    const listing = await client().listMedia(TOKEN);
    await new Promise((resolve) => foreign.close(resolve));
    expect(foreignHit).toBe(false);
    expect(listing.complete).toBe(false);
    expect(listing.items.map((i) => i.id)).toEqual(['1']);
    expect(listing.error).toBeInstanceOf(MalformedResponseError);
    expect(listing.error!.message).toMatch(/another host/);
    expect(listing.error!.message).not.toContain(TOKEN);
  });

  it('R-MED-4 a refused caption, then media_product_type, is dropped one at a time and reported', async () => {
    handle = (r, res) => {
      const fields = r.query.get('fields')!.split(',');
      if (fields.includes('caption'))
        return json(res, 400, {
          error: { message: '(#100) Tried accessing nonexisting field (caption) on node type (Media)', code: 100 },
        });
      if (fields.includes('media_product_type'))
        return json(res, 400, { error: { message: 'Invalid parameter', code: 100 } });
      return json(res, 200, { data: [item('1')] });
    };
    const listing = await client().listMedia(TOKEN);
    expect(listing.complete).toBe(true);
    expect(listing.refusedFields).toEqual(['caption', 'media_product_type']);
    expect(requests).toHaveLength(3);
    expect(requests[2]!.query.get('fields')).toBe(
      FULL_FEED_FIELDS.filter((f) => f !== 'caption' && f !== 'media_product_type').join(','),
    );
    expect(listing.calls).toBe(3);
  });

  it('R-MED-4 the field the message names is dropped first; known refused fields are not asked for', async () => {
    handle = (r, res) => {
      if (r.query.get('fields')!.includes('media_product_type'))
        return json(res, 400, { error: { message: 'nonexisting field (media_product_type)', code: 100 } });
      return json(res, 200, { data: [item('1')] });
    };
    const listing = await client().listMedia(TOKEN);
    expect(listing.refusedFields).toEqual(['media_product_type']);
    expect(requests[1]!.query.get('fields')).toContain('caption');
    requests = [];
    const again = await client().listMedia(TOKEN, { refusedFields: ['media_product_type'] });
    expect(requests).toHaveLength(1);
    expect(again.refusedFields).toEqual([]);
  });

  it('R-MED-4 when dropping does not help, nothing is reported as refused and the listing is incomplete', async () => {
    handle = (_r, res) => json(res, 400, { error: { message: 'Invalid parameter', code: 100 } });
    const listing = await client().listMedia(TOKEN);
    expect(listing).toMatchObject({ complete: false, refusedFields: [], items: [] });
    expect(listing.error).toBeInstanceOf(PlatformRequestError);
    expect(requests).toHaveLength(3);
  });

  it('R-OWN-1 HTTP 429 mid-listing: no retry loop, incomplete with a RateLimitedError carrying retryAfterMs', async () => {
    handle = (r, res) => {
      if (!r.query.get('after')) return json(res, 200, { data: [item('1')], paging: { next: pageUrl('p2') } });
      return json(res, 429, { error: { message: 'Too many calls', code: 4 } }, { 'retry-after': '90' });
    };
    const listing = await client().listMedia(TOKEN);
    expect(listing.complete).toBe(false);
    expect(listing.items).toHaveLength(1);
    expect(listing.error).toBeInstanceOf(RateLimitedError);
    expect((listing.error as RateLimitedError).retryAfterMs).toBe(90_000);
    expect(requests).toHaveLength(2);
    expect(sleeps).toEqual([]);
  });

  it('R-OWN-1 code 4 with a usage header on a single call is thrown with the estimate, no retry', async () => {
    const buc = JSON.stringify({
      '1784': [
        { type: 'instagram', call_count: 100, total_time: 20, total_cputime: 5, estimated_time_to_regain_access: 3 },
      ],
    });
    handle = (_r, res) =>
      json(
        res,
        400,
        { error: { message: 'Application request limit reached', code: 4 } },
        { 'x-business-use-case-usage': buc },
      );
    const c = client();
    const err = (await c.getMedia(TOKEN, '17890').catch((e: unknown) => e)) as RateLimitedError;
    expect(err).toBeInstanceOf(RateLimitedError);
    expect(err.retryAfterMs).toBe(180_000);
    expect(requests).toHaveLength(1);
    expect(c.lastUsage?.maxPercent).toBe(100);
  });

  it('R-TOK-10 a token error during the listing is thrown, never returned as a partial listing', async () => {
    handle = (r, res) => {
      if (!r.query.get('after')) return json(res, 200, { data: [item('1')], paging: { next: pageUrl('p2') } });
      return json(res, 400, { error: { message: 'Session expired', code: 190, error_subcode: 463 } });
    };
    await expect(client().listMedia(TOKEN)).rejects.toBeInstanceOf(TokenExpiredError);
  });

  it('R-TOK-14 insufficient developer role is thrown from a listing', async () => {
    handle = (_r, res) => json(res, 400, { error: { message: 'Insufficient developer role', code: 10 } });
    await expect(client().listMedia(TOKEN)).rejects.toBeInstanceOf(InsufficientDeveloperRoleError);
  });

  it('transient 5xx is retried with jittered backoff, then succeeds; calls count the retries', async () => {
    let n = 0;
    handle = (_r, res) =>
      ++n <= 2
        ? json(res, 503, { error: { message: 'Please retry', code: 2 } })
        : json(res, 200, { data: [item('1')] });
    const listing = await client().listMedia(TOKEN);
    expect(listing).toMatchObject({ complete: true, calls: 3 });
    expect(sleeps).toEqual([250, 500]); // random 0.5 * 500 * 2^attempt
  });

  it('transient failures past maxRetries end the listing incomplete', async () => {
    handle = (_r, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html><body>Bad gateway</body></html>');
    };
    const listing = await client({ maxRetries: 2 }).listMedia(TOKEN);
    expect(listing.complete).toBe(false);
    expect(listing.error).toBeInstanceOf(TransientError);
    expect(listing.calls).toBe(3);
  });

  it('an item of the wrong shape is skipped with the field named; the rest of the page is used', async () => {
    handle = (_r, res) =>
      json(res, 200, {
        data: [item('1'), item('2'), item('3'), item('4', { like_count: 'many' }), { caption: 'no id at all' }],
      });
    const listing = await client({ maxRetries: 1 }).listMedia(TOKEN);
    expect(listing.complete).toBe(true);
    expect(listing.error).toBeUndefined();
    expect(listing.items.map((i) => i.id)).toEqual(['1', '2', '3']);
    expect(listing.skipped).toEqual([
      { id: '4', reason: expect.stringMatching(/^malformed item: like_count: .*expected number/) },
      { id: '(no id)', reason: expect.stringMatching(/^malformed item: id: /) },
    ]);
    expect(JSON.stringify(listing.skipped)).not.toContain('many'); // the value itself is never echoed
    expect(listing.calls).toBe(1); // nothing to retry: one bad item is not a bad answer
  });

  it('malformed JSON => MalformedResponseError after retries', async () => {
    handle = (_r, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"data": [ {"id": "1"');
    };
    const err = await client()
      .getMedia(TOKEN, '1')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MalformedResponseError);
    expect((err as Error).message).toMatch(/media item: .*not valid JSON/);
    expect(requests).toHaveLength(4);
  });

  it('an HTML page with 200 => MalformedResponseError saying so', async () => {
    handle = (_r, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><html><body>Login <a href="${base}/x?access_token=${TOKEN}">x</a></body></html>`);
    };
    const err = await client({ maxRetries: 0 })
      .getProfile(TOKEN)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MalformedResponseError);
    expect((err as Error).message).toMatch(/HTML/);
    expect((err as Error).message).not.toContain(TOKEN);
  });

  it('a body larger than maxResponseBytes is refused without reading it all (declared or streamed)', async () => {
    let written = 0;
    handle = (_r, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(50_000_000) });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const pump = () => {
        while (written < 50_000_000 && res.write(chunk)) written += chunk.length;
      };
      res.on('drain', pump);
      res.on('close', () => res.off('drain', pump));
      pump();
    };
    const err = await client({ maxRetries: 0, maxResponseBytes: 100_000 })
      .getMedia(TOKEN, '1')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MalformedResponseError);
    expect((err as Error).message).toMatch(/exceeds 100000 bytes/);
    expect(written).toBeLessThan(50_000_000);

    handle = (_r, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }); // chunked, no length
      res.write(`{"id":"1","caption":"${'x'.repeat(300_000)}`);
      res.end('"}');
    };
    await expect(client({ maxRetries: 0, maxResponseBytes: 100_000 }).getMedia(TOKEN, '1')).rejects.toThrow(/exceeds/);
  });

  it('a server slower than timeoutMs => TransientError (timeout), retried', async () => {
    handle = () => {
      /* never answers */
    };
    const err = await client({ timeoutMs: 150, maxRetries: 1 })
      .getMedia(TOKEN, '1')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransientError);
    expect((err as Error).message).toMatch(/no answer within 150 ms/);
    expect(requests).toHaveLength(2);
    expect(sleeps).toHaveLength(1);
  });

  it('a body that stalls past timeoutMs => TransientError', async () => {
    handle = (_r, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"id":');
    };
    await expect(client({ timeoutMs: 150, maxRetries: 0 }).getMedia(TOKEN, '1')).rejects.toBeInstanceOf(TransientError);
  });

  it('a connection reset => TransientError, retried then succeeding', async () => {
    let n = 0;
    handle = (_r, res, raw) =>
      ++n === 1 ? raw.socket.destroy() : json(res, 200, { id: '1', media_url: 'https://cdn/x.jpg' });
    const renewed = await client().getMedia(TOKEN, '1');
    expect(renewed.media_url).toBe('https://cdn/x.jpg');
    expect(requests).toHaveLength(2);
  });

  it('R-MED-6 a redirect is never followed (it would carry the token elsewhere)', async () => {
    handle = (_r, res) => {
      res.writeHead(302, { location: 'http://127.0.0.2:1/steal' });
      res.end();
    };
    await expect(client().getMedia(TOKEN, '1')).rejects.toBeInstanceOf(PlatformRequestError);
    expect(requests).toHaveLength(1);
  });

  it('maxPages guard ends a never-ending listing incomplete', async () => {
    let n = 0;
    handle = (_r, res) => json(res, 200, { data: [item(String(++n))], paging: { next: pageUrl(`p${n}`) } });
    const listing = await client().listMedia(TOKEN, { maxPages: 5 });
    expect(listing).toMatchObject({ complete: false, pages: 5, calls: 5 });
    expect(listing.error!.message).toMatch(/5 pages/);
  });
});

describe('single media (R-MED-8)', () => {
  it('R-MED-8 R-MED-1 GET /v25.0/<id> with media_url, thumbnail_url and children fields', async () => {
    handle = (_r, res) => json(res, 200, { id: '17890', media_url: 'https://cdn/new.jpg?oe=6B000000' });
    const m = await client().getMedia(TOKEN, '17890');
    expect(requests[0]!.path).toBe('/v25.0/17890');
    expect(requests[0]!.query.get('fields')).toBe(
      'media_url,thumbnail_url,children{media_type,media_url,thumbnail_url}',
    );
    expect(m.media_url).toContain('oe=6B000000');
  });
  it('a media id that is not one path segment is refused before any request', async () => {
    await expect(client().getMedia(TOKEN, '../me/media')).rejects.toThrow(/invalid media id/);
    expect(requests).toHaveLength(0);
  });
});

describe('usage headers and logs (R-OWN-1, R-TOK-11, R-LNK-7, R-MED-6)', () => {
  function capture() {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(chunk.toString());
        cb();
      },
    });
    return { lines, logger: createLogger({ destination, level: 'debug' }) };
  }

  it('R-OWN-1 keeps the latest usage and warns above 80%', async () => {
    const { lines, logger } = capture();
    handle = (_r, res) =>
      json(res, 200, { id: '1' }, { 'x-app-usage': '{"call_count":91,"total_time":5,"total_cputime":2}' });
    const c = client({ logger });
    await c.getMedia(TOKEN, '1');
    expect(c.lastUsage?.maxPercent).toBe(91);
    expect(c.lastUsage?.app?.call_count).toBe(91);
    const warn = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.level === 40);
    expect(warn).toMatchObject({ operation: 'media item', usagePercent: 91 });
  });

  it('R-TOK-11 R-LNK-7 R-MED-6 no token, app secret or access_token= in logs or errors across failing calls', async () => {
    const { lines, logger } = capture();
    const c = client({ logger, maxRetries: 1, timeoutMs: 150 });
    const errors: unknown[] = [];
    const scenarios: Handler[] = [
      (_r, res) =>
        json(res, 400, {
          error: { message: `Invalid OAuth access token ${TOKEN} (client_secret=${APP_SECRET})`, code: 190 },
        }),
      (_r, res) => json(res, 500, { error: { message: `boom ${base}/v25.0/me?access_token=${TOKEN}`, code: 2 } }),
      (_r, res) => json(res, 429, { error: { message: 'slow down', code: 4 } }, { 'retry-after': '1' }),
      (_r, res) => {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end(`<html>${TOKEN}</html>`);
      },
      (_r, res) =>
        json(res, 200, {
          data: [{ id: 1, like_count: TOKEN }],
          paging: { next: `http://evil.example/x?access_token=${TOKEN}` },
        }),
      (_r, res) =>
        json(res, 200, { data: [item('1')], paging: { next: `http://evil.example/x?access_token=${TOKEN}` } }),
      (_r, _res, raw) => raw.socket.destroy(),
      () => undefined, // timeout
    ];
    for (const scenario of scenarios) {
      handle = scenario;
      const calls: Array<() => Promise<unknown>> = [
        () => c.listMedia(TOKEN),
        () => c.getProfile(TOKEN),
        () => c.refreshToken(TOKEN),
        () => c.exchangeToken(TOKEN),
        () => c.getMedia(TOKEN, '1'),
      ];
      for (const call of calls) {
        try {
          const listing = (await call()) as { error?: unknown } | undefined;
          if (listing?.error) errors.push(listing.error);
        } catch (e) {
          errors.push(e);
        }
      }
    }
    const text =
      lines.join('\n') +
      errors
        .map((e) =>
          JSON.stringify({
            m: (e as Error).message,
            p: (e as PlatformError).platformMessage,
            s: (e as Error).stack,
            c: String((e as Error).cause),
            j: e,
          }),
        )
        .join('\n');
    // Also feed the suite-wide secrets audit (test/audit/no-secrets.test.ts).
    registerSecretForAudit(TOKEN);
    registerSecretForAudit(APP_SECRET);
    recordCaptured('platform-client-unit', text);
    expect(errors.length).toBeGreaterThan(20);
    expect(lines.length).toBeGreaterThan(20);
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(APP_SECRET);
    expect(text).not.toContain('access_token=');
    for (const e of errors) expect((e as Error).cause).toBeUndefined();
  });
});
