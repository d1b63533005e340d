/**
 * The soak's set-up at 100,000 accounts (bench/scale.ts seedFeeds): what an earlier sync left for
 * each post, computed once per shape of post instead of once per post.
 *
 * The worker's own functions turn a listing item into a stored post (convertItems), its content
 * hash (contentHash), its image slots (imageSlots) and its published form (rewritePost, then
 * buildFeed's validation). Run on 2.4 million posts they cost more CPU than the whole soak may
 * take. But the soak's posts come in a few dozen shapes (a photo, a video, a reel, a carousel of
 * 2-5 slides of given kinds), and within a shape those functions only carry the item's values
 * (ids, caption, links, timestamp, counts) into their output. So, once per shape, the functions
 * run on an item of that shape whose values are sentinels, and each output (JSON, the string the
 * content hash is taken of, the slots' source ids) becomes a template: literal text and the
 * places where each value goes, in the form it takes there (a link whole or without its
 * signature, a timestamp as the platform writes it or normalised). A post of that shape is then
 * its values put into the templates, and hashed.
 *
 * Nothing here is trusted blindly: the first posts of every shape, and every `checkEvery`-th post
 * after, are also run through the worker's functions and compared, and bench/scale.ts compares
 * sample accounts' feeds with buildAccountFeed's after the rows are written; a difference stops
 * the set-up with the post it concerns.
 */
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { convertItems } from '../src/convert/convert-item.ts';
import { buildFeed } from '../src/convert/feed.ts';
import { originFromProfile } from '../src/convert/origin.ts';
import { normalizeTimestamp } from '../src/convert/timestamp.ts';
import { rewritePost } from '../src/feeds/publish.ts';
import { imageSlots } from '../src/feeds/slots.ts';
import { contentHash, sourceIdOf, withoutSignatures } from '../src/util/content-hash.ts';
import { stableStringify } from '../src/util/stable-stringify.ts';
import { earliestExpiry } from '../src/platform/links.ts';
import { mediaItemSchema } from '../src/platform/media-item.ts';
import type { Feed, Post } from '../src/schema/v1.ts';
import { packVariants, type MediaCopy, type StoredPost } from '../src/store/posts.ts';
import { packPost, packRaw } from '../src/store/post-pack.ts';
import { variantKey } from '../src/storage/keys.ts';

/** The ladder a 1080 px photo gets (MEDIA_VARIANT_WIDTHS' default): what a seeded copy records. */
export const SEEDED_VARIANT_WIDTHS = [160, 240, 360, 540, 810];
/** A seeded copy's original: a 1080 x 1350 JPEG of 180 KB with its placeholder. */
export const SEEDED_COPY = {
  width: 1080,
  height: 1350,
  bytes: 180_000,
  contentType: 'image/jpeg',
  placeholder: { color: '#7a6b5c', thumbhash: 'HBkSHYSIeHiPiHh8eJd4eTN0EEQG' },
} as const;

/** The copy row a seeded image gets (what bench/scale.ts writes and the slow path checks). */
export function seededCopy(
  accountId: string,
  mediaId: string,
  slot: string,
  sourceId: string,
  hash16: string,
  copiedAt: Date,
): MediaCopy {
  const key = `media/${accountId}/${mediaId}/${slot}-${hash16}.jpg`;
  return {
    accountId,
    mediaId,
    slot,
    sourceId,
    key,
    width: SEEDED_COPY.width,
    height: SEEDED_COPY.height,
    bytes: SEEDED_COPY.bytes,
    contentType: SEEDED_COPY.contentType,
    variants: SEEDED_VARIANT_WIDTHS.map((w) => ({
      key: variantKey(key, w, 'image/webp'),
      width: w,
      height: Math.round((w * SEEDED_COPY.height) / SEEDED_COPY.width),
      contentType: 'image/webp',
    })),
    placeholder: { ...SEEDED_COPY.placeholder },
    copiedAt,
  };
}

type Kind = 'str' | 'url' | 'time' | 'num';
/** Fields whose value is part of the shape, not a value carried through. */
const SHAPE_FIELDS = new Set(['media_type', 'media_product_type']);
const SIGNED = /^https?:\/\/[^?]*\?/;

/** An item's values in the order met, each once (equal values share a place), and its shape. */
function valuesOf(item: unknown): { key: string; values: Array<string | number>; kinds: Kind[] } {
  const values: Array<string | number> = [];
  const kinds: Kind[] = [];
  const index = new Map<string, number>();
  const walk = (v: unknown, field: string): unknown => {
    if (Array.isArray(v)) return v.map((x) => walk(x, field));
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[k] = walk(x, k);
      return out;
    }
    if ((typeof v !== 'string' && typeof v !== 'number') || SHAPE_FIELDS.has(field)) return v;
    const kind: Kind = typeof v === 'number' ? 'num' : field === 'timestamp' ? 'time' : SIGNED.test(v) ? 'url' : 'str';
    const id = `${kind}:${v}`;
    let i = index.get(id);
    if (i === undefined) {
      i = values.length;
      index.set(id, i);
      values.push(v);
      kinds.push(kind);
    }
    return { $v: i, kind, ...(kind === 'url' ? { ext: /\.(\w+)\?/.exec(v as string)?.[1] ?? '' } : {}) };
  };
  const shape = walk(item, '');
  return { key: JSON.stringify(shape), values, kinds };
}

const pad = (n: number, w: number) => String(n).padStart(w, '0');
/** Account-level and derived values the published post carries, after the item's own. */
const SENTINEL_ACCOUNT = '6660666066606660';
const SENTINEL_HASH16 = 'fedcba98fedcba98';

/** Sentinel forms of value i: [the value in the item, ...the other forms it takes in outputs]. */
function sentinelForms(i: number, kind: Kind, real: string | number): string[] {
  switch (kind) {
    case 'num':
      return [`8${pad(i, 3)}8888`];
    case 'time': {
      const d = new Date(Date.UTC(2090, 0, 1) + i * 1000);
      return [
        d.toISOString().replace(/\.\d{3}Z$/, '+0000'),
        normalizeTimestamp(d.toISOString().replace(/\.\d{3}Z$/, '+0000'))!,
      ];
    }
    case 'url': {
      const ext = /\.(\w+)\?/.exec(real as string)?.[1] ?? 'jpg';
      const stripped = `https://zzu${i}zz.invalid/zzp${i}zz.${ext}`;
      return [`${stripped}?oe=7fffff${pad(i, 2)}&sig=zzs${i}zz`, stripped];
    }
    case 'str': {
      const s = real as string;
      if (/^\d+$/.test(s)) return [`5${pad(i, 3)}${'5'.repeat(Math.max(1, s.length - 4))}`];
      if (/^https?:\/\//.test(s)) return [`https://zzl${i}zz.invalid/zz${i}zz/`];
      if (/^[A-Za-z0-9._]+$/.test(s)) return [`zzw${i}zz`];
      return [`zzt${i}zz`];
    }
  }
}

/** The forms value `v` of kind `kind` takes in outputs, JSON-escaped (outputs are JSON text). */
function realForms(kind: Kind, v: string | number): string[] {
  const esc = (s: string) => JSON.stringify(s).slice(1, -1);
  switch (kind) {
    case 'num':
      return [String(v)];
    case 'time':
      return [esc(v as string), esc(normalizeTimestamp(v as string) ?? '')];
    case 'url': {
      // sourceIdOf parses the link with URL; a plain http://host:port/path?query link (the
      // simulator's) is already normalised, and its origin + path is what comes before the '?'.
      const s = v as string;
      return [esc(s), PLAIN_LINK.test(s) ? s.slice(0, s.indexOf('?')) : esc(sourceIdOf(s))];
    }
    case 'str':
      return [esc(v as string)];
  }
}

const PLAIN_LINK = /^http:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9/._-]+\?[A-Za-z0-9=&._-]*$/;

/** A text with holes: literal parts and [value, form] places. */
type Template = Array<string | readonly [number, number]>;

function compile(text: string, places: Map<string, readonly [number, number]>): Template {
  const alternatives = [...places.keys()]
    .sort((a, b) => b.length - a.length)
    .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  const re = new RegExp(alternatives.join('|'), 'g');
  const out: Template = [];
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    out.push(places.get(m[0])!);
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  for (const part of out)
    if (typeof part === 'string' && /zz[a-z]?\d+zz|2090-01-01T|fedcba98fedcba98|6660666066606660|8\d{3}8888/.test(part))
      throw new Error(`bench: a value was transformed on its way into the output (${part.slice(0, 120)})`);
  return out;
}

const fill = (t: Template, forms: readonly string[][]) => {
  let s = '';
  for (const part of t) s += typeof part === 'string' ? part : forms[part[0]]![part[1]]!;
  return s;
};

interface ShapeTemplate {
  post: Template;
  postStable: Template;
  slots: Array<{ slot: string; sourceId: Template }>;
  published: Template;
  publishedStable: Template;
  /** The published post keeps platform links (video files): the feed's earliest oe counts it. */
  platformLinks: boolean;
  publishedAt: Template;
  /** Index of the account id and the hash prefix among the forms of the published templates. */
  extra: number;
}

export interface SeededPost {
  mediaId: string;
  /** The listing item it was converted from (posts.raw keeps it packed). */
  raw: unknown;
  /** JSON of the converted post (the posts.post column). */
  postJson: string;
  contentHash: string;
  earliestOe: Date | null;
  publishedAt: string;
  copies: MediaCopy[];
  publishedJson: string;
  publishedStable: string;
  platformLinks: boolean;
}

export interface SeededFeed {
  posts: SeededPost[];
  /** The feed written to storage, as buildAccountFeed builds it. */
  feedJson: string;
  feedHash: string;
  postHashes: Record<string, string>;
  earliestOe: Date | null;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** A probe's origin and publicUrl: the published template does not depend on them but needs them. */
export class FeedTemplates {
  private readonly shapes = new Map<string, ShapeTemplate>();
  private readonly seenPerShape = new Map<string, number>();
  private converted = 0;
  checked = 0;

  constructor(
    private readonly publicUrl: (key: string) => string,
    private readonly opts: { checkFirst: number; checkEvery: number },
  ) {}

  get shapeCount(): number {
    return this.shapes.size;
  }

  private build(key: string, kinds: Kind[], values: Array<string | number>): ShapeTemplate {
    const forms = values.map((v, i) => sentinelForms(i, kinds[i]!, v));
    const probe = JSON.parse(key, (_k, v: unknown) => {
      if (v !== null && typeof v === 'object' && '$v' in v) {
        const i = (v as { $v: number }).$v;
        return kinds[i] === 'num' ? Number(forms[i]![0]) : forms[i]![0];
      }
      return v;
    }) as unknown;
    const places = new Map<string, readonly [number, number]>();
    forms.forEach((f, i) => f.forEach((s, j) => places.set(s, [i, j] as const)));
    const extra = values.length;
    places.set(SENTINEL_ACCOUNT, [extra, 0]);
    places.set(SENTINEL_HASH16, [extra + 1, 0]);
    const post = this.convertOne(probe);
    const slots = imageSlots(post);
    const at = new Date(Date.UTC(2090, 0, 1));
    const copies = new Map(
      slots.map((s) => [s.slot, seededCopy(SENTINEL_ACCOUNT, post.id, s.slot, s.sourceId, SENTINEL_HASH16, at)]),
    );
    const r = rewritePost({ post } as StoredPost, copies, this.publicUrl);
    if (!r || r.incomplete) throw new Error(`bench: a post of shape ${key} cannot be published from its copies`);
    const published = this.validated(r.post);
    return {
      post: compile(JSON.stringify(post), places),
      postStable: compile(stableStringify(withoutSignatures(post)), places),
      slots: slots.map((s) => ({ slot: s.slot, sourceId: compile(JSON.stringify(s.sourceId).slice(1, -1), places) })),
      published: compile(JSON.stringify(published), places),
      publishedStable: compile(stableStringify(withoutSignatures(published)), places),
      platformLinks: r.platformLinks.length > 0,
      publishedAt: compile(post.publishedAt, places),
      extra,
    };
  }

  private convertOne(raw: unknown): Post {
    const item = mediaItemSchema.parse(raw);
    const { posts } = convertItems([item], { copyrightItems: 'drop' });
    if (posts.length !== 1) throw new Error(`bench: item ${JSON.stringify(raw).slice(0, 200)} gives no post`);
    return posts[0]!;
  }

  private validated(post: Post): Post {
    const feed = buildFeed({
      origin: originFromProfile({ id: SENTINEL_ACCOUNT, username: 'probe' }),
      posts: [post],
      fetchedAt: new Date(0),
      demo: false,
    });
    return feed.posts[0]!;
  }

  /** What an earlier sync stored for one item: the post row's values and its copies. */
  post(accountId: string, raw: unknown, copiedAt: Date, earliestOe: Date | null): SeededPost {
    const { key, values, kinds } = valuesOf(raw);
    let t = this.shapes.get(key);
    if (!t) {
      t = this.build(key, kinds, values);
      this.shapes.set(key, t);
    }
    const forms = values.map((v, i) => realForms(kinds[i]!, v));
    const postJson = fill(t.post, forms);
    const hash = sha256(fill(t.postStable, forms));
    const hash16 = hash.slice(0, 16);
    forms.push([accountId], [hash16]);
    const mediaId = (raw as { id: string }).id;
    const copies = t.slots.map((s) =>
      seededCopy(accountId, mediaId, s.slot, JSON.parse(`"${fill(s.sourceId, forms)}"`) as string, hash16, copiedAt),
    );
    const out: SeededPost = {
      mediaId,
      raw,
      postJson,
      contentHash: hash,
      earliestOe,
      publishedAt: fill(t.publishedAt, forms),
      copies,
      publishedJson: fill(t.published, forms),
      publishedStable: fill(t.publishedStable, forms),
      platformLinks: t.platformLinks,
    };
    const n = (this.seenPerShape.get(key) ?? 0) + 1;
    this.seenPerShape.set(key, n);
    if (n <= this.opts.checkFirst || ++this.converted % this.opts.checkEvery === 0) this.check(accountId, raw, out);
    return out;
  }

  /** The same post through the worker's own functions: any difference stops the set-up. */
  private check(accountId: string, raw: unknown, got: SeededPost): void {
    this.checked++;
    const post = this.convertOne(raw);
    const fail = (what: string) => {
      throw new Error(`bench: the templated set-up differs from the worker's functions (${what}) for post ${post.id}`);
    };
    if (!isDeepStrictEqual(JSON.parse(got.postJson), JSON.parse(JSON.stringify(post)))) fail('the converted post');
    if (got.contentHash !== contentHash(post)) fail('its content hash');
    if (packPost(post).raw === null) fail('the store keeps it whole, not as its item');
    const slots = imageSlots(post);
    if (
      !isDeepStrictEqual(
        slots.map((s) => [s.slot, s.sourceId]),
        got.copies.map((c) => [c.slot, c.sourceId]),
      )
    )
      fail('its image slots');
    const r = rewritePost({ post } as StoredPost, new Map(got.copies.map((c) => [c.slot, c])), this.publicUrl);
    const published = this.validated(r!.post);
    if (!isDeepStrictEqual(JSON.parse(got.publishedJson), JSON.parse(JSON.stringify(published))))
      fail('its published form');
    if (sha256(got.publishedStable) !== contentHash(published)) fail("its published form's hash");
    if (got.platformLinks !== r!.platformLinks.length > 0) fail('its platform links');
    if (got.publishedAt !== post.publishedAt) fail('its publication time');
  }

  /** An account's feed from its posts, as buildAccountFeed builds it from the rows they make. */
  feed(account: { id: string; username: string }, posts: SeededPost[], now: Date): SeededFeed {
    const sorted = [...posts].sort((a, b) => {
      const t = Date.parse(b.publishedAt) - Date.parse(a.publishedAt);
      return t !== 0 ? t : a.mediaId < b.mediaId ? 1 : a.mediaId > b.mediaId ? -1 : 0;
    });
    const empty: Feed = buildFeed({
      origin: originFromProfile({ id: account.id, username: account.username }),
      posts: [],
      fetchedAt: now,
      demo: false,
    });
    const splice = (text: string, parts: string[]) => {
      const at = text.indexOf('"posts":[]');
      if (at < 0 || text.indexOf('"posts":[]', at + 1) >= 0)
        throw new Error('bench: cannot place the posts in the feed');
      return `${text.slice(0, at)}"posts":[${parts.join(',')}]${text.slice(at + 10)}`;
    };
    const { fetchedAt: _f, ...content } = empty;
    let earliest: number | undefined;
    for (const p of sorted)
      if (p.platformLinks && p.earliestOe && (earliest === undefined || p.earliestOe.getTime() < earliest))
        earliest = p.earliestOe.getTime();
    return {
      posts: sorted,
      feedJson: splice(
        JSON.stringify(empty),
        sorted.map((p) => p.publishedJson),
      ),
      feedHash: sha256(
        splice(
          stableStringify(withoutSignatures(content)),
          sorted.map((p) => p.publishedStable),
        ),
      ),
      postHashes: Object.fromEntries(sorted.map((p) => [p.mediaId, sha256(p.publishedStable)])),
      earliestOe: earliest === undefined ? null : new Date(earliest),
    };
  }
}

/** What a batch of accounts' earlier syncs write, computed (no I/O): rows as JSON documents. */
export interface ComputedBatch {
  /** posts rows: [{a: account, m: media id, p: post, h: content hash, o: earliest oe}] */
  postsJson: string;
  /** media_copies rows: [{a, m, s: slot, src: source id, k: key, v: variants}] */
  copiesJson: string;
  /** feed_publications rows: [{a, h: feed hash, n: post count, o: earliest oe, ph: post hashes}] */
  publicationsJson: string;
  feeds: Array<{ id: string; json: string }>;
  /** Posts per account, in the batch's order. */
  postsPerAccount: number[];
  posts: number;
  images: number;
}

/**
 * The rows and feeds of a batch of accounts, each from its whole listing. The posts, copies and
 * publications are JSON documents of rows (PostgreSQL's json_to_recordset reads them): a post and
 * its copies' variants go in as the JSON they are, not escaped again as array elements.
 */
export function computeBatch(
  templates: FeedTemplates,
  accounts: ReadonlyArray<{ id: string; username: string; items: unknown[] }>,
  now: Date,
): ComputedBatch {
  const postRows: string[] = [];
  const copyRows: string[] = [];
  const pubRows: string[] = [];
  const feeds: Array<{ id: string; json: string }> = [];
  const postsPerAccount: number[] = [];
  const str = JSON.stringify;
  const iso = (d: Date | null) => (d ? `"${d.toISOString()}"` : 'null');
  let images = 0;
  for (const acc of accounts) {
    const posts = acc.items.map((raw) =>
      templates.post(acc.id, raw, now, earliestExpiry(raw as Parameters<typeof earliestExpiry>[0]) ?? null),
    );
    const feed = templates.feed(acc, posts, now);
    const accId = str(acc.id);
    for (const sp of posts) {
      // The post is exactly its item converted (checked): the store keeps the item, packed.
      postRows.push(
        `{"a":${accId},"m":${str(sp.mediaId)},"r":"${packRaw(sp.raw).toString('base64')}","h":"${sp.contentHash}","o":${iso(sp.earliestOe)}}`,
      );
      for (const cp of sp.copies)
        copyRows.push(
          `{"a":${accId},"m":${str(cp.mediaId)},"s":${str(cp.slot)},"src":${str(cp.sourceId)},"k":${str(cp.key)},"v":${str(packVariants(cp.key, cp.variants))}}`,
        );
      images += sp.copies.length;
    }
    pubRows.push(
      `{"a":${accId},"h":"${feed.feedHash}","n":${feed.posts.length},"o":${iso(feed.earliestOe)},"ph":${str(feed.postHashes)}}`,
    );
    postsPerAccount.push(posts.length);
    feeds.push({ id: acc.id, json: feed.feedJson });
  }
  return {
    postsJson: `[${postRows.join(',')}]`,
    copiesJson: `[${copyRows.join(',')}]`,
    publicationsJson: `[${pubRows.join(',')}]`,
    feeds,
    postsPerAccount,
    posts: postRows.length,
    images,
  };
}
