import { createHash } from 'node:crypto';

/**
 * How a post, a feed or any published document is identified across re-signed links: a link's
 * identity without its signature, and a content hash that ignores signatures. Pure functions that
 * every layer may use (the feed pipeline, the deletion guard's proof of ownership, widgets, verify).
 */

/**
 * A link's identity without its signed query string (oe, signature): scheme, host and path. A
 * re-signed link of the same file keeps it; a new file (an edited post) has a new path.
 */
export function sourceIdOf(url: string): string {
  // Most links are plain (a lowercase host name, a path of unreserved characters): for those the
  // parsed URL's origin and path are the text before the query, and the content hash meets every
  // link of every post of every sync, so parsing them all would dominate it. Anything else is parsed.
  const plain = PLAIN_LINK.exec(url);
  if (plain && isPlain(plain)) return plain[1]!;
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return url.split('?')[0] ?? url;
  }
}

/**
 * http(s); a host name of lowercase labels whose last has a letter, or an IPv4 address written
 * the usual way (other forms are rewritten by the parser); no user; a port without leading zero;
 * a path of unreserved characters and escapes; then the query or the end.
 */
const PLAIN_LINK =
  /^((https?):\/\/(?:(?:[a-z0-9-]+\.)*[a-z0-9-]*[a-z][a-z0-9-]*|(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9]))(?::([1-9][0-9]{0,4}))?\/[A-Za-z0-9\-._~%/]*)(?:\?|$)/;

/** What the parser would still rewrite: a default or impossible port, dot segments. */
function isPlain(m: RegExpExecArray): boolean {
  const port = m[3];
  if (port !== undefined && (Number(port) > 65535 || port === (m[2] === 'https' ? '443' : '80'))) return false;
  return !m[1]!.includes('/.');
}

/** Signed query strings removed from every http(s) string, recursively (hashing only). */
export function withoutSignatures(value: unknown): unknown {
  if (typeof value === 'string') return /^https?:\/\/[^?]*\?/.test(value) ? sourceIdOf(value) : value;
  if (Array.isArray(value)) return value.map(withoutSignatures);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = withoutSignatures(v);
    return out;
  }
  return value;
}

/** What a post or feed is, ignoring link signatures: links are re-signed on every read. */
export function contentHash(value: unknown): string {
  return createHash('sha256').update(signaturelessJson(value)).digest('hex');
}

/**
 * stableStringify (src/util/stable-stringify.ts) of withoutSignatures(value) in one pass, without the copy: the same text, so the
 * hashes stored by earlier versions still match (test/unit/feeds-slots.test.ts compares them).
 */
function signaturelessJson(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(/^https?:\/\/[^?]*\?/.test(value) ? sourceIdOf(value) : value);
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i > 0 ? ',' : '') + signaturelessJson(value[i]);
    return out + ']';
  }
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record).sort();
    let out = '{';
    let first = true;
    for (const k of keys) {
      const v = record[k];
      if (v === undefined) continue;
      out += (first ? '' : ',') + JSON.stringify(k) + ':' + signaturelessJson(v);
      first = false;
    }
    return out + '}';
  }
  // JSON.stringify is typed string, but gives undefined for undefined or a function.
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition
  return JSON.stringify(value) ?? 'null';
}
