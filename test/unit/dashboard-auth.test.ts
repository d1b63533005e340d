import { describe, expect, it } from 'vitest';
import type { Request } from 'express';
import { parseCookies } from '../../src/http/auth/cookies.ts';
import { safeNext } from '../../src/http/auth/paths.ts';
import { MemorySessionStore } from '../../src/http/auth/session-store.ts';
import { issueSession, verifySession } from '../../src/http/auth/sessions.ts';
import { DashboardAuthConfigError, isLoopbackHost, resolveDashboardAuth } from '../../src/http/auth/settings.ts';
import { deriveSessionSecret, signValue, verifyValue } from '../../src/http/auth/signing.ts';
import { LoginThrottle } from '../../src/http/throttle.ts';
import { csrfMatches, csrfTokenFor, hasSameOrigin } from '../../src/http/csrf.ts';
import { explainError, lastProblem } from '../../src/http/dashboard/explain.ts';
import { syncSummary } from '../../src/accounts/sync-summary.ts';
import { errorKind } from '../../src/util/error-kinds.ts';
import {
  InsufficientDeveloperRoleError,
  PersonalAccountError,
  RateLimitedError,
  TokenExpiredError,
  TokenInvalidError,
  TransientError,
} from '../../src/platform/errors.ts';
import { StorageError } from '../../src/storage/errors.ts';
import { formatBytes } from '../../src/http/dashboard/data.ts';
import { ManualClock, MINUTE } from '../../src/util/clock.ts';

const clock = new ManualClock();
const auth = (over: Partial<Parameters<typeof resolveDashboardAuth>[0]> = {}) =>
  resolveDashboardAuth({
    host: '0.0.0.0',
    user: 'operator',
    password: 'correct horse',
    secret: 's3cret',
    publicUrl: 'https://feeds.example',
    clock,
    ...over,
  });

function req(headers: Record<string, string>, host = 'feeds.example', protocol = 'https'): Request {
  return { headers: { host, ...headers }, protocol } as unknown as Request;
}

describe('dashboard start-up rule', () => {
  it('loopback addresses are 127.0.0.0/8, ::1 and localhost only', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', 'LOCALHOST'])
      expect(isLoopbackHost(h), h).toBe(true);
    for (const h of ['0.0.0.0', '::', '10.0.0.1', '192.168.1.2', 'example.com', '127.0.0.1.evil.com'])
      expect(isLoopbackHost(h), h).toBe(false);
  });

  it('refuses a non-loopback host without credentials, naming both variables', () => {
    expect(() => resolveDashboardAuth({ host: '0.0.0.0', clock })).toThrow(DashboardAuthConfigError);
    expect(() => resolveDashboardAuth({ host: '0.0.0.0', clock })).toThrow(/DASHBOARD_USER and DASHBOARD_PASSWORD/);
    expect(() => resolveDashboardAuth({ host: '127.0.0.1', user: 'x', clock })).toThrow(/only DASHBOARD_USER is set/);
  });

  it('on loopback without credentials the dashboard is open (and logs cannot pass as passwords)', () => {
    const open = resolveDashboardAuth({ host: '127.0.0.1', clock });
    expect(open.mode).toBe('open');
    expect(open.checkCredentials('local', '')).toBe(false);
  });
});

describe('credentials and sessions', () => {
  it('accepts only the exact user and password', () => {
    const a = auth();
    expect(a.checkCredentials('operator', 'correct horse')).toBe(true);
    expect(a.checkCredentials('operator', 'correct horsE')).toBe(false);
    expect(a.checkCredentials('operato', 'correct horse')).toBe(false);
    expect(a.checkCredentials('', '')).toBe(false);
    expect(a.secureCookies).toBe(true); // https PUBLIC_URL
  });

  it('a session lives on the server: verifies until idle too long or past its lifetime; forged, tampered or foreign ids never do', async () => {
    const sessions = new MemorySessionStore();
    const a = auth({ sessions, sessionIdleMs: 60 * MINUTE, sessionMaxMs: 3 * 60 * MINUTE });
    const { cookie } = await issueSession(a);
    expect(cookie).toMatch(/^[A-Za-z0-9_-]{43}$/); // a random id, nothing readable or signable
    expect((await verifySession(a, cookie))?.u).toBe('operator');
    expect(await verifySession(a, `${cookie.slice(0, -1)}${cookie.endsWith('A') ? 'B' : 'A'}`)).toBeNull();
    expect(
      await verifySession(
        a,
        Buffer.from(JSON.stringify({ sid: 'a'.repeat(24), u: 'operator', exp: Date.now() * 2 })).toString('base64url'),
      ),
    ).toBeNull();
    // A password change ends it (the record carries the credentials' fingerprint).
    expect(await verifySession(auth({ sessions, password: 'another password' }), cookie)).toBeNull();
    // Activity keeps it alive up to the absolute lifetime; idleness ends it sooner.
    const b = auth({ sessions: new MemorySessionStore(), sessionIdleMs: 60 * MINUTE, sessionMaxMs: 3 * 60 * MINUTE });
    const active = (await issueSession(b)).cookie;
    const idle = (await issueSession(b)).cookie;
    for (let i = 0; i < 4; i++) {
      clock.advance(40 * MINUTE);
      expect(await verifySession(b, active), `after ${(i + 1) * 40} min`).not.toBeNull();
    }
    expect(await verifySession(b, idle)).toBeNull(); // unused for 160 minutes > 60
    clock.advance(25 * MINUTE); // 185 minutes > the 180-minute lifetime
    expect(await verifySession(b, active)).toBeNull();
  });

  it('logout ends one session, "log out everywhere" every session of the user', async () => {
    const a = auth({ sessions: new MemorySessionStore() });
    const [one, two, three] = await Promise.all([issueSession(a), issueSession(a), issueSession(a)]);
    await a.sessions.delete(one.cookie);
    expect(await verifySession(a, one.cookie)).toBeNull();
    expect(await verifySession(a, two.cookie)).not.toBeNull();
    expect(await a.sessions.deleteAllOf('operator')).toBe(2);
    expect(await verifySession(a, two.cookie)).toBeNull();
    expect(await verifySession(a, three.cookie)).toBeNull();
  });

  it('the signing secret is SESSION_SECRET, else an HKDF derivation of the encryption key under its own label', () => {
    expect(deriveSessionSecret('s'.repeat(40), 'key')).toBe('s'.repeat(40));
    const derived = deriveSessionSecret(undefined, 'the-token-encryption-key');
    expect(derived).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(derived).not.toContain('the-token-encryption-key');
    expect(deriveSessionSecret(undefined, 'another-key')).not.toBe(derived);
    expect(deriveSessionSecret(undefined, undefined)).toBeUndefined();
    // Flash cookies signed with one key do not verify under another.
    const a = auth({ secret: derived });
    expect(
      verifyValue(auth({ secret: 'other' }).sessionKey, 'flash', signValue(a.sessionKey, 'flash', { x: 1 })),
    ).toBeUndefined();
    expect(verifyValue(a.sessionKey, 'session', signValue(a.sessionKey, 'flash', { x: 1 }))).toBeUndefined();
  });

  it('parses cookie headers', () => {
    expect(parseCookies('a=1; fm_session=x.y; a=2')).toEqual({ a: '1', fm_session: 'x.y' });
    expect(parseCookies(undefined)).toEqual({});
  });

  it('after 10 failed logins an address waits; other addresses, and a correct password from them, do not', async () => {
    const t = new LoginThrottle({ prefix: 'unit' });
    for (let i = 0; i < 9; i++) await t.fail('1.2.3.4', 'operator');
    expect((await t.check('1.2.3.4', 'operator')).allowed).toBe(true);
    await t.fail('1.2.3.4', 'operator');
    const blocked = await t.check('1.2.3.4', 'operator');
    expect(blocked.allowed).toBe(false);
    expect(blocked.retryAfterSeconds).toBeGreaterThan(14 * 60);
    expect(blocked.retryAfterSeconds).toBeLessThanOrEqual(15 * 60);
    expect((await t.check('1.2.3.4', 'someone-else')).allowed).toBe(false); // the address, whatever the name
    expect((await t.check('5.6.7.8', 'operator')).allowed).toBe(true);
  });

  it('a user name under attack from many addresses: addresses that failed wait, a clean one may still log in', async () => {
    const t = new LoginThrottle(
      { prefix: 'unit' },
      { perClient: 10, perClientWindowS: 900, perClientDaily: 100, perUserUnderAttack: 5 },
    );
    for (let i = 0; i < 6; i++) await t.fail(`10.0.0.${i}`, 'Operator');
    expect((await t.check('10.0.0.1', 'operator')).allowed).toBe(false); // NFKC + lower-case: the same name
    expect((await t.check('10.0.0.1', 'other')).allowed).toBe(true);
    expect((await t.check('192.0.2.7', 'operator')).allowed).toBe(true);
  });

  it('redirects after login stay inside the dashboard', () => {
    expect(safeNext('/dashboard/accounts/1/preview?layout=list')).toBe('/dashboard/accounts/1/preview?layout=list');
    for (const bad of ['https://evil.example', '//evil.example', '/dashboardx', '/feeds/1.json', '/dashboard/../x', 42])
      expect(safeNext(bad)).toBe('/dashboard');
  });
});

describe('CSRF', () => {
  it('the token is bound to the session', () => {
    const key = auth().sessionKey;
    const t = csrfTokenFor(key, 'session-a');
    expect(csrfMatches(key, 'session-a', t)).toBe(true);
    expect(csrfMatches(key, 'session-b', t)).toBe(false);
    expect(csrfMatches(key, 'session-a', undefined)).toBe(false);
    expect(csrfMatches(key, 'session-a', '')).toBe(false);
    expect(csrfMatches(key, 'session-a', t.slice(1))).toBe(false);
  });

  it('same-origin: Sec-Fetch-Site wins, else Origin must be ours; neither => refused', () => {
    expect(hasSameOrigin(req({ 'sec-fetch-site': 'same-origin' }), [])).toBe(true);
    expect(hasSameOrigin(req({ 'sec-fetch-site': 'same-site', origin: 'https://feeds.example' }), [])).toBe(false);
    expect(hasSameOrigin(req({ 'sec-fetch-site': 'cross-site' }), [])).toBe(false);
    expect(hasSameOrigin(req({ origin: 'https://feeds.example' }), [])).toBe(true);
    expect(hasSameOrigin(req({ origin: 'https://evil.example' }), [])).toBe(false);
    expect(
      hasSameOrigin(req({ origin: 'https://public.example' }, 'internal:8080', 'http'), ['https://public.example']),
    ).toBe(true);
    expect(hasSameOrigin(req({ origin: 'null' }), [])).toBe(false);
    expect(hasSameOrigin(req({}), [])).toBe(false);
  });
});

describe('errors in operator words (R-TOK-10, R-TOK-13, R-TOK-14, R-OWN-1, R-OWN-4)', () => {
  it('explains an error by the kind its class carries, never by its message', () => {
    const explain = (err: Error) => explainError(errorKind(err), err.message)?.summary;
    expect(explain(new TokenInvalidError('rejected', { code: 190, subcode: 460 }))).toMatch(/changed their password/);
    expect(explain(new TokenExpiredError('whatever the text', { code: 190, subcode: 463 }))).toMatch(/expired/);
    expect(explain(new TokenInvalidError('Invalid OAuth access token', { code: 190, subcode: 467 }))).toMatch(
      /no longer accepts/,
    );
    expect(explain(new TokenInvalidError('no subcode', { code: 190 }))).toMatch(/no longer accepts/); // R-OWN-4
    expect(explain(new InsufficientDeveloperRoleError('x'))).toMatch(/tester role/);
    expect(explain(new PersonalAccountError('x'))).toMatch(/personal account/);
    expect(explain(new RateLimitedError('x', { code: 4 }))).toMatch(/rate limit/);
    expect(explain(new TransientError('socket hang up'))).toMatch(/could not be reached/);
    expect(explain(new StorageError('put failed', { retryable: true }))).toMatch(/storage/);
    // A message that merely mentions a password is not mistaken for one (the old regexes did).
    expect(explain(new Error('password column missing'))).toMatch(/inside feedmirror/);
    expect(explainError(null, null)).toBeNull();
  });

  it('never shows a token held in a stored error text', () => {
    const e = explainError('network', 'GET https://graph.example/me?access_token=IGQVJabcdefghijklmnop failed');
    expect(e?.detail).not.toContain('IGQVJabcdefghijklmnop');
  });

  it('the most pressing problem comes first', () => {
    const base = {
      status: 'active' as const,
      statusReason: null,
      statusReasonKind: null,
      lastSyncError: null,
      lastSyncErrorKind: null,
      lastRefreshError: null,
      lastRefreshErrorKind: null,
      hasToken: true,
      daysLeft: 20,
    };
    expect(lastProblem(base)).toBeNull();
    expect(lastProblem({ ...base, daysLeft: -1 })?.summary).toMatch(/expired/);
    expect(lastProblem({ ...base, hasToken: false })?.summary).toMatch(/No access/);
    expect(
      lastProblem({ ...base, lastSyncError: 'user request limit reached', lastSyncErrorKind: 'rate_limit' as const })
        ?.summary,
    ).toMatch(/rate limit/);
    expect(
      lastProblem({
        ...base,
        status: 'reauth_required',
        statusReason: 'rejected',
        statusReasonKind: 'password_changed' as const,
        lastSyncError: 'rate limited',
        lastSyncErrorKind: 'rate_limit' as const,
      })?.summary,
    ).toMatch(/password/);
  });

  it('never says ok about a sync that failed or skipped items', () => {
    const at = new Date('2026-05-01T00:00:00Z');
    const base = { lastSyncAt: at, lastSyncError: null, lastSyncErrorKind: null, skippedItems: 0, skippedReasons: [] };
    expect(syncSummary({ ...base, lastSyncAt: null })).toEqual({ state: 'never', text: 'not synced yet' });
    // The run itself: "complete"; "ok" is the account's health alone (R-HLT-1).
    expect(syncSummary(base)).toEqual({ state: 'complete', text: 'complete' });
    expect(
      syncSummary({
        ...base,
        lastSyncOutcome: 'incomplete' as const,
        lastSyncError: 'page 2: HTTP 500',
        lastSyncErrorKind: 'platform' as const,
      }),
    ).toEqual({ state: 'incomplete', text: 'listing incomplete: platform: page 2: HTTP 500' });
    expect(
      syncSummary({ ...base, lastSyncError: 'media list: HTTP 500', lastSyncErrorKind: 'platform' as const }),
    ).toEqual({ state: 'failed', text: 'sync failed: platform: media list: HTTP 500' });
    expect(
      syncSummary({ ...base, skippedItems: 1, skippedReasons: [{ id: '1799.1', reason: 'malformed id' }] }),
    ).toEqual({ state: 'skipped', text: '1 item skipped: 1799.1: malformed id' });
  });

  it('formats bytes', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.5 KB');
    expect(formatBytes(5 * 1024 * 1024)).toBe('5.0 MB');
  });
});
