/** Absolute http(s) only: a feed cannot smuggle javascript: links. */
export function safeUrl(value: unknown): string | null {
  if (typeof value !== 'string' || !/^https?:\/\//i.test(value)) return null;
  return value;
}

/** A finite number above 0, rounded; anything else null. */
export function positive(n: unknown): number | null {
  return typeof n === 'number' && isFinite(n) && n > 0 ? Math.round(n) : null;
}
