import express, { Router, type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import { MINUTE } from '../../util/clock.ts';
import { CSRF_FIELD, csrfMatches, csrfTokenFor, hasSameOrigin, refuse } from '../csrf.ts';
import { LOGIN_COOKIE, SESSION_COOKIE, parseCookies, setCookie } from './cookies.ts';
import { DASHBOARD_CSS, loginPage } from './login-page.ts';
import { DASHBOARD_PATH, safeNext } from './paths.ts';
import { isSessionId, issueSession, sessionOf } from './sessions.ts';
import { randomNonce } from './signing.ts';
import type { DashboardAuth } from './settings.ts';

/** GET/POST /dashboard/login, the stylesheet it shares with the dashboard, and the logout handlers. */

const loginForm = z.object({
  user: z.string().max(256),
  password: z.string().max(1024),
  [CSRF_FIELD]: z.string().max(128),
  next: z.string().max(512).optional(),
});

/** GET/POST /dashboard/login and the dashboard's stylesheet. */
export function loginRoutes(auth: DashboardAuth): Router {
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 20 });

  // Public like the login page that uses it; it holds nothing but looks.
  router.get(`${DASHBOARD_PATH}/assets/dashboard.css`, (_req: Request, res: Response) => {
    res.set('Cache-Control', 'public, max-age=300').type('text/css').send(DASHBOARD_CSS);
  });

  router.get(`${DASHBOARD_PATH}/login`, (req, res) => {
    if (auth.mode === 'open') return res.redirect(303, DASHBOARD_PATH);
    showLogin(auth, req, res, 200);
  });

  router.post(`${DASHBOARD_PATH}/login`, form, (req, res, next) => {
    login(auth, req, res).catch(next);
  });

  return router;
}

/** The login form. Login CSRF: a random nonce in a cookie, its MAC in the form (nobody else can make the pair). */
function showLogin(auth: DashboardAuth, req: Request, res: Response, status: number, message?: string): void {
  const nonce = randomNonce();
  setCookie(res, auth, LOGIN_COOKIE, nonce, 30 * MINUTE);
  const posted = (req.body as { next?: unknown } | undefined)?.next;
  const next = safeNext(typeof posted === 'string' ? posted : req.query.next);
  res
    .status(status)
    .set('Cache-Control', 'no-store')
    .type('html')
    .send(loginPage({ csrf: csrfTokenFor(auth.sessionKey, `login:${nonce}`), next, ...(message ? { message } : {}) }));
}

/** POST /dashboard/login: origin, form token, throttle, credentials; then a fresh session. */
async function login(auth: DashboardAuth, req: Request, res: Response): Promise<void> {
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
    res
      .status(429)
      .set({ 'Retry-After': String(verdict.retryAfterSeconds), 'Cache-Control': 'no-store' })
      .type('text/plain')
      .send(`Too many failed logins from your address. Try again in ${minutes} minute(s).\n`);
    return;
  }
  if (!auth.checkCredentials(user, password)) {
    await auth.throttle.fail(client, user);
    // Never say which of the two was wrong, never echo them; the address is what an operator
    // (or fail2ban) acts on.
    auth.logger?.warn(
      { client, knownUser: user === auth.user },
      'dashboard login refused: wrong user name or password',
    );
    return showLogin(auth, req, res, 401, 'Wrong user name or password.');
  }
  await auth.throttle.succeed(client);
  // A fresh id at every login (no session fixation); an older session of this browser ends.
  const previous = parseCookies(req.headers.cookie)[SESSION_COOKIE];
  if (isSessionId(previous)) await auth.sessions.delete(previous);
  const { cookie } = await issueSession(auth);
  setCookie(res, auth, SESSION_COOKIE, cookie, auth.sessionMaxMs);
  setCookie(res, auth, LOGIN_COOKIE, '', 0);
  auth.logger?.info({ client }, 'dashboard login');
  res.redirect(303, safeNext(parsed.data.next));
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
