import { InvalidKeyError } from './errors.ts';
import { ID_PATTERN } from '../util/ids.ts';

/**
 * The storage layout, in one place:
 *   feeds/<accountId>.json                  the published feed
 *   media/<accountId>/<mediaId>/<name>       mirrored images and their manifests
 *   widgets/<widgetId>.json                  a widget's document (its accounts' posts, merged)
 *   widgets/<widgetId>.html                  the same widget as a static HTML fragment
 *   status/<accountId>.json                 the public status document (PUBLISH_STATUS)
 *   feedmirror/deployment.json              the deployment marker: whose storage this is (R-DEL-1)
 * Every part is checked against a strict pattern, so no id can traverse (`../`) or smuggle a
 * separator. The implementations check whole keys again (assertStorageKey) in case this module
 * is bypassed.
 */
const ID_RE = ID_PATTERN;
// A name may contain dots (extensions) but never start with one (hidden files, `.`/`..`).
const NAME_RE = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$/;
const SEGMENT_RE = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;
const MAX_KEY_LENGTH = 1024;

export function assertId(part: string, value: string): string {
  if (typeof value !== 'string' || !ID_RE.test(value)) {
    throw new InvalidKeyError(part, String(value), 'must be 1-128 characters of A-Z a-z 0-9 _ -');
  }
  return value;
}

export function assertName(part: string, value: string): string {
  if (typeof value !== 'string' || !NAME_RE.test(value) || value.includes('..')) {
    throw new InvalidKeyError(
      part,
      String(value),
      'must be 1-128 characters of A-Z a-z 0-9 _ . -, not starting with a dot, without ".."',
    );
  }
  return value;
}

/** `feeds/<accountId>.json` */
export function feedKey(accountId: string): string {
  return `feeds/${assertId('accountId', accountId)}.json`;
}

/** `widgets/<widgetId>.json`: the widget document. */
export function widgetDocumentKey(widgetId: string): string {
  return `widgets/${assertId('widgetId', widgetId)}.json`;
}

/** `widgets/<widgetId>.html`: the widget as a static HTML fragment. */
export function widgetFragmentKey(widgetId: string): string {
  return `widgets/${assertId('widgetId', widgetId)}.html`;
}

/** `status/<accountId>.json`: the account's public status document, next to its feed. */
export function statusKey(accountId: string): string {
  return `status/${assertId('accountId', accountId)}.json`;
}

/**
 * `feedmirror/deployment.json`: the id of the deployment this storage belongs to (R-DEL-1). Not
 * under a public prefix: nothing but feedmirror reads it.
 */
export const DEPLOYMENT_MARKER_KEY = 'feedmirror/deployment.json';

/** `media/<accountId>/` or `media/<accountId>/<mediaId>/` */
export function mediaPrefix(accountId: string, mediaId?: string): string {
  const acc = assertId('accountId', accountId);
  return mediaId === undefined ? `media/${acc}/` : `media/${acc}/${assertId('mediaId', mediaId)}/`;
}

/** `media/<accountId>/<mediaId>/<name>` */
export function mediaKey(accountId: string, mediaId: string, name: string): string {
  return `${mediaPrefix(accountId, mediaId)}${assertName('name', name)}`;
}

/** The content types of resized variants and the extension each is stored under (MEDIA_VARIANT_FORMATS). */
const VARIANT_EXT: Readonly<Record<string, string>> = { 'image/webp': 'webp', 'image/avif': 'avif' };

/**
 * A resized variant of a mirrored original: the original's key without its extension, `-w<width>`,
 * then the format's extension (`media/a/m/cover-0123abcd.jpg` at 160 px WebP is
 * `media/a/m/cover-0123abcd-w160.webp`). The one place variant names are made: the copy and
 * `media rebuild` upload under it, and the store derives the keys of recorded variants from the
 * original's key with it instead of keeping each one (migrations/018_compact_posts_and_copies.sql).
 */
export function variantKey(originalKey: string, width: number, contentType: string): string {
  const ext = VARIANT_EXT[contentType];
  if (!ext) throw new InvalidKeyError('contentType', String(contentType), 'must be image/webp or image/avif');
  if (!Number.isInteger(width) || width <= 0)
    throw new InvalidKeyError('width', String(width), 'must be a positive integer');
  return assertStorageKey(`${originalKey.replace(/\.[a-z0-9]+$/, '')}-w${width}.${ext}`);
}

function checkSegments(part: string, value: string, segments: string[]): void {
  for (const s of segments) {
    if (!SEGMENT_RE.test(s) || s.includes('..')) {
      throw new InvalidKeyError(
        part,
        value,
        `segment ${JSON.stringify(s)} is not allowed (A-Z a-z 0-9 _ . -, no leading dot, no "..", no empty segment)`,
      );
    }
  }
}

/** A whole key as the implementations accept it: relative, `/`-separated, safe segments. */
export function assertStorageKey(key: string): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH) {
    throw new InvalidKeyError('key', String(key), `must be 1-${MAX_KEY_LENGTH} characters`);
  }
  checkSegments('key', key, key.split('/'));
  return key;
}

/**
 * A prefix for list/deletePrefix: like a key, but it may end with `/` and its last segment may be
 * partial. `allowEmpty` is for list only: deleting everything is never what a caller means.
 */
export function assertStoragePrefix(prefix: string, allowEmpty: boolean): string {
  if (typeof prefix !== 'string' || prefix.length > MAX_KEY_LENGTH) {
    throw new InvalidKeyError('prefix', String(prefix), `must be at most ${MAX_KEY_LENGTH} characters`);
  }
  if (prefix === '') {
    if (allowEmpty) return prefix;
    throw new InvalidKeyError('prefix', prefix, 'must not be empty (refusing to delete everything)');
  }
  const segments = prefix.split('/');
  if (prefix.endsWith('/')) segments.pop();
  checkSegments('prefix', prefix, segments);
  return prefix;
}

/** A copy's slot ('cover', 'slide-3'): the first part of every name in its media folder. */
export const SLOT_PATTERN = /^[a-z0-9][a-z0-9-]{0,63}$/;

/**
 * The names the copy writes in a media folder (src/mirror/copy.ts, src/mirror/video.ts): the
 * original `<slot>-<16 hex of its sha256>.<jpg|png|webp>`, its variants
 * `<original>-w<width>.<webp|avif>` (variantKey), a video file `<slot>-<16 hex>.mp4` and the
 * manifest `<slot>.json`. Nothing else is ever written there.
 */
const COPY_NAME_RE =
  /^([a-z0-9][a-z0-9-]{0,63}?)-[0-9a-f]{16}(?:\.(?:jpg|png|webp|mp4)|-w[1-9]\d{0,5}\.(?:webp|avif))$/;
const MANIFEST_NAME_RE = /^([a-z0-9][a-z0-9-]{0,63})\.json$/;
const PROBE_KEY_RE =
  /^(?:(?:feeds|media|widget)\/readiness-probe-[0-9a-f]{12}\.txt|feeds\/doctor-probe-[0-9a-f]{12}\.json)$/;

/** A key feedmirror itself writes and may delete, by what it is (R-DEL-2). */
export type OwnedKey =
  | { kind: 'media'; accountId: string; mediaId: string; slot: string; manifest: boolean }
  | { kind: 'widget'; widgetId: string }
  | { kind: 'status'; accountId: string }
  | { kind: 'probe' };

/**
 * R-DEL-2: what a key is, when it is one feedmirror writes and may delete: a copy's object or
 * manifest named as the copy names them, a widget's two objects, a status document, a probe.
 * null for anything else (a README, a file of a name the copy never makes, a feed: feeds are
 * never deleted), which no path may delete.
 */
export function parseOwnedKey(key: string): OwnedKey | null {
  if (typeof key !== 'string' || key.length > MAX_KEY_LENGTH) return null;
  if (PROBE_KEY_RE.test(key)) return { kind: 'probe' };
  const parts = key.split('/');
  const [top, a, b, name] = parts;
  if (top === 'media' && parts.length === 4 && ID_RE.test(a!) && ID_RE.test(b!)) {
    const manifest = MANIFEST_NAME_RE.exec(name!);
    const copy = manifest ? null : COPY_NAME_RE.exec(name!);
    const slot = manifest?.[1] ?? copy?.[1];
    return slot ? { kind: 'media', accountId: a!, mediaId: b!, slot, manifest: manifest !== null } : null;
  }
  if (parts.length !== 2) return null;
  const m = /^(.+)\.(json|html)$/.exec(a!);
  if (!m || !ID_RE.test(m[1]!)) return null;
  if (top === 'widgets') return { kind: 'widget', widgetId: m[1]! };
  if (top === 'status' && m[2] === 'json') return { kind: 'status', accountId: m[1]! };
  return null;
}

/** A probe's key: `<prefix>/readiness-probe-<12 hex>.txt` (readiness) or `feeds/doctor-probe-<12 hex>.json`. */
export function probeKey(who: 'readiness' | 'doctor', prefix: 'feeds' | 'media' | 'widget', hex: string): string {
  const key = who === 'doctor' ? `${prefix}/doctor-probe-${hex}.json` : `${prefix}/readiness-probe-${hex}.txt`;
  if (!PROBE_KEY_RE.test(key)) throw new InvalidKeyError('probe', key, 'must be a probe name feedmirror makes');
  return key;
}
