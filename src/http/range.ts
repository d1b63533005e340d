/**
 * HTTP Range requests (RFC 9110 14) on one object, as S3 and CDNs answer them: a single byte
 * range `bytes=a-b`, `bytes=a-` or `bytes=-n` is served as 206 Partial Content; a range starting
 * past the end is 416 with `Content-Range: bytes * /<size>`; anything else (no header, another
 * unit, several ranges, a malformed one) is served whole with 200, which the RFC allows. Safari
 * plays a video only from a server that answers them.
 */
export type RangeAnswer =
  { kind: 'whole' } | { kind: 'partial'; start: number; end: number } | { kind: 'unsatisfiable' };

export function parseRange(header: string | undefined, size: number): RangeAnswer {
  if (!header) return { kind: 'whole' };
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m || (m[1] === '' && m[2] === '')) return { kind: 'whole' };
  if (m[1] === '') {
    // A suffix: the last n bytes (all of them when n is larger than the object).
    const n = Number(m[2]);
    if (n === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'partial', start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (!Number.isSafeInteger(start) || start >= size) return { kind: 'unsatisfiable' };
  if (end < start) return { kind: 'whole' }; // an invalid range is ignored
  return { kind: 'partial', start, end };
}
