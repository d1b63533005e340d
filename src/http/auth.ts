import { readFileSync } from 'node:fs';
import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import express, { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import type { Clock } from '../util/clock.ts';
import { DAY, MINUTE } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import { CSRF_FIELD, csrfMatches, csrfTokenFor, hasSameOrigin, refuse } from './csrf.ts';
import { html } from '../util/html.ts';
import { MemorySessionStore, newSessionId, type SessionStore } from './sessions.ts';
import { LoginThrottle } from './throttle.ts';

/**
 * Dashboard authentication: a login form (DASHBOARD_USER / DASHBOARD_PASSWORD) that sets a signed
 * session cookie (HMAC-SHA256, HttpOnly, SameSite=Strict, Path=/dashboard). Without credentials
 * the server starts only on a loopback address, and then the dashboard is open to whoever can
 * reach that address (the machine's own users), still with a session for CSRF tokens.
 */

export const SESSION_COOKIE = 'fm_session';
export const LOGIN_COOKIE = 'fm_login';
export const DASHBOARD_PATH = '/dashboard';
/** Grafana's defaults (login_maximum_inactive_lifetime_duration, login_maximum_lifetime_duration). */
export const DEFAULT_SESSION_IDLE_MS = 7 * DAY;
export const DEFAULT_SESSION_MAX_MS = 30 * DAY;
/** Activity is written back at most this often (every request would be a Redis write). */
const TOUCH_EVERY_MS = MINUTE;

const LOOPBACK_NAMES = new Set(['localhost', '::1', '[::1]']);

/** 127.0.0.0/8, ::1 and localhost: addresses no other machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase();
  return LOOPBACK_NAMES.has(h) || /^127(\.\d{1,3}){3}$/.test(h);
}

export class DashboardAuthConfigError extends Error {
  override name = 'DashboardAuthConfigError';
}

/**
 * The key of the dashboard's signatures (CSRF tokens, the login form nonce, flash messages):
 * SESSION_SECRET when set, else derived from TOKEN_ENCRYPTION_KEY with HKDF under a label of its
 * own, so no key ever serves two purposes (the token cipher uses the key itself, never this).
 */
export function deriveSessionSecret(
  sessionSecret: string | undefined,
  tokenEncryptionKey: string | undefined,
): string | undefined {
  if (sessionSecret) return sessionSecret;
  if (!tokenEncryptionKey) return undefined;
  return Buffer.from(
    hkdfSync(
      'sha256',
      Buffer.from(tokenEncryptionKey, 'utf8'),
      Buffer.alloc(0),
      'feedmirror dashboard session secret v1',
      32,
    ),
  ).toString('base64url');
}

export interface DashboardAuthSettings {
  host: string;
  user?: string | undefined;
  password?: string | undefined;
  /**
   * Server-side secret the signing key is derived from (serve passes deriveSessionSecret()):
   * every replica then accepts the same CSRF tokens. Without it a random key is used.
   */
  secret?: string | undefined;
  /** Public address of serve: its origin is accepted on POSTs, and https makes cookies Secure. */
  publicUrl?: string | undefined;
  clock: Clock;
  logger?: Logger;
  /** Where sessions live (Redis in serve, so replicas share them and logout reaches all); default: this process. */
  sessions?: SessionStore | undefined;
  /** Failed-login throttle (Redis in serve); default: this process. */
  throttle?: LoginThrottle | undefined;
  /** A session unused this long ends (default 7 days). */
  sessionIdleMs?: number | undefined;
  /** A session ends this long after login, however active (default 30 days). */
  sessionMaxMs?: number | undefined;
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
  /** Fingerprint of the configured credentials, kept in each session: a password change ends them all. */
  credentialsFingerprint: string;
  sessions: SessionStore;
  sessionIdleMs: number;
  sessionMaxMs: number;
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
    throw new DashboardAuthConfigError(
      `Set both DASHBOARD_USER and DASHBOARD_PASSWORD (only ${hasUser ? 'DASHBOARD_USER' : 'DASHBOARD_PASSWORD'} is set).`,
    );
  }
  if (!hasUser && !isLoopbackHost(s.host)) {
    throw new DashboardAuthConfigError(
      `Refusing to serve the dashboard on ${s.host} without a login: set DASHBOARD_USER and DASHBOARD_PASSWORD (at least 8 characters), or listen on a loopback address only (HOST=127.0.0.1, ::1 or localhost).`,
    );
  }
  const user = s.user ?? 'local';
  const password = s.password ?? '';
  const secret = s.secret ? Buffer.from(s.secret) : randomBytes(32);
  const sessionKey = createHmac('sha256', secret).update('feedmirror dashboard signing v2').digest();
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
  if (!hasUser)
    s.logger?.warn(
      { host: s.host },
      'dashboard has no login (DASHBOARD_USER/DASHBOARD_PASSWORD unset): reachable from this machine only',
    );
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
    credentialsFingerprint: createHmac('sha256', sessionKey)
      .update(`credentials\0${user}\0${password}`)
      .digest('base64url')
      .slice(0, 22),
    sessions: s.sessions ?? new MemorySessionStore(),
    sessionIdleMs: s.sessionIdleMs ?? DEFAULT_SESSION_IDLE_MS,
    sessionMaxMs: s.sessionMaxMs ?? DEFAULT_SESSION_MAX_MS,
    throttle: s.throttle ?? new LoginThrottle({ prefix: 'local' }),
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

/** A live session: its id (the cookie's value, secret) and its user. */
export interface Session {
  sid: string;
  u: string;
}

/** How long the store keeps a session seen at `seenAt` that started at `createdAt`. */
function ttlOf(auth: DashboardAuth, createdAt: number, seenAt: number): number {
  return Math.min(seenAt + auth.sessionIdleMs, createdAt + auth.sessionMaxMs) - seenAt;
}

/** A new server-side session; the cookie carries only its random id. */
export async function issueSession(auth: DashboardAuth): Promise<{ session: Session; cookie: string }> {
  const sid = newSessionId();
  const now = auth.clock.now().getTime();
  await auth.sessions.create(
    sid,
    { user: auth.user, credentials: auth.credentialsFingerprint, createdAt: now, seenAt: now },
    ttlOf(auth, now, now),
  );
  return { session: { sid, u: auth.user }, cookie: sid };
}

const SID_RE = /^[A-Za-z0-9_-]{43}$/;

/**
 * The session a cookie names, when it exists in the store, is neither idle too long nor past its
 * absolute lifetime, and was opened with the current user and password. Marks activity.
 */
export async function verifySession(auth: DashboardAuth, cookie: string | undefined): Promise<Session | null> {
  if (!cookie || !SID_RE.test(cookie)) return null;
  const record = await auth.sessions.get(cookie);
  if (!record) return null;
  const now = auth.clock.now().getTime();
  const alive =
    record.user === auth.user &&
    record.credentials === auth.credentialsFingerprint &&
    now < record.seenAt + auth.sessionIdleMs &&
    now < record.createdAt + auth.sessionMaxMs;
  if (!alive) {
    await auth.sessions.delete(cookie);
    return null;
  }
  if (now - record.seenAt >= TOUCH_EVERY_MS) await auth.sessions.touch(cookie, now, ttlOf(auth, record.createdAt, now));
  return { sid: cookie, u: record.user };
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
  const attrs = [
    `${name}=${value}`,
    `Path=${DASHBOARD_PATH}`,
    'HttpOnly',
    'SameSite=Strict',
    `Max-Age=${Math.max(0, Math.floor(maxAgeMs / 1000))}`,
  ];
  if (auth.secureCookies) attrs.push('Secure');
  res.append('Set-Cookie', attrs.join('; '));
}

export function sessionOf(res: Response): Session {
  const s = res.locals.session as Session | undefined;
  if (!s) throw new Error('no dashboard session on this request (requireSession not mounted)');
  return s;
}

// ---- routes and middleware ----

/** A `next` target inside the dashboard only (no open redirect to another site). */
export function safeNext(value: unknown): string {
  return typeof value === 'string' &&
    /^\/dashboard(\/[A-Za-z0-9_\-./]*)?(\?[A-Za-z0-9_\-=&.%]*)?$/.test(value) &&
    !value.includes('..')
    ? value
    : DASHBOARD_PATH;
}

function loginPage(opts: { csrf: string; next: string; message?: string }): string {
  const msg = opts.message ? html`<p class="error" role="alert">${opts.message}</p>` : '';
  // The dashboard's look from its stylesheet file: no inline script or style under the CSP.
  return String(html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Log in · feedmirror dashboard</title><link rel="stylesheet" href="${DASHBOARD_PATH}/assets/dashboard.css"></head>
<body class="login"><header><span class="brand">feedmirror</span><span class="muted">dashboard</span></header>
<main><h1>Log in</h1>${msg}
<form method="post" action="${DASHBOARD_PATH}/login">
<input type="hidden" name="${CSRF_FIELD}" value="${opts.csrf}">
<input type="hidden" name="next" value="${opts.next}">
<label for="user">User</label><input id="user" name="user" autocomplete="username" required>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Log in</button>
</form></main></body></html>
`);
}

/** The stylesheet of the dashboard and its login page, read once. */
const DASHBOARD_CSS = readFileSync(new URL('./dashboard/dashboard.css', import.meta.url));

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

  // Public like the login page that uses it; it holds nothing but looks.
  router.get(`${DASHBOARD_PATH}/assets/dashboard.css`, (_req: Request, res: Response) => {
    res.set('Cache-Control', 'public, max-age=300').type('text/css').send(DASHBOARD_CSS);
  });

  // Login CSRF: a random nonce in a cookie, its MAC in the form (nobody else can make the pair).
  const showLogin = (req: Request, res: Response, status: number, message?: string) => {
    const nonce = b64(randomBytes(18));
    setCookie(res, auth, LOGIN_COOKIE, nonce, 30 * MINUTE);
    const next = safeNext(typeof req.body?.next === 'string' ? req.body.next : req.query.next);
    res
      .status(status)
      .set('Cache-Control', 'no-store')
      .type('html')
      .send(
        loginPage({ csrf: csrfTokenFor(auth.sessionKey, `login:${nonce}`), next, ...(message ? { message } : {}) }),
      );
  };

  router.get(`${DASHBOARD_PATH}/login`, (req, res) => {
    if (auth.mode === 'open') return res.redirect(303, DASHBOARD_PATH);
    showLogin(req, res, 200);
  });

  router.post(`${DASHBOARD_PATH}/login`, form, (req, res, next) => {
    login(req, res).catch(next);
  });

  const login = async (req: Request, res: Response) => {
    if (auth.mode === 'open') return res.redirect(303, DASHBOARD_PATH);
    if (!hasSameOrigin(req, auth.allowedOrigins))
      return refuse(res, 'This form was sent from another site; log in from the dashboard itself.');
    const parsed = loginForm.safeParse(req.body);
    const nonce = parseCookies(req.headers.cookie)[LOGIN_COOKIE];
    if (!parsed.success || !nonce || !csrfMatches(auth.sessionKey, `login:${nonce}`, parsed.data[CSRF_FIELD])) {
      return refuse(
        res,
        'The login form expired or was not sent from this dashboard. Reload the login page and try again.',
      );
    }
    // The client's address as TRUST_PROXY says to read it (the proxy's own address otherwise).
    const client = req.ip ?? 'unknown';
    const { user, password } = parsed.data;
    // Asked before the password is checked: a blocked address learns nothing, right or wrong.
    const verdict = await auth.throttle.check(client, user);
    if (!verdict.allowed) {
      auth.logger?.warn({ client }, 'dashboard login throttled');
      const minutes = Math.ceil(verdict.retryAfterSeconds / 60);
      return res
        .status(429)
        .set({ 'Retry-After': String(verdict.retryAfterSeconds), 'Cache-Control': 'no-store' })
        .type('text/plain')
        .send(`Too many failed logins from your address. Try again in ${minutes} minute(s).\n`);
    }
    if (!auth.checkCredentials(user, password)) {
      await auth.throttle.fail(client, user);
      // Never say which of the two was wrong, never echo them; the address is what an operator
      // (or fail2ban) acts on.
      auth.logger?.warn(
        { client, knownUser: user === auth.user },
        'dashboard login refused: wrong user name or password',
      );
      return showLogin(req, res, 401, 'Wrong user name or password.');
    }
    await auth.throttle.succeed(client);
    // A fresh id at every login (no session fixation); an older session of this browser ends.
    const previous = parseCookies(req.headers.cookie)[SESSION_COOKIE];
    if (previous && SID_RE.test(previous)) await auth.sessions.delete(previous);
    const { cookie } = await issueSession(auth);
    setCookie(res, auth, SESSION_COOKIE, cookie, auth.sessionMaxMs);
    setCookie(res, auth, LOGIN_COOKIE, '', 0);
    auth.logger?.info({ client }, 'dashboard login');
    res.redirect(303, safeNext(parsed.data.next));
  };

  return router;
}

/**
 * Everything under /dashboard: a valid session or no entry. Pages (GET, HTML) redirect to the
 * login form; API calls and other methods get a plain 401. In open (loopback) mode a session is
 * issued on the spot, and the Host header must name this machine (DNS rebinding).
 */
export function requireSession(auth: DashboardAuth): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    check(req, res, next).catch(next);
  };

  async function check(req: Request, res: Response, next: NextFunction): Promise<void> {
    if (auth.mode === 'open') {
      const host = (req.headers.host ?? '').replace(/:\d+$/, '');
      const publicHosts = auth.allowedOrigins.map((o) => new URL(o).hostname);
      if (!isLoopbackHost(host) && !publicHosts.includes(host)) {
        res.status(403).type('text/plain').send('This dashboard answers on its loopback address only.\n');
        return;
      }
    }
    const session = await verifySession(auth, parseCookies(req.headers.cookie)[SESSION_COOKIE]);
    if (session) {
      res.locals.session = session;
      next();
      return;
    }
    if (auth.mode === 'open') {
      const issued = await issueSession(auth);
      setCookie(res, auth, SESSION_COOKIE, issued.cookie, auth.sessionMaxMs);
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
  }
}

/**
 * POST /dashboard/logout: ends this session on the server (a copy of the cookie is worthless
 * afterwards). POST /dashboard/logout-everywhere: ends every session of the user, on every
 * browser and replica. Mounted behind requireSession and the CSRF check.
 */
export function logoutHandler(auth: DashboardAuth, opts: { everywhere?: boolean } = {}): RequestHandler {
  return (req, res, next) => {
    const session = sessionOf(res);
    const done = opts.everywhere ? auth.sessions.deleteAllOf(session.u) : auth.sessions.delete(session.sid);
    done
      .then((n) => {
        auth.logger?.info(
          { client: req.ip, sessions: typeof n === 'number' ? n : 1 },
          opts.everywhere ? 'dashboard: logged out everywhere' : 'dashboard: logged out',
        );
        setCookie(res, auth, SESSION_COOKIE, '', 0);
        res.redirect(303, auth.mode === 'open' ? DASHBOARD_PATH : `${DASHBOARD_PATH}/login`);
      })
      .catch(next);
  };
}
