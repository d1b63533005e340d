import type { Router } from 'express';
import { logoutHandler } from '../auth/routes.ts';
import type { DashboardContext } from './context.ts';

/**
 * The session's own actions behind the login: log out (this session) and log out everywhere
 * (every session of the user, on every browser and replica). The login itself is public
 * (auth/routes.ts).
 */
export function registerSessionRoutes(guarded: Router, c: DashboardContext): void {
  guarded.post('/logout', logoutHandler(c.deps.auth));
  guarded.post('/logout-everywhere', logoutHandler(c.deps.auth, { everywhere: true }));
}
