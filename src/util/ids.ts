import { z } from 'zod';

/**
 * Platform ids (accounts, media) as feedmirror accepts them anywhere: they become object keys,
 * URL paths and job payloads, so nothing but letters, digits, `_` and `-` (no path traversal).
 */
export const ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

export function idSchema(what: string) {
  return z.string().regex(ID_PATTERN, `${what} must be 1-128 characters of A-Z a-z 0-9 _ -`);
}
