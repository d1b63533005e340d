import { isDeepStrictEqual } from 'node:util';
import type { MediaItem } from '../platform/media-item.ts';
import type { Post } from '../schema/v1.ts';
import { contentHash, sourceIdOf, withoutSignatures } from '../util/content-hash.ts';
import { convertItem, type ConvertOptions } from './convert-item.ts';

/**
 * R-MED-13: the same media read through the pinned API version and a candidate, compared field by
 * field as the platform's items and as the schema v1 posts they convert to, and whether moving
 * would change a published feed. Pure: `feedmirror platform compare` does the reading.
 *
 * Links are compared by their identity (scheme, host and path): a link is re-signed on every read,
 * so its signature (oe, hash) is no difference; links are shown without it (R-LNK-7).
 */

/** One listing of one account through one version. */
export interface VersionListing {
  version: string;
  items: readonly MediaItem[];
  /** Items the listing left out as malformed, with why. */
  skipped?: ReadonlyArray<{ id: string; reason: string }>;
  /** False when the listing stopped early: items missing from it say nothing. */
  complete: boolean;
}

/** One field that differs; a side without the field has no value (absent). */
export interface FieldDifference {
  /** Dotted path: `media_type`, `children.data[0].media_url`, `raw.media_type`. */
  path: string;
  pinned?: unknown;
  candidate?: unknown;
}

/** What one item becomes under a version: a post, or left out with the converter's reason. */
export type PostOutcome = { post: true } | { leftOut: string };

export interface ItemComparison {
  id: string;
  /** Differences of the platform's item. */
  item: FieldDifference[];
  /** Differences of the schema v1 post (raw included: it is published too), when both sides made one. */
  post: FieldDifference[];
  pinnedPost: PostOutcome;
  candidatePost: PostOutcome;
  /** The post this item gives a feed is not the same under the candidate (the sync's content hash). */
  feedChanges: boolean;
}

/** Differences grouped across items: the same path changed the same way. */
export interface DifferenceSummary {
  side: 'item' | 'post';
  path: string;
  pinned?: unknown;
  candidate?: unknown;
  count: number;
  /** Up to five ids, for an example. */
  ids: string[];
}

export interface VersionComparison {
  pinned: string;
  candidate: string;
  /** Items read under both versions and compared. */
  compared: number;
  /** Ids listed under one version only (meaningful only when both listings are complete). */
  onlyPinned: string[];
  onlyCandidate: string[];
  /** Both listings complete: absences are real. */
  complete: boolean;
  /** Items that differ in any way, in listing order. */
  differing: ItemComparison[];
  summary: DifferenceSummary[];
  /** Posts whose conversion under the candidate changes: leaving, appearing, or different. */
  feedChanges: { changed: number; leftOut: number; added: number };
  feedWouldChange: boolean;
}

const LINK = /^https?:\/\//;
const isLink = (v: unknown): v is string => typeof v === 'string' && LINK.test(v);
const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A value as shown in a difference: links without their signed query. */
function shown(v: unknown): unknown {
  return v === undefined ? undefined : withoutSignatures(v);
}

/** Every path at which `a` and `b` differ, links compared by identity. */
export function fieldDifferences(a: unknown, b: unknown, path = ''): FieldDifference[] {
  const out: FieldDifference[] = [];
  const walk = (x: unknown, y: unknown, at: string) => {
    if (isLink(x) && isLink(y)) {
      if (sourceIdOf(x) !== sourceIdOf(y)) out.push({ path: at, pinned: shown(x), candidate: shown(y) });
      return;
    }
    if (isRecord(x) && isRecord(y)) {
      const keys = [...new Set([...Object.keys(x), ...Object.keys(y)])].sort();
      for (const k of keys) walk(x[k], y[k], at ? `${at}.${k}` : k);
      return;
    }
    if (Array.isArray(x) && Array.isArray(y)) {
      for (let i = 0; i < Math.max(x.length, y.length); i++) walk(x[i], y[i], `${at}[${i}]`);
      return;
    }
    if (!isDeepStrictEqual(x, y)) {
      const d: FieldDifference = { path: at || '(item)' };
      if (x !== undefined) d.pinned = shown(x);
      if (y !== undefined) d.candidate = shown(y);
      out.push(d);
    }
  };
  walk(a, b, path);
  return out;
}

function outcomeOf(item: MediaItem | undefined, opts: ConvertOptions): { outcome: PostOutcome; post?: Post } {
  if (!item) return { outcome: { leftOut: 'not listed' } };
  const r = convertItem(item, opts);
  return 'post' in r ? { outcome: { post: true }, post: r.post } : { outcome: { leftOut: r.dropped.reason } };
}

/** Compare one account's media as two versions list it (R-MED-13). */
export function compareListings(
  pinned: VersionListing,
  candidate: VersionListing,
  opts: ConvertOptions = {},
): VersionComparison {
  const byIdP = new Map(pinned.items.map((i) => [i.id, i]));
  const byIdC = new Map(candidate.items.map((i) => [i.id, i]));
  // A malformed item (left out by the listing) still counts as listed, so it is compared as left out.
  const skippedP = new Map((pinned.skipped ?? []).map((s) => [s.id, s.reason]));
  const skippedC = new Map((candidate.skipped ?? []).map((s) => [s.id, s.reason]));
  const listed = (byId: Map<string, MediaItem>, skipped: Map<string, string>, id: string) =>
    byId.has(id) || skipped.has(id);
  const ids = [...new Set([...byIdP.keys(), ...skippedP.keys(), ...byIdC.keys(), ...skippedC.keys()])];
  const onlyPinned = ids.filter((id) => !listed(byIdC, skippedC, id));
  const onlyCandidate = ids.filter((id) => !listed(byIdP, skippedP, id));
  const complete = pinned.complete && candidate.complete;

  const differing: ItemComparison[] = [];
  const feedChanges = { changed: 0, leftOut: 0, added: 0 };
  let compared = 0;
  for (const id of ids) {
    if (!listed(byIdP, skippedP, id) || !listed(byIdC, skippedC, id)) continue;
    compared++;
    const p = byIdP.get(id);
    const c = byIdC.get(id);
    const item = fieldDifferences(p ?? {}, c ?? {});
    const pc = p ? outcomeOf(p, opts) : { outcome: { leftOut: `malformed: ${skippedP.get(id)}` } as PostOutcome };
    const cc = c ? outcomeOf(c, opts) : { outcome: { leftOut: `malformed: ${skippedC.get(id)}` } as PostOutcome };
    const post = pc.post && cc.post ? fieldDifferences(pc.post, cc.post) : [];
    let changes = false;
    if (pc.post && cc.post) {
      changes = contentHash(pc.post) !== contentHash(cc.post);
      if (changes) feedChanges.changed++;
    } else if (pc.post && !cc.post) {
      changes = true;
      feedChanges.leftOut++;
    } else if (!pc.post && cc.post) {
      changes = true;
      feedChanges.added++;
    }
    if (item.length > 0 || post.length > 0 || changes || 'leftOut' in pc.outcome !== 'leftOut' in cc.outcome)
      differing.push({
        id,
        item,
        post,
        pinnedPost: pc.outcome,
        candidatePost: cc.outcome,
        feedChanges: changes,
      });
  }
  return {
    pinned: pinned.version,
    candidate: candidate.version,
    compared,
    onlyPinned,
    onlyCandidate,
    complete,
    differing,
    summary: summarize(differing),
    feedChanges,
    feedWouldChange:
      feedChanges.changed + feedChanges.leftOut + feedChanges.added > 0 ||
      (complete && onlyPinned.length + onlyCandidate.length > 0),
  };
}

/** Differences grouped by side, path and the change itself, most frequent first. */
export function summarize(differing: readonly ItemComparison[]): DifferenceSummary[] {
  const groups = new Map<string, DifferenceSummary>();
  const add = (side: 'item' | 'post', id: string, d: FieldDifference) => {
    const key = JSON.stringify([side, d.path, d.pinned ?? null, d.candidate ?? null, 'pinned' in d, 'candidate' in d]);
    const g = groups.get(key);
    if (g) {
      g.count++;
      if (g.ids.length < 5) g.ids.push(id);
    } else
      groups.set(key, {
        side,
        path: d.path,
        ...('pinned' in d ? { pinned: d.pinned } : {}),
        ...('candidate' in d ? { candidate: d.candidate } : {}),
        count: 1,
        ids: [id],
      });
  };
  for (const c of differing) {
    for (const d of c.item) add('item', c.id, d);
    for (const d of c.post) add('post', c.id, d);
    if ('leftOut' in c.pinnedPost !== 'leftOut' in c.candidatePost) {
      add('post', c.id, {
        path: '(post)',
        pinned: 'leftOut' in c.pinnedPost ? `left out: ${c.pinnedPost.leftOut}` : 'converted',
        candidate: 'leftOut' in c.candidatePost ? `left out: ${c.candidatePost.leftOut}` : 'converted',
      });
    }
  }
  return [...groups.values()].sort((a, b) => b.count - a.count || (a.side === b.side ? 0 : a.side === 'item' ? -1 : 1));
}
