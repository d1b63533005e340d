import { imageSlots } from '../feeds/slots.ts';
import { mediaPrefix } from '../storage/keys.ts';
import type { ListedObject, ObjectStorage } from '../storage/types.ts';
import type { Db } from '../store/db.ts';
import { getPost, type MediaCopy } from '../store/posts.ts';
import type { VerifyFinding } from '../store/verify-runs.ts';
import { ID_PATTERN } from '../util/ids.ts';
import { sampled, typeOfKey } from './listing.ts';

/**
 * One account's objects checked as a merge of two ordered streams: what storage holds under
 * media/<account>/ (a listing, or an inventory report, in key order) and what the records call
 * for (the recorded copies read from PostgreSQL in the same order, a media folder at a time, with
 * the objects the published feed and the feed the database would publish point at). Walking both
 * once settles, from the listing alone:
 *
 * - missing: called for, not listed (confirmed with a HEAD: a copy written since the listing
 *   was read, or since the report was taken, is not missing);
 * - wrong size: listed empty, or with another size than the copy recorded (confirmed with the
 *   HEAD that also reads its type);
 * - orphan: listed, referenced by nothing, older than the grace period (its age is the listing's
 *   last-modified; a report's orphan is confirmed with a HEAD, it may be gone since);
 * - wrong type: the listing carries no Content-Type. A copy's name says its format (.jpg, .webp,
 *   .json, .mp4), so a record whose type is its name's is settled; one whose type is not, or a
 *   name of no known format, gets a HEAD; and a sample of the rest (a share per run, other keys
 *   each day) gets a HEAD that reads the stored header.
 *
 * Memory is a page of each stream and one media folder's references, whatever the account holds.
 */

/** What a feed or a recorded copy says of one object. */
export interface Expected {
  mimes: Set<string>;
  /** Recorded byte size (originals only: variants have none recorded). */
  bytes?: number;
  /** A post that points at it, for the report. */
  postId: string;
}

export interface ObjectProblem extends VerifyFinding {
  kind: 'object-missing' | 'object-size' | 'object-type' | 'orphan';
  accountId: string;
  key: string;
}

export interface MergeContext {
  now: Date;
  graceMs: number;
  /** Runs a HEAD within the run's bound on requests at once. */
  limit: <T>(fn: () => Promise<T>) => Promise<T>;
  /** Share of the settled objects whose type is read with a HEAD anyway. */
  typeShare: number;
  /** Changes the sample from run to run (the day). */
  salt: string;
  /** Set for an inventory report: what it alone says is wrong is confirmed with a HEAD. */
  takenAt?: Date;
  /**
   * The media sweep's keep list (post ids, and the posts the published feed still shows): a
   * listed object of another media folder is handed to the sweep (R-LNK-6). Undefined: no sweep.
   */
  sweepKeep?: ReadonlySet<string>;
}

export interface MergeResult {
  /** Object problems, then orphans, each in key order. */
  problems: ObjectProblem[];
  /** Orphans past the grace period (the repair's candidates). */
  orphans: string[];
  /** Objects called for (every one checked). */
  objects: number;
  /** Objects listed under media/<account>/. */
  storedObjects: number;
  unreferencedRecent: number;
  /** HEAD requests sent. */
  heads: number;
  /** The media sweep's candidates: media id => its listed keys. */
  sweep: Map<string, string[]>;
}

interface Ref {
  key: string;
  expected?: Expected;
}

const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const normaliseType = (t: string | undefined) => (t ?? '').split(';')[0]!.trim().toLowerCase();

/**
 * Every key the records and feeds reference under media/<account>/, in key order: the feeds'
 * objects (a sorted array: the feeds are in memory anyway) merged with the recorded copies, a
 * media folder at a time (a folder's keys are contiguous in key order). A copy's original,
 * variants and manifest are referenced (never orphans); they are called for (checked) when a feed
 * points at them, or when their post is stored and still has their slot (a post waiting for its
 * other images); the copy of a pruned post or a slot its post lost is kept but not called for.
 * `outside`: referenced keys not under the account's folders (checked one by one).
 */
async function* references(
  db: Db,
  accountId: string,
  feedExpected: ReadonlyMap<string, Expected>,
  copies: AsyncIterable<MediaCopy>,
  outside: Map<string, Expected>,
): AsyncGenerator<Ref> {
  const prefix = mediaPrefix(accountId);
  const feedKeys: string[] = [];
  for (const [key, e] of feedExpected) {
    if (key.startsWith(prefix)) feedKeys.push(key);
    else outside.set(key, e);
  }
  feedKeys.sort(byteOrder);
  let i = 0;
  let group: MediaCopy[] = [];

  const folderRefs = async (
    list: MediaCopy[],
  ): Promise<{ folder: string; refs: Map<string, Expected | undefined> }> => {
    const mediaId = list[0]!.mediaId;
    const folder = `${prefix}${mediaId}/`;
    const refs = new Map<string, Expected | undefined>();
    for (let j = i; j < feedKeys.length && feedKeys[j]!.startsWith(folder); j++)
      refs.set(feedKeys[j]!, feedExpected.get(feedKeys[j]!));
    const covered = list.every((c) => refs.has(c.key) && c.variants.every((v) => refs.has(v.key)));
    // The feed's entries of an original get its recorded size.
    for (const c of list) {
      const e = refs.get(c.key);
      if (e && e.bytes === undefined) refs.set(c.key, { ...e, bytes: c.bytes });
    }
    let slots: Set<string> | undefined;
    if (!covered) {
      const stored = await getPost(db, accountId, mediaId);
      if (stored) slots = new Set(imageSlots(stored.post).map((s) => s.slot));
    }
    const add = (key: string, mime: string | undefined, bytes?: number) => {
      const target = key.startsWith(folder) ? refs : outside;
      const e = target.get(key);
      if (mime === undefined) {
        if (!target.has(key) && target === refs) refs.set(key, undefined);
        return;
      }
      if (e) {
        e.mimes = new Set([...e.mimes, mime]);
        if (e.bytes === undefined && bytes !== undefined) e.bytes = bytes;
      } else target.set(key, { mimes: new Set([mime]), postId: mediaId, ...(bytes !== undefined ? { bytes } : {}) });
    };
    for (const c of list) {
      const called = slots?.has(c.slot) === true;
      add(c.key, called ? c.contentType : undefined, called ? c.bytes : undefined);
      for (const v of c.variants) add(v.key, called ? v.contentType : undefined);
      add(`${folder}${c.slot}.json`, undefined);
    }
    return { folder, refs };
  };

  async function* flush(): AsyncGenerator<Ref> {
    if (group.length === 0) return;
    const list = group;
    group = [];
    const { folder, refs } = await folderRefs(list);
    while (i < feedKeys.length && feedKeys[i]! < folder) {
      yield { key: feedKeys[i]!, expected: feedExpected.get(feedKeys[i]!)! };
      i++;
    }
    while (i < feedKeys.length && feedKeys[i]!.startsWith(folder)) i++;
    for (const key of [...refs.keys()].sort(byteOrder)) {
      const e = refs.get(key);
      yield e ? { key, expected: e } : { key };
    }
  }

  for await (const c of copies) {
    if (group.length > 0 && group[0]!.mediaId !== c.mediaId) yield* flush();
    group.push(c);
  }
  yield* flush();
  for (; i < feedKeys.length; i++) yield { key: feedKeys[i]!, expected: feedExpected.get(feedKeys[i]!)! };
}

/** Check one account's objects (see the top of this module). */
export async function mergeAccountObjects(
  deps: { db: Db; storage: ObjectStorage },
  accountId: string,
  feedExpected: ReadonlyMap<string, Expected>,
  copies: AsyncIterable<MediaCopy>,
  listing: AsyncIterable<ListedObject>,
  ctx: MergeContext,
): Promise<MergeResult> {
  const prefix = mediaPrefix(accountId);
  const out: MergeResult = {
    problems: [],
    orphans: [],
    objects: 0,
    storedObjects: 0,
    unreferencedRecent: 0,
    heads: 0,
    sweep: new Map(),
  };
  const objectProblems: ObjectProblem[] = [];
  const orphanProblems: ObjectProblem[] = [];
  const pending: Array<Promise<void>> = [];
  const head = (key: string) =>
    ctx.limit(() => {
      out.heads++;
      return deps.storage.head(key);
    });

  /** What a HEAD says of an object called for: missing, its size, its type. */
  const judge = (key: string, e: Expected) =>
    pending.push(
      head(key).then((h) => {
        const where = `post ${e.postId}`;
        if (!h) {
          objectProblems.push({
            kind: 'object-missing',
            accountId,
            key,
            detail: `${where}: the object is not in storage`,
          });
          return;
        }
        if (h.size === 0 || (e.bytes !== undefined && h.size !== e.bytes))
          objectProblems.push({
            kind: 'object-size',
            accountId,
            key,
            detail: `${where}: ${h.size} bytes stored, ${e.bytes ?? 'more than 0'} recorded`,
          });
        const type = normaliseType(h.contentType);
        if (![...e.mimes].every((m) => normaliseType(m) === type))
          objectProblems.push({
            kind: 'object-type',
            accountId,
            key,
            detail: `${where}: stored as ${h.contentType ?? 'no type'}, the feed says ${[...e.mimes].join(', ')}`,
          });
      }),
    );

  const listed = (ref: Ref, o: ListedObject) => {
    const e = ref.expected;
    if (!e) return;
    out.objects++;
    const damaged = o.size === 0 || (e.bytes !== undefined && o.size !== e.bytes);
    const ext = typeOfKey(ref.key);
    const settled = [...e.mimes].every((m) => normaliseType(m) === ext);
    if (damaged || !settled || sampled(ref.key, ctx.salt, ctx.typeShare)) judge(ref.key, e);
  };

  const unreferenced = (o: ListedObject) => {
    const decide = (lastModified: Date | undefined) => {
      const age = lastModified ? ctx.now.getTime() - lastModified.getTime() : Infinity;
      if (age < ctx.graceMs) {
        out.unreferencedRecent++;
        return;
      }
      out.orphans.push(o.key);
      orphanProblems.push({
        kind: 'orphan',
        accountId,
        key: o.key,
        detail: `no recorded copy references it${lastModified ? ` (written ${lastModified.toISOString()})` : ''}`,
      });
    };
    // A live listing's last-modified is now's; a report's may be a day old (the object gone since).
    if (o.lastModified && ctx.takenAt === undefined) decide(o.lastModified);
    else
      pending.push(
        head(o.key).then((h) => {
          if (h) decide(h.lastModified);
        }),
      );
  };

  const seen = (o: ListedObject) => {
    out.storedObjects++;
    if (!ctx.sweepKeep) return;
    const mediaId = o.key.slice(prefix.length).split('/')[0];
    if (!mediaId || !ID_PATTERN.test(mediaId) || ctx.sweepKeep.has(mediaId)) return;
    const keys = out.sweep.get(mediaId);
    if (keys) keys.push(o.key);
    else out.sweep.set(mediaId, [o.key]);
  };

  const outside = new Map<string, Expected>();
  const it = listing[Symbol.asyncIterator]();
  let cur = await it.next();
  let last = '';
  const advance = async () => {
    seen(cur.value as ListedObject);
    cur = await it.next();
    if (!cur.done) {
      // The merge is only right on ordered input: a listing out of order is an error, not a finding.
      if (cur.value.key <= last) throw new Error(`the listing of ${prefix} is not in key order at ${cur.value.key}`);
      last = cur.value.key;
    }
  };
  if (!cur.done) last = cur.value.key;
  for await (const ref of references(deps.db, accountId, feedExpected, copies, outside)) {
    while (!cur.done && cur.value.key < ref.key) {
      unreferenced(cur.value);
      await advance();
    }
    if (!cur.done && cur.value.key === ref.key) {
      listed(ref, cur.value);
      await advance();
    } else if (ref.expected) {
      out.objects++;
      judge(ref.key, ref.expected); // not listed: missing, unless written since
    }
  }
  while (!cur.done) {
    unreferenced(cur.value);
    await advance();
  }
  // Objects the feeds point at outside the account's folders: no listing covers them.
  for (const [key, e] of outside) {
    out.objects++;
    judge(key, e);
  }
  await Promise.all(pending);
  objectProblems.sort((a, b) => byteOrder(a.key, b.key) || byteOrder(a.kind, b.kind));
  orphanProblems.sort((a, b) => byteOrder(a.key, b.key));
  out.orphans.sort(byteOrder);
  out.problems = [...objectProblems, ...orphanProblems];
  return out;
}
