import type { Response } from 'express';
import { DASHBOARD_PATH } from './paths.ts';

/**
 * The dashboard's cookies: every one HttpOnly, SameSite=Strict, scoped to /dashboard, Secure
 * behind an https PUBLIC_URL. Their values are ours (base64url), so nothing is encoded or decoded.
 */
export const SESSION_COOKIE = 'fm_session';
export const LOGIN_COOKIE = 'fm_login';
export const FLASH_COOKIE = 'fm_flash';

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

/** Set (or, with an empty value and 0 ms, clear) one of our cookies. */
export function setCookie(
  res: Response,
  auth: { secureCookies: boolean },
  name: string,
  value: string,
  maxAgeMs: number,
): void {
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
