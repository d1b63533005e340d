/**
 * RFC 9110 §13.1.2 and §13.1.3 for GET/HEAD at the origin: does a conditional request match the
 * representation we hold (answer 304)? Not Express's req.fresh (the `fresh` package): it treats a
 * request's `Cache-Control: no-cache` as "never fresh", a rule for caches, and Node's own fetch
 * adds that header to every request carrying If-None-Match, so a server-side revalidation (a
 * Next.js route, a build script) would never get its 304.
 */
export interface Validators {
  etag?: string | undefined;
  lastModified?: Date | undefined;
}

/** Weak comparison (§8.8.3.2): W/"x" and "x" are the same entity tag. */
function opaque(tag: string): string {
  return tag.trim().replace(/^W\//, '');
}

export function notModified(
  headers: { 'if-none-match'?: string | undefined; 'if-modified-since'?: string | undefined },
  current: Validators,
): boolean {
  const inm = headers['if-none-match'];
  if (inm !== undefined) {
    // If-None-Match present: If-Modified-Since is ignored (§13.1.3).
    if (!current.etag) return false;
    if (inm.trim() === '*') return true;
    const ours = opaque(current.etag);
    return inm.split(',').some((t) => opaque(t) === ours);
  }
  const ims = headers['if-modified-since'];
  if (ims !== undefined && current.lastModified) {
    const since = Date.parse(ims);
    if (Number.isNaN(since)) return false; // an invalid date is ignored (§13.1.3)
    // HTTP dates have whole seconds: compare at that precision.
    return Math.floor(current.lastModified.getTime() / 1000) <= Math.floor(since / 1000);
  }
  return false;
}
