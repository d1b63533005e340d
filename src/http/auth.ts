import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import express, { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import type { Clock } from '../util/clock.ts';
import { HOUR, MINUTE } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import { CSRF_FIELD, csrfMatches, csrfTokenFor, hasSameOrigin, refuse } from './csrf.ts';
import { escapeHtml } from './pages.ts';

/**
 * Dashboard authentication: a login form (DASHBOARD_USER / DASHBOARD_PASSWORD) that sets a signed
 * session cookie (HMAC-SHA256, HttpOnly, SameSite=Strict, Path=/dashboard). Without credentials
 * the server starts only on a loopback address, and then the dashboard is open to whoever can
 * reach that address (the machine's own users), still with a session for CSRF tokens.
 */

export const SESSION_COOKIE = 'fm_session';
export const LOGIN_COOKIE = 'fm_login';
export const DASHBOARD_PATH = '/dashboard';
export const SESSION_TTL_MS = 12 * HOUR;

const LOOPBACK_NAMES = new Set(['localhost', '::1', '[::1]']);

/** 127.0.0.0/8, ::1 and localhost: addresses no other machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase();
  return LOOPBACK_NAMES.has(h) || /^127(\.\d{1,3}){3}$/.test(h);
}

export class DashboardAuthConfigError extends Error {
  override name = 'DashboardAuthConfigError';
}

export interface DashboardAuthSettings {
  host: string;
  user?: string | undefined;
  password?: string | undefined;
  /**
   * Server-side secret the session key is derived from (serve passes TOKEN_ENCRYPTION_KEY): every
   * replica then accepts the same sessions, and a cookie alone cannot be used to guess the
   * password offline. Without it a random key is used (sessions end with the process).
   */
  secret?: string | undefined;
  /** Public address of serve: its origin is accepted on POSTs, and https makes cookies Secure. */
  publicUrl?: string | undefined;
  clock: Clock;
  logger?: Logger;
}

export interface DashboardAuth {
  /** 'password': the login form; 'open': no credentials set, loopback only. */
  mode: 'password' | 'open';
  user: string;
  sessionKey: Buffer;
  clock: Clock;
  secureCookies: boolean;
  /** Origins accepted on state-changing requests besides the request's own host. */
  allowedOrigins: string[];
  checkCredentials(user: string, password: string): boolean;
  throttle: LoginThrottle;
  logger?: Logger | undefined;
}

/**
 * Decide how the dashboard authenticates, or refuse to start: a dashboard reachable from other
 * machines without a password would hand out "remove account" to anyone.
 */
export function resolveDashboardAuth(s: DashboardAuthSettings): DashboardAuth {
  const hasUser = Boolean(s.user);
  const hasPassword = Boolean(s.password);
  if (hasUser !== hasPassword) {
    throw new DashboardAuthConfigError(`Set both DASHBOARD_USER and DASHBOARD_PASSWORD (only ${hasUser ? 'DASHBOARD_USER' : 'DASHBOARD_PASSWORD'} is set).`);
  }
  if (!hasUser && !isLoopbackHost(s.host)) {
    throw new DashboardAuthConfigError(
      `Refusing to serve the dashboard on ${s.host} without a login: set DASHBOARD_USER and DASHBOARD_PASSWORD (at least 8 characters), or listen on a loopback address only (HOST=127.0.0.1, ::1 or localhost).`,
    );
  }
  const user = s.user ?? 'local';
  const password = s.password ?? '';
  const secret = s.secret ? Buffer.from(s.secret) : randomBytes(32);
  // The password is part of the key: changing it ends every session.
  const sessionKey = createHmac('sha256', secret).update(`feedmirror dashboard session v1\0${user}\0${password}`).digest();
  const digest = (v: string) => createHmac('sha256', sessionKey).update(v).digest();
  const expectedUser = digest(user);
  const expectedPassword = digest(password);
  let allowedOrigins: string[] = [];
  let secureCookies = false;
  if (s.publicUrl) {
    const u = new URL(s.publicUrl);
    allowedOrigins = [u.origin];
    secureCookies = u.protocol === 'https:';
  }
  if (!hasUser) s.logger?.warn({ host: s.host }, 'dashboard has no login (DASHBOARD_USER/DASHBOARD_PASSWORD unset): reachable from this machine only');
  return {
    mode: hasUser ? 'password' : 'open',
    user,
    sessionKey,
    clock: s.clock,
    secureCookies,
    allowedOrigins,
    // Fixed-length digests compared in constant time; both compared every time (no early exit
    // that would tell whether the user name was right).
    checkCredentials: (u, p) => {
      const userOk = timingSafeEqual(digest(u), expectedUser);
      const passwordOk = timingSafeEqual(digest(p), expectedPassword);
      return hasUser && userOk && passwordOk;
    },
    throttle: new LoginThrottle(s.clock),
    logger: s.logger,
  };
}

// ---- signed values (sessions, flash messages) ----

const b64 = (b: Buffer | string) => Buffer.from(b).toString('base64url');

function mac(key: Buffer, purpose: string, payload: string): Buffer {
  return createHmac('sha256', key).update(`${purpose}\0${payload}`).digest();
}

/** `payload.signature`, both base64url; the purpose keeps a flash cookie from passing as a session. */
export function signValue(key: Buffer, purpose: string, value: unknown): string {
  const payload = b64(JSON.stringify(value));
  return `${payload}.${b64(mac(key, purpose, payload))}`;
}

export function verifyValue(key: Buffer, purpose: string, signed: string | undefined): unknown {
  if (!signed) return undefined;
  const [payload, sig, extra] = signed.split('.');
  if (!payload || !sig || extra !== undefined) return undefined;
  const expected = mac(key, purpose, payload);
  const given = Buffer.from(sig, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  try {
    return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

const sessionSchema = z.object({ sid: z.string().regex(/^[A-Za-z0-9_-]{16,64}$/), u: z.string(), exp: z.number().int() });
export type Session = z.infer<typeof sessionSchema>;

export function issueSession(auth: DashboardAuth): { session: Session; cookie: string } {
  const session: Session = { sid: b64(randomBytes(18)), u: auth.user, exp: auth.clock.now().getTime() + SESSION_TTL_MS };
  return { session, cookie: signValue(auth.sessionKey, 'session', session) };
}

/** The session in a cookie value, when its signature is ours, it is unexpired and for our user. */
export function verifySession(auth: DashboardAuth, cookie: string | undefined): Session | null {
  const parsed = sessionSchema.safeParse(verifyValue(auth.sessionKey, 'session', cookie));
  if (!parsed.success) return null;
  if (parsed.data.exp <= auth.clock.now().getTime() || parsed.data.u !== auth.user) return null;
  return parsed.data;
}

/** Cookie header => name/value pairs (first occurrence wins); values are ours, so no decoding. */
export function parseCookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i < 1) continue;
    const name = part.slice(0, i).trim();
    if (!(name in out)) out[name] = part.slice(i + 1).trim();
  }
  return out;
}

export function setCookie(res: Response, auth: DashboardAuth, name: string, value: string, maxAgeMs: number): void {
  const attrs = [`${name}=${value}`, `Path=${DASHBOARD_PATH}`, 'HttpOnly', 'SameSite=Strict', `Max-Age=${Math.max(0, Math.floor(maxAgeMs / 1000))}`];
  if (auth.secureCookies) attrs.push('Secure');
  res.append('Set-Cookie', attrs.join('; '));
}

export function sessionOf(res: Response): Session {
  const s = res.locals.session as Session | undefined;
  if (!s) throw new Error('no dashboard session on this request (requireSession not mounted)');
  return s;
}

// ---- login throttle ----

/** Failed logins per client address: after 10 within 15 minutes, logins are refused for a while. */
export class LoginThrottle {
  private failures = new Map<string, number[]>();
  constructor(private readonly clock: Clock, private readonly max = 10, private readonly windowMs = 15 * MINUTE) {}

  private recent(key: string): number[] {
    const since = this.clock.now().getTime() - this.windowMs;
    const list = (this.failures.get(key) ?? []).filter((t) => t > since);
    if (list.length) this.failures.set(key, list);
    else this.failures.delete(key);
    return list;
  }

  /** Minutes until the next try is allowed, or 0. */
  blockedForMinutes(key: string): number {
    const list = this.recent(key);
    if (list.length < this.max) return 0;
    return Math.max(1, Math.ceil((list[0]! + this.windowMs - this.clock.now().getTime()) / MINUTE));
  }

  fail(key: string): void {
    this.failures.set(key, [...this.recent(key), this.clock.now().getTime()]);
  }

  succeed(key: string): void {
    this.failures.delete(key);
  }
}

// ---- routes and middleware ----

/** A `next` target inside the dashboard only (no open redirect to another site). */
export function safeNext(value: unknown): string {
  return typeof value === 'string' && /^\/dashboard(\/[A-Za-z0-9_\-./]*)?(\?[A-Za-z0-9_\-=&.%]*)?$/.test(value) && !value.includes('..') ? value : DASHBOARD_PATH;
}

function loginPage(opts: { csrf: string; next: string; message?: string }): string {
  const msg = opts.message ? `<p class="error" role="alert">${escapeHtml(opts.message)}</p>` : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Log in · feedmirror dashboard</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:24rem;margin:4rem auto;padding:0 1rem;color:#222}
label{display:block;margin:.8rem 0 .2rem}input{width:100%;padding:.4rem;font:inherit;box-sizing:border-box}
button{margin-top:1rem;padding:.5rem 1.2rem;font:inherit}.error{color:#a40000;background:#fde8e8;padding:.5rem .8rem;border-radius:4px}</style></head>
<body><h1>feedmirror dashboard</h1>${msg}
<form method="post" action="${DASHBOARD_PATH}/login">
<input type="hidden" name="${CSRF_FIELD}" value="${escapeHtml(opts.csrf)}">
<input type="hidden" name="next" value="${escapeHtml(opts.next)}">
<label for="user">User</label><input id="user" name="user" autocomplete="username" required>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Log in</button>
</form></body></html>
`;
}

const loginForm = z.object({
  user: z.string().max(256),
  password: z.string().max(1024),
  [CSRF_FIELD]: z.string().max(128),
  next: z.string().max(512).optional(),
});

/** GET/POST /dashboard/login and POST /dashboard/logout. */
export function loginRoutes(auth: DashboardAuth): Router {
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 20 });

  // Login CSRF: a random nonce in a cookie, its MAC in the form (nobody else can make the pair).
  const showLogin = (req: Request, res: Response, status: number, message?: string) => {
    const nonce = b64(randomBytes(18));
    setCookie(res, auth, LOGIN_COOKIE, nonce, 30 * MINUTE);
    const next = safeNext(typeof req.body?.next === 'string' ? req.body.next : req.query.next);
    res.status(status).set('Cache-Control', 'no-store').type('html').send(loginPage({ csrf: csrfTokenFor(auth.sessionKey, `login:${nonce}`), next, ...(message ? { message } : {}) }));
  };

  router.get(`${DASHBOARD_PATH}/login`, (req, res) => {
    if (auth.mode === 'open') return res.redirect(303, DASHBOARD_PATH);
    showLogin(req, res, 200);
  });

  router.post(`${DASHBOARD_PATH}/login`, form, (req, res) => {
    if (auth.mode === 'open') return res.redirect(303, DASHBOARD_PATH);
    if (!hasSameOrigin(req, auth.allowedOrigins)) return refuse(res, 'This form was sent from another site; log in from the dashboard itself.');
    const parsed = loginForm.safeParse(req.body);
    const nonce = parseCookies(req.headers.cookie)[LOGIN_COOKIE];
    if (!parsed.success || !nonce || !csrfMatches(auth.sessionKey, `login:${nonce}`, parsed.data[CSRF_FIELD])) {
      return refuse(res, 'The login form expired or was not sent from this dashboard. Reload the login page and try again.');
    }
    const client = req.ip ?? 'unknown';
    const wait = auth.throttle.blockedForMinutes(client);
    if (wait > 0) {
      auth.logger?.warn({ client }, 'dashboard login throttled');
      return res.status(429).set('Retry-After', String(wait * 60)).type('text/plain').send(`Too many failed logins. Try again in ${wait} minute(s).\n`);
    }
    if (!auth.checkCredentials(parsed.data.user, parsed.data.password)) {
      auth.throttle.fail(client);
      // Never say which of the two was wrong, never echo them.
      auth.logger?.warn({ client }, 'dashboard login refused');
      return showLogin(req, res, 401, 'Wrong user name or password.');
    }
    auth.throttle.succeed(client);
    const { cookie } = issueSession(auth);
    setCookie(res, auth, SESSION_COOKIE, cookie, SESSION_TTL_MS);
    setCookie(res, auth, LOGIN_COOKIE, '', 0);
    res.redirect(303, safeNext(parsed.data.next));
  });

  return router;
}

/**
 * Everything under /dashboard: a valid session or no entry. Pages (GET, HTML) redirect to the
 * login form; API calls and other methods get a plain 401. In open (loopback) mode a session is
 * issued on the spot, and the Host header must name this machine (DNS rebinding).
 */
export function requireSession(auth: DashboardAuth): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    if (auth.mode === 'open') {
      const host = (req.headers.host ?? '').replace(/:\d+$/, '');
      const publicHosts = auth.allowedOrigins.map((o) => new URL(o).hostname);
      if (!isLoopbackHost(host) && !publicHosts.includes(host)) {
        res.status(403).type('text/plain').send('This dashboard answers on its loopback address only.\n');
        return;
      }
    }
    const session = verifySession(auth, parseCookies(req.headers.cookie)[SESSION_COOKIE]);
    if (session) {
      res.locals.session = session;
      next();
      return;
    }
    if (auth.mode === 'open') {
      const issued = issueSession(auth);
      setCookie(res, auth, SESSION_COOKIE, issued.cookie, SESSION_TTL_MS);
      res.locals.session = issued.session;
      next();
      return;
    }
    res.set('Cache-Control', 'no-store');
    if ((req.method === 'GET' || req.method === 'HEAD') && req.accepts(['html', 'json']) === 'html') {
      res.redirect(303, `${DASHBOARD_PATH}/login?next=${encodeURIComponent(safeNext(req.originalUrl))}`);
      return;
    }
    res.status(401).type('text/plain').send('Log in to the dashboard first.\n');
  };
}

/** POST /dashboard/logout: ends the session in this browser. */
export function logoutHandler(auth: DashboardAuth): RequestHandler {
  return (_req, res) => {
    setCookie(res, auth, SESSION_COOKIE, '', 0);
    res.redirect(303, auth.mode === 'open' ? DASHBOARD_PATH : `${DASHBOARD_PATH}/login`);
  };
}
