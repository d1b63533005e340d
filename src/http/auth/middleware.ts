import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { SESSION_COOKIE, parseCookies, setCookie } from './cookies.ts';
import { DASHBOARD_PATH, safeNext } from './paths.ts';
import { issueSession, verifySession } from './sessions.ts';
import { isLoopbackHost, type DashboardAuth } from './settings.ts';

/**
 * Everything under /dashboard: a valid session or no entry. Pages (GET, HTML) redirect to the
 * login form; API calls and other methods get a plain 401. In open (loopback) mode a session is
 * issued on the spot, and the Host header must name this machine (DNS rebinding).
 */
export function requireSession(auth: DashboardAuth): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    check(auth, req, res, next).catch(next);
  };
}

async function check(auth: DashboardAuth, req: Request, res: Response, next: NextFunction): Promise<void> {
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
