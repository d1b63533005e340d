import { z } from 'zod';

/**
 * Platform ids (accounts, media) as feedmirror accepts them anywhere: they become object keys,
 * URL paths and job payloads, so nothing but letters, digits, `_` and `-` (no path traversal).
 */
export const ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

export function idSchema(what: string) {
  return z.string().regex(ID_PATTERN, `${what} must be 1-128 characters of A-Z a-z 0-9 _ -`);
}

/**
 * FNV-1a (32 bits) of an id: a stable, evenly spread number for placing an account somewhere in a
 * period (its schedules' offset in the hour, its feed check's window), the same in every process.
 */
export function stableIdHash(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    h ^= id.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}
