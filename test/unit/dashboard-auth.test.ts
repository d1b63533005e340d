import { describe, expect, it } from 'vitest';
import type { Request } from 'express';
import { DashboardAuthConfigError, isLoopbackHost, LoginThrottle, resolveDashboardAuth, safeNext, signValue, issueSession, verifySession, verifyValue, parseCookies, SESSION_TTL_MS } from '../../src/http/auth.ts';
import { csrfMatches, csrfTokenFor, hasSameOrigin } from '../../src/http/csrf.ts';
import { explainError, lastProblem } from '../../src/http/dashboard/explain.ts';
import { formatBytes } from '../../src/http/dashboard/data.ts';
import { ManualClock, MINUTE } from '../../src/util/clock.ts';

const clock = new ManualClock();
const auth = (over: Partial<Parameters<typeof resolveDashboardAuth>[0]> = {}) =>
  resolveDashboardAuth({ host: '0.0.0.0', user: 'operator', password: 'correct horse', secret: 's3cret', publicUrl: 'https://feeds.example', clock, ...over });

function req(headers: Record<string, string>, host = 'feeds.example', protocol = 'https'): Request {
  return { headers: { host, ...headers }, protocol } as unknown as Request;
}

describe('dashboard start-up rule', () => {
  it('loopback addresses are 127.0.0.0/8, ::1 and localhost only', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', 'LOCALHOST']) expect(isLoopbackHost(h), h).toBe(true);
    for (const h of ['0.0.0.0', '::', '10.0.0.1', '192.168.1.2', 'example.com', '127.0.0.1.evil.com']) expect(isLoopbackHost(h), h).toBe(false);
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

  it('a session verifies until it expires; a tampered or foreign one never does', () => {
    const a = auth();
    const { cookie } = issueSession(a);
    expect(verifySession(a, cookie)?.u).toBe('operator');
    const [payload, sig] = cookie.split('.');
    const forged = Buffer.from(JSON.stringify({ sid: 'a'.repeat(24), u: 'operator', exp: Date.now() * 2 })).toString('base64url');
    expect(verifySession(a, `${forged}.${sig}`)).toBeNull();
    expect(verifySession(a, `${payload}.${sig}x`)).toBeNull();
    expect(verifySession(auth({ password: 'another password' }), cookie)).toBeNull(); // a password change ends sessions
    expect(verifySession(auth({ secret: 'other' }), cookie)).toBeNull();
    // A flash cookie (same key, other purpose) is not a session.
    expect(verifyValue(a.sessionKey, 'session', signValue(a.sessionKey, 'flash', { sid: 'a'.repeat(24), u: 'operator', exp: 1e15 }))).toBeUndefined();
    clock.advance(SESSION_TTL_MS);
    expect(verifySession(a, cookie)).toBeNull();
  });

  it('parses cookie headers', () => {
    expect(parseCookies('a=1; fm_session=x.y; a=2')).toEqual({ a: '1', fm_session: 'x.y' });
    expect(parseCookies(undefined)).toEqual({});
  });

  it('after 10 failed logins within 15 minutes a client waits', () => {
    const c = new ManualClock();
    const t = new LoginThrottle(c);
    for (let i = 0; i < 9; i++) t.fail('1.2.3.4');
    expect(t.blockedForMinutes('1.2.3.4')).toBe(0);
    t.fail('1.2.3.4');
    expect(t.blockedForMinutes('1.2.3.4')).toBe(15);
    expect(t.blockedForMinutes('5.6.7.8')).toBe(0);
    c.advance(15 * MINUTE + 1);
    expect(t.blockedForMinutes('1.2.3.4')).toBe(0);
  });

  it('redirects after login stay inside the dashboard', () => {
    expect(safeNext('/dashboard/accounts/1/preview?layout=list')).toBe('/dashboard/accounts/1/preview?layout=list');
    for (const bad of ['https://evil.example', '//evil.example', '/dashboardx', '/feeds/1.json', '/dashboard/../x', 42]) expect(safeNext(bad)).toBe('/dashboard');
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
    expect(hasSameOrigin(req({ origin: 'https://public.example' }, 'internal:8080', 'http'), ['https://public.example'])).toBe(true);
    expect(hasSameOrigin(req({ origin: 'null' }), [])).toBe(false);
    expect(hasSameOrigin(req({}), [])).toBe(false);
  });
});

describe('errors in operator words (R-TOK-10, R-TOK-13, R-TOK-14, R-OWN-1, R-OWN-4)', () => {
  it('maps platform codes and messages to what to do', () => {
    expect(explainError('the platform rejected the token: x (code 190/460)')?.summary).toMatch(/changed their password/);
    expect(explainError('the token expired on 2026-01-01T00:00:00.000Z before it could be refreshed')?.summary).toMatch(/expired/);
    expect(explainError('Invalid OAuth access token (code 190/467)')?.summary).toMatch(/no longer accepts/);
    expect(explainError('Insufficient developer role')?.summary).toMatch(/tester role/);
    expect(explainError('rate limited (code 4)')?.summary).toMatch(/rate limit/);
    expect(explainError('connect ECONNREFUSED 1.2.3.4:443')?.summary).toMatch(/could not be reached/);
    expect(explainError('something odd')).toEqual({ summary: 'something odd', detail: 'something odd' });
    expect(explainError(null)).toBeNull();
  });

  it('never shows a token held in a stored error text', () => {
    const e = explainError('GET https://graph.example/me?access_token=IGQVJabcdefghijklmnop failed');
    expect(e?.detail).not.toContain('IGQVJabcdefghijklmnop');
  });

  it('the most pressing problem comes first', () => {
    const base = { status: 'active' as const, statusReason: null, lastSyncError: null, lastRefreshError: null, hasToken: true, daysLeft: 20 };
    expect(lastProblem(base)).toBeNull();
    expect(lastProblem({ ...base, daysLeft: -1 })?.summary).toMatch(/expired/);
    expect(lastProblem({ ...base, hasToken: false })?.summary).toMatch(/No access/);
    expect(lastProblem({ ...base, lastSyncError: 'rate limited (code 17)' })?.summary).toMatch(/rate limit/);
    expect(lastProblem({ ...base, status: 'reauth_required', statusReason: 'code 190/460', lastSyncError: 'rate limited' })?.summary).toMatch(/password/);
  });

  it('formats bytes', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.5 KB');
    expect(formatBytes(5 * 1024 * 1024)).toBe('5.0 MB');
  });
});
