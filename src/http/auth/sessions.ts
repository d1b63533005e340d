import type { Response } from 'express';
import { MINUTE } from '../../util/clock.ts';
import { newSessionId } from './session-store.ts';
import type { DashboardAuth } from './settings.ts';

/**
 * A dashboard session's life: opened at login (a fresh random id: no fixation), checked on every
 * request (it exists, is neither idle too long nor past its absolute lifetime, and was opened
 * with the current user and password), its activity written back at most once a minute. The
 * records live in the session store (session-store.ts: Redis in serve).
 */

/** A live session: its id (the cookie's value, secret) and its user. */
export interface Session {
  sid: string;
  u: string;
}

/** Activity is written back at most this often (every request would be a Redis write). */
const TOUCH_EVERY_MS = MINUTE;

const SID_RE = /^[A-Za-z0-9_-]{43}$/;

/** Whether a cookie's value has the form of a session id (anything else is never looked up). */
export function isSessionId(value: string | undefined): value is string {
  return value !== undefined && SID_RE.test(value);
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

/**
 * The session a cookie names, when it exists in the store, is neither idle too long nor past its
 * absolute lifetime, and was opened with the current user and password. Marks activity.
 */
export async function verifySession(auth: DashboardAuth, cookie: string | undefined): Promise<Session | null> {
  if (!isSessionId(cookie)) return null;
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

/** The session requireSession (middleware.ts) found for this request. */
export function sessionOf(res: Response): Session {
  const s = res.locals.session as Session | undefined;
  if (!s) throw new Error('no dashboard session on this request (requireSession not mounted)');
  return s;
}
