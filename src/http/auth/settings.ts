import type { Clock } from '../../util/clock.ts';
import { DAY } from '../../util/clock.ts';
import type { Logger } from '../../util/logger.ts';
import { LoginThrottle } from '../throttle.ts';
import { MemorySessionStore, type SessionStore } from './session-store.ts';
import { credentialsChecker, credentialsFingerprint, signingKey } from './signing.ts';

/**
 * How the dashboard authenticates: a login form (DASHBOARD_USER / DASHBOARD_PASSWORD) that opens
 * a server-side session whose random id is the cookie (HttpOnly, SameSite=Strict,
 * Path=/dashboard). Without credentials the server starts only on a loopback address, and then
 * the dashboard is open to whoever can reach that address (the machine's own users), still with
 * a session for CSRF tokens.
 *
 * The parts: signing.ts (keys, HMAC), session-store.ts (Redis), sessions.ts (open, check, end),
 * cookies.ts, login-page.ts, routes.ts (log in and out), middleware.ts (requireSession).
 */

/** Grafana's defaults (login_maximum_inactive_lifetime_duration, login_maximum_lifetime_duration). */
export const DEFAULT_SESSION_IDLE_MS = 7 * DAY;
export const DEFAULT_SESSION_MAX_MS = 30 * DAY;

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
  const sessionKey = signingKey(s.secret);
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
    checkCredentials: credentialsChecker(sessionKey, { user, password, configured: hasUser }),
    credentialsFingerprint: credentialsFingerprint(sessionKey, user, password),
    sessions: s.sessions ?? new MemorySessionStore(),
    sessionIdleMs: s.sessionIdleMs ?? DEFAULT_SESSION_IDLE_MS,
    sessionMaxMs: s.sessionMaxMs ?? DEFAULT_SESSION_MAX_MS,
    throttle: s.throttle ?? new LoginThrottle({ prefix: 'local' }),
    logger: s.logger,
  };
}
