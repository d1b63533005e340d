import { Writable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/index.ts';
import type { PlatformClientOptions } from '../../src/platform/client.ts';
import {
  InsufficientDeveloperRoleError,
  MalformedResponseError,
  PasswordChangedError,
  PlatformError,
  RateLimitedError,
  TokenExpiredError,
  TokenInvalidError,
  TokenTooYoungError,
  TransientError,
} from '../../src/platform/errors.ts';
import { parseOe } from '../../src/platform/links.ts';
import { FULL_FEED_FIELDS } from '../../src/platform/media-item.ts';
import { SCOPE } from '../../src/platform/identifiers.ts';
import { DAY, HOUR } from '../../src/util/clock.ts';
import { createLogger } from '../../src/util/logger.ts';
import { recordCaptured } from '../support/capture.ts';
import { simPlatformClient } from '../support/sim-platform.ts';

/**
 * The platform client against the real simulator over HTTP: the requests it sends are asserted on
 * the simulator's record, the answers are the simulator's own (R-TOK-*, R-MED-*, R-OWN-1).
 */

type Sim = Awaited<ReturnType<typeof startSimulator>>;
let sim: Sim;
let sleeps: number[];

function client(opts: Partial<PlatformClientOptions> = {}) {
  return simPlatformClient(sim, {
    appId: sim.appId,
    appSecret: sim.appSecret,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    random: () => 0.5,
    ...opts,
  });
}
const graphRequests = () => sim.requests.filter((r) => r.host === 'graph');
/** The simulator serves the graph under a path prefix; the client keeps it (GRAPH_URL may have one). */
const gp = (path: string) => new URL(sim.graphUrl).pathname.replace(/\/+$/, '') + path;
let seq = 0;
const account = (opts: Parameters<Sim['createAccount']>[0] = {}) =>
  sim.createAccount({ username: `pc_${++seq}`, ...opts });
/** A long-lived token old enough to be refreshed (R-TOK-5). */
const longLived = (id: string) =>
  sim.issueLongLivedToken(id, { issuedAt: new Date(sim.clock.now().getTime() - 2 * DAY) });

beforeAll(async () => {
  sim = await startSimulator({});
});
afterAll(async () => {
  await sim?.close();
});
beforeEach(() => {
  sim.clearFaults();
  sim.requests.length = 0;
  sleeps = [];
});

describe('tokens against the simulator', () => {
  it('R-TOK-1 R-TOK-4 R-MED-1 exchange carries the app secret on the unversioned path; expiresAt = now + expires_in', async () => {
    const { id } = account();
    const short = sim.issueShortLivedToken(id);
    const grant = await client().exchangeToken(short);
    const [r] = graphRequests();
    expect(r).toMatchObject({ method: 'GET', path: gp('/access_token') });
    expect(r!.query).toMatchObject({
      grant_type: 'ig_exchange_token',
      client_secret: sim.appSecret,
      access_token: short,
    });
    expect(grant.accessToken).not.toBe(short);
    expect(grant.expiresIn).toBeGreaterThan(50 * 24 * 3600);
    expect(grant.expiresAt.getTime()).toBe(sim.clock.now().getTime() + grant.expiresIn * 1000);
    // the long-lived token works on the data path
    expect((await client().getProfile(grant.accessToken)).id).toBe(id);
  });

  it('R-TOK-2 R-MED-1 refresh sends no app secret, on the unversioned path', async () => {
    const { id } = account();
    const grant = await client().refreshToken(longLived(id));
    const [r] = graphRequests();
    expect(r).toMatchObject({ method: 'GET', path: gp('/refresh_access_token') });
    expect(r!.query.grant_type).toBe('ig_refresh_token');
    expect(r!.query).not.toHaveProperty('client_secret');
    expect(JSON.stringify(r)).not.toContain(sim.appSecret);
    expect(grant.expiresAt.getTime()).toBe(sim.clock.now().getTime() + grant.expiresIn * 1000);
  });

  it('code exchange: the single-use code gives a short-lived token once; a second use is refused and not retried', async () => {
    const { id } = account();
    const redirectUri = 'https://app.example/callback';
    sim.autoApprove = id;
    const authorize = new URL(sim.authorizeUrl);
    for (const [k, v] of Object.entries({
      client_id: sim.appId,
      redirect_uri: redirectUri,
      scope: SCOPE,
      response_type: 'code',
      state: 'st',
    }))
      authorize.searchParams.set(k, v);
    const login = await fetch(authorize, { redirect: 'manual' });
    sim.autoApprove = null;
    const code = new URL(login.headers.get('location')!).searchParams.get('code')!;
    expect(code).toBeTruthy();
    const grant = await client().exchangeCode(code, redirectUri);
    expect(grant.userId).toBe(id); // a 17-digit id keeps every digit
    expect(grant.permissions).toContain(SCOPE);
    const form = sim.requests.find((r) => r.host === 'oauth' && r.path.endsWith('/access_token'))!.form!;
    expect(form).toMatchObject({
      client_id: sim.appId,
      client_secret: sim.appSecret,
      grant_type: 'authorization_code',
      redirect_uri: redirectUri,
      code,
    });
    // the short-lived token exchanges for a long-lived one (R-TOK-1)
    expect((await client().exchangeToken(grant.accessToken)).accessToken).toBeTruthy();
    sim.requests.length = 0;
    const again = await client()
      .exchangeCode(code, redirectUri)
      .catch((e: unknown) => e);
    expect(again).toBeInstanceOf(PlatformError);
    expect((again as Error).message).not.toContain(code);
    expect(sim.requests.filter((r) => r.host === 'oauth')).toHaveLength(1);
  });

  it('R-TOK-5 a refresh of a token younger than 24 hours => TokenTooYoungError', async () => {
    const { id } = account();
    const young = sim.issueLongLivedToken(id, { issuedAt: new Date(sim.clock.now().getTime() - HOUR) });
    await expect(client().refreshToken(young)).rejects.toBeInstanceOf(TokenTooYoungError);
  });

  it('R-TOK-3 R-TOK-10 an expired token (190/463) and a changed password (190/460) are typed, never retried', async () => {
    const a = account();
    const token = longLived(a.id);
    sim.setPasswordChanged(a.id, true);
    const changed = (await client()
      .listMedia(token)
      .catch((e: unknown) => e)) as PasswordChangedError;
    expect(changed).toBeInstanceOf(PasswordChangedError);
    expect([changed.code, changed.subcode]).toEqual([190, 460]);

    const b = account();
    const old = sim.issueLongLivedToken(b.id, { issuedAt: new Date(sim.clock.now().getTime() - 61 * DAY) });
    sim.requests.length = 0;
    const expired = (await client()
      .refreshToken(old)
      .catch((e: unknown) => e)) as TokenExpiredError;
    expect(expired).toBeInstanceOf(TokenExpiredError);
    expect([expired.code, expired.subcode]).toEqual([190, 463]);
    expect(graphRequests()).toHaveLength(1);
  });

  it('R-OWN-4 a revoked token => TokenInvalidError', async () => {
    const { id } = account();
    const token = longLived(id);
    sim.revokeTokens(id);
    await expect(client().getProfile(token)).rejects.toBeInstanceOf(TokenInvalidError);
  });

  it('R-TOK-14 an account without the tester role => InsufficientDeveloperRoleError', async () => {
    const { id } = account({ tester: false });
    const err = await client()
      .listMedia(longLived(id))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InsufficientDeveloperRoleError);
    expect((err as Error).message).toMatch(/tester/);
  });
});

describe('profile against the simulator (R-OWN-5)', () => {
  it('R-OWN-5 reads user_id, username, name, account type, profile picture', async () => {
    const { id, username } = account({ accountType: 'MEDIA_CREATOR' });
    const profile = await client().getProfile(longLived(id));
    expect(profile).toMatchObject({ id, username, accountType: 'MEDIA_CREATOR' });
    const [r] = graphRequests();
    expect(r!.path).toBe(gp('/v25.0/me'));
    expect(r!.query.fields).toBe('user_id,username,name,account_type,profile_picture_url');
  });
});

describe('media edge against the simulator', () => {
  it('R-MED-1 R-MED-2 R-MED-3 versioned path, the full field list and the page size are sent', async () => {
    const { id } = account({ posts: 3 });
    const listing = await client({ pageSize: 7 }).listMedia(longLived(id));
    expect(listing.complete).toBe(true);
    const [r] = graphRequests();
    expect(r!.path).toBe(gp('/v25.0/me/media'));
    expect(r!.query.fields).toBe(FULL_FEED_FIELDS.join(','));
    expect(r!.query.limit).toBe('7');
  });

  it('R-MED-5 R-MED-7 all pages are read, short pages included; every id once', async () => {
    const { id } = account({ posts: 23 });
    const listing = await client({ pageSize: 5 }).listMedia(longLived(id));
    expect(listing.complete).toBe(true);
    expect(listing.items).toHaveLength(23);
    expect(new Set(listing.items.map((i) => i.id)).size).toBe(23);
    expect(listing.pages).toBeGreaterThanOrEqual(5);
    expect(listing.calls).toBe(graphRequests().length);
    expect(
      sim
        .posts(id)
        .map((p) => p.id)
        .sort(),
    ).toEqual(listing.items.map((i) => i.id).sort());
  });

  it('R-MED-7 a post added while paging does not duplicate an item', async () => {
    const { id } = account({ posts: 6 });
    let added = false;
    const listing = await client({ pageSize: 2 }).listMedia(longLived(id), {
      onPage: () => {
        if (!added) sim.addPost(id, { kind: 'image' });
        added = true;
      },
    });
    const ids = listing.items.map((i) => i.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBeGreaterThanOrEqual(6);
  });

  it('R-MED-4 refused caption is dropped and reported; silently omitted fields are fine', async () => {
    const refusing = account({ posts: 4, refuseFields: ['caption'] });
    const listing = await client().listMedia(longLived(refusing.id));
    expect(listing).toMatchObject({ complete: true, refusedFields: ['caption'] });
    expect(listing.items).toHaveLength(4);
    expect(graphRequests()[1]!.query.fields).not.toContain('caption');

    const both = account({ posts: 2, refuseFields: ['caption', 'media_product_type'] });
    const l2 = await client().listMedia(longLived(both.id));
    expect(l2.refusedFields.sort()).toEqual(['caption', 'media_product_type']);
    expect(l2.complete).toBe(true);

    const omitting = account({ posts: 3, omitFields: ['caption', 'media_product_type'] });
    const l3 = await client().listMedia(longLived(omitting.id));
    expect(l3).toMatchObject({ complete: true, refusedFields: [] });
    expect(l3.items.every((i) => i.caption === undefined && i.media_product_type === undefined)).toBe(true);
  });

  it('R-MED-6 a paging.next on another origin is not followed: the token never goes there', async () => {
    const { id } = account({ posts: 6 });
    // The client knows the graph host as `localhost`; the simulator writes next links for 127.0.0.1.
    const graphUrl = sim.graphUrl.replace('127.0.0.1', 'localhost');
    expect(graphUrl).not.toBe(sim.graphUrl);
    const listing = await client({ graphUrl, pageSize: 2 }).listMedia(longLived(id));
    expect(listing.complete).toBe(false);
    expect(listing.error).toBeInstanceOf(MalformedResponseError);
    expect(listing.items).toHaveLength(2);
    expect(graphRequests()).toHaveLength(1);
  });

  it('R-MED-8 a single media GET returns newly signed links after the old ones expired', async () => {
    const { id } = account({ posts: 2 });
    const token = longLived(id);
    const listing = await client().listMedia(token);
    const first = listing.items.find((i) => i.media_url)!;
    const oldOe = parseOe(first.media_url!)!;
    sim.clock.set(oldOe.getTime() + HOUR);
    const renewed = await client().getMedia(token, first.id);
    expect(graphRequests().at(-1)!.path).toBe(gp(`/v25.0/${first.id}`));
    expect(graphRequests().at(-1)!.query.fields).toContain('media_url');
    expect(parseOe(renewed.media_url!)!.getTime()).toBeGreaterThan(sim.clock.now().getTime());
  });
});

describe('failures against the simulator', () => {
  it('R-OWN-1 HTTP 429 => RateLimitedError with retryAfterMs; no tight retry', async () => {
    const { id } = account({ posts: 2 });
    sim.injectFault({ path: '/me/media', kind: 'rate-limit', times: Infinity, regainMinutes: 3 });
    const listing = await client().listMedia(longLived(id));
    expect(listing.complete).toBe(false);
    expect(listing.error).toBeInstanceOf(RateLimitedError);
    expect((listing.error as RateLimitedError).retryAfterMs).toBe(3 * 60_000);
    expect(graphRequests()).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('R-OWN-1 error code 4 (HTTP 400) => RateLimitedError, thrown from a single call', async () => {
    const { id } = account({ posts: 1 });
    sim.injectFault({ path: '/me', kind: 'rate-limit', status: 400, code: 4 });
    const c = client();
    const err = (await c.getProfile(longLived(id)).catch((e: unknown) => e)) as RateLimitedError;
    expect(err).toBeInstanceOf(RateLimitedError);
    expect(err.code).toBe(4);
    expect(err.retryAfterMs).toBeGreaterThan(0);
    expect(graphRequests()).toHaveLength(1);
  });

  it('transient 5xx is retried with backoff, then succeeds', async () => {
    const { id } = account({ posts: 3 });
    sim.injectFault({ path: '/me/media', kind: 'status', status: 503, times: 2 });
    const listing = await client().listMedia(longLived(id));
    expect(listing).toMatchObject({ complete: true, calls: 3 });
    expect(sleeps).toHaveLength(2);
  });

  it('a connection reset is retried; a server past the timeout => TransientError', async () => {
    const { id } = account({ posts: 1 });
    const token = longLived(id);
    sim.injectFault({ path: '/me', kind: 'reset', times: 1 });
    expect((await client().getProfile(token)).id).toBe(id);
    sim.injectFault({ path: '/me', kind: 'timeout', times: 1 });
    const err = await client({ timeoutMs: 200, maxRetries: 0 })
      .getProfile(token)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransientError);
  });

  it.each(['malformed-json', 'html', 'huge'] as const)(
    '%s => MalformedResponseError after bounded retries',
    async (kind) => {
      const { id } = account({ posts: 1 });
      sim.injectFault({
        path: '/me/media',
        kind,
        status: kind === 'html' ? 200 : undefined,
        sizeBytes: 20_000_000,
        times: Infinity,
      });
      const listing = await client({ maxRetries: 1, maxResponseBytes: 1_000_000 }).listMedia(longLived(id));
      expect(listing.complete).toBe(false);
      expect(listing.error).toBeInstanceOf(MalformedResponseError);
      expect(listing.error!.message).toMatch(/^media list: /);
      expect(graphRequests()).toHaveLength(2);
    },
  );

  it('R-TOK-11 R-LNK-7 R-MED-6 no token, app secret or access_token= in the log or errors across failing calls', async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _e, cb) {
        lines.push(chunk.toString());
        cb();
      },
    });
    const c = client({ logger: createLogger({ destination, level: 'debug' }), maxRetries: 1, timeoutMs: 200 });
    const { id } = account({ posts: 4 });
    const token = longLived(id);
    const short = sim.issueShortLivedToken(id);
    const errors: PlatformError[] = [];
    const faults = [
      { kind: 'status', status: 500 },
      { kind: 'rate-limit' },
      { kind: 'malformed-json' },
      { kind: 'html' },
      { kind: 'reset' },
      { kind: 'timeout' },
      { kind: 'error', code: 190, subcode: 463, message: 'Error validating access token' },
    ] as const;
    for (const f of faults) {
      sim.clearFaults();
      sim.injectFault({ ...f, match: () => true, times: Infinity });
      for (const call of [
        () => c.listMedia(token),
        () => c.getProfile(token),
        () => c.refreshToken(token),
        () => c.exchangeToken(short),
        () => c.getMedia(token, '1'),
      ]) {
        try {
          const r = (await call()) as { error?: PlatformError };
          if (r?.error) errors.push(r.error);
        } catch (e) {
          errors.push(e as PlatformError);
        }
      }
    }
    const text =
      lines.join('') +
      errors.map((e) => JSON.stringify({ m: e.message, p: e.platformMessage, s: e.stack, j: e })).join('\n');
    recordCaptured('platform-client-integration', text);
    expect(errors.length).toBeGreaterThanOrEqual(faults.length * 4);
    expect(lines.length).toBeGreaterThan(10);
    for (const secret of [token, short, sim.appSecret]) expect(text).not.toContain(secret);
    expect(text).not.toContain('access_token=');
    expect(text).not.toContain('client_secret=');
  });
});
