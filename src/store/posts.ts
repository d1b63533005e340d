import { postSchema, type Post } from '../schema/v1.ts';
import { variantKey } from '../storage/keys.ts';
import type { Db } from './db.ts';
import { packPost, unpackPost } from './post-pack.ts';

/**
 * The posts, media_copies and feed_publications tables (migrations/002_posts.sql, compacted by
 * 018). Stored JSON is validated again when read (every byte that enters is validated, stored
 * JSON included). A post is kept as its raw item when it is that item converted (post-pack.ts);
 * a copy's variants as their sizes when their keys follow variantKey (packVariants).
 */

export interface StoredPost {
  accountId: string;
  mediaId: string;
  post: Post;
  contentHash: string;
  earliestOe: Date | null;
  firstSeenAt: Date;
  lastSeenAt: Date;
}

export interface PostInput {
  mediaId: string;
  post: Post;
  contentHash: string;
  earliestOe: Date | null;
}

export type PostChange = 'new' | 'changed' | 'unchanged';

interface PostRow {
  account_id: string;
  media_id: string;
  /** The whole post, or null when `raw` holds it (migration 018). */
  post: unknown;
  raw: Buffer | null;
  content_hash: string;
  earliest_oe: Date | null;
  first_seen_at: Date;
  last_seen_at: Date;
}

function toStoredPost(r: PostRow): StoredPost {
  let post: unknown;
  try {
    post = unpackPost(r);
  } catch (err) {
    throw new Error(`stored post ${r.account_id}/${r.media_id} cannot be read: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const parsed = postSchema.safeParse(post);
  if (!parsed.success)
    throw new Error(`stored post ${r.account_id}/${r.media_id} is not a schema v1 post: ${parsed.error.message}`);
  return {
    accountId: r.account_id,
    mediaId: r.media_id,
    post: parsed.data,
    contentHash: r.content_hash,
    earliestOe: r.earliest_oe,
    firstSeenAt: r.first_seen_at,
    lastSeenAt: r.last_seen_at,
  };
}

/** What the store holds of a post after upsertPosts: how it compares with before, and its links' oe. */
export interface UpsertedPost {
  change: PostChange;
  /** The stored links' earliest oe: the listing's, or the stored one when those links live longer. */
  earliestOe: Date | null;
}

/**
 * Insert or update the posts of one listing, first_seen kept, last_seen set to `at`. Returns what
 * changed per media id (compared with the stored content hash) and the oe of the links kept.
 *
 * A post whose content is stored already, with links that live at least as long, only has its
 * last_seen moved: an unchanged listing writes no post (most listings are unchanged, and packing
 * and rewriting every post would be a large share of the sync's work). The rest is packed
 * (post-pack.ts) and written in one statement.
 */
export async function upsertPosts(
  db: Db,
  accountId: string,
  posts: readonly PostInput[],
  at: Date,
): Promise<Map<string, UpsertedPost>> {
  const out = new Map<string, UpsertedPost>();
  if (posts.length === 0) return out;
  // Rows written before migration 018 (raw null) are rewritten once, compact.
  const { rows: seen } = await db.query<{ media_id: string; earliest_oe: Date | null }>(
    `UPDATE posts p SET last_seen_at = $5
       FROM unnest($2::text[], $3::text[], $4::timestamptz[]) AS i(media_id, content_hash, earliest_oe)
      WHERE p.account_id = $1 AND p.media_id = i.media_id AND p.content_hash = i.content_hash AND p.raw IS NOT NULL
        AND (p.earliest_oe IS NOT DISTINCT FROM i.earliest_oe OR p.earliest_oe > i.earliest_oe)
     RETURNING p.media_id, p.earliest_oe`,
    [accountId, posts.map((p) => p.mediaId), posts.map((p) => p.contentHash), posts.map((p) => p.earliestOe), at],
  );
  for (const r of seen) out.set(r.media_id, { change: 'unchanged', earliestOe: r.earliest_oe });
  const rest = posts.filter((p) => !out.has(p.mediaId));
  if (rest.length === 0) return out;
  const packed = rest.map((p) => packPost(p.post));
  // One statement for the rest of the listing: a 500-post account is one round trip, not 500.
  const { rows } = await db.query<{
    media_id: string;
    old_hash: string | null;
    content_hash: string;
    earliest_oe: Date | null;
  }>(
    `WITH input AS (
       SELECT * FROM unnest($2::text[], $3::jsonb[], $4::bytea[], $5::text[], $6::timestamptz[]) AS i(media_id, post, raw, content_hash, earliest_oe)
     ), old AS (
       SELECT p.media_id, p.content_hash FROM posts p JOIN input USING (media_id) WHERE p.account_id = $1
     ), up AS (
       INSERT INTO posts (account_id, media_id, post, raw, content_hash, earliest_oe, first_seen_at, last_seen_at)
       SELECT $1, media_id, post, raw, content_hash, earliest_oe, $7, $7 FROM input
       ON CONFLICT (account_id, media_id) DO UPDATE SET
         -- The listing may hand out older signatures than a renewal (R-MED-8) gave: for the same
         -- content, the links that live longer are kept (post and raw: the row holds one of them).
         post = CASE WHEN posts.content_hash = EXCLUDED.content_hash AND posts.earliest_oe > EXCLUDED.earliest_oe
                     THEN posts.post ELSE EXCLUDED.post END,
         raw = CASE WHEN posts.content_hash = EXCLUDED.content_hash AND posts.earliest_oe > EXCLUDED.earliest_oe
                     THEN posts.raw ELSE EXCLUDED.raw END,
         earliest_oe = CASE WHEN posts.content_hash = EXCLUDED.content_hash AND posts.earliest_oe > EXCLUDED.earliest_oe
                     THEN posts.earliest_oe ELSE EXCLUDED.earliest_oe END,
         content_hash = EXCLUDED.content_hash, last_seen_at = EXCLUDED.last_seen_at
       RETURNING media_id, content_hash, earliest_oe
     )
     SELECT up.media_id, up.content_hash, up.earliest_oe, old.content_hash AS old_hash FROM up LEFT JOIN old USING (media_id)`,
    [
      accountId,
      rest.map((p) => p.mediaId),
      packed.map((p) => p.post),
      packed.map((p) => p.raw),
      rest.map((p) => p.contentHash),
      rest.map((p) => p.earliestOe),
      at,
    ],
  );
  for (const r of rows)
    out.set(r.media_id, {
      change: r.old_hash === null ? 'new' : r.old_hash === r.content_hash ? 'unchanged' : 'changed',
      earliestOe: r.earliest_oe,
    });
  return out;
}

/**
 * R-LNK-6: remove the posts of an account that a COMPLETE listing did not return. Only call it
 * after a complete listing. Their media_copies rows stay: they mark objects to delete once the feed
 * without these posts is published. Returns the media ids removed.
 */
export async function prunePostsNotIn(db: Db, accountId: string, keepMediaIds: readonly string[]): Promise<string[]> {
  const { rows } = await db.query<{ media_id: string }>(
    'DELETE FROM posts WHERE account_id = $1 AND NOT (media_id = ANY($2::text[])) RETURNING media_id',
    [accountId, [...keepMediaIds]],
  );
  return rows.map((r) => r.media_id).sort();
}

/** The ids of an account's stored posts. */
export async function listPostIds(db: Db, accountId: string): Promise<string[]> {
  const { rows } = await db.query<{ media_id: string }>(
    'SELECT media_id FROM posts WHERE account_id = $1 ORDER BY media_id',
    [accountId],
  );
  return rows.map((r) => r.media_id);
}

/**
 * Remove some of an account's posts (R-LNK-6: what a complete listing no longer has, decided by
 * src/feeds/publication.ts; or what the operator confirmed). Their media_copies rows stay until
 * the feed without them is published, as with prunePostsNotIn. Returns the ids removed.
 */
export async function deletePosts(db: Db, accountId: string, mediaIds: readonly string[]): Promise<string[]> {
  if (mediaIds.length === 0) return [];
  const { rows } = await db.query<{ media_id: string }>(
    'DELETE FROM posts WHERE account_id = $1 AND media_id = ANY($2::text[]) RETURNING media_id',
    [accountId, [...mediaIds]],
  );
  return rows.map((r) => r.media_id).sort();
}

/**
 * Store posts taken over from a feed published before (a reconnected account, R-OWN-6) where the
 * account has none of that id yet: a listing then updates them like any stored post. Returns how
 * many were stored.
 */
export async function adoptPosts(db: Db, accountId: string, posts: readonly PostInput[], at: Date): Promise<number> {
  if (posts.length === 0) return 0;
  const packed = posts.map((p) => packPost(p.post));
  const { rowCount } = await db.query(
    `INSERT INTO posts (account_id, media_id, post, raw, content_hash, earliest_oe, first_seen_at, last_seen_at)
     SELECT $1, media_id, post, raw, content_hash, earliest_oe, $7, $7
       FROM unnest($2::text[], $3::jsonb[], $4::bytea[], $5::text[], $6::timestamptz[]) AS i(media_id, post, raw, content_hash, earliest_oe)
     ON CONFLICT (account_id, media_id) DO NOTHING`,
    [
      accountId,
      posts.map((p) => p.mediaId),
      packed.map((p) => p.post),
      packed.map((p) => p.raw),
      posts.map((p) => p.contentHash),
      posts.map((p) => p.earliestOe),
      at,
    ],
  );
  return rowCount ?? 0;
}

/** The account's posts, newest first (the same publication time: the greater media id first). */
export async function listPosts(db: Db, accountId: string): Promise<StoredPost[]> {
  // Most rows keep only their raw item (publishedAt is converted from it when read): sorted here,
  // the media ids in the database's order first, so equal times keep it (a stable sort).
  const { rows } = await db.query<PostRow>('SELECT * FROM posts WHERE account_id = $1 ORDER BY media_id DESC', [
    accountId,
  ]);
  const posts = rows.map(toStoredPost);
  const at = new Map(posts.map((p) => [p, Date.parse(p.post.publishedAt)]));
  return posts.sort((a, b) => at.get(b)! - at.get(a)!);
}

export async function getPost(db: Db, accountId: string, mediaId: string): Promise<StoredPost | null> {
  const { rows } = await db.query<PostRow>('SELECT * FROM posts WHERE account_id = $1 AND media_id = $2', [
    accountId,
    mediaId,
  ]);
  return rows[0] ? toStoredPost(rows[0]) : null;
}

/** Some of an account's posts, by media id, in one round trip (absent ids are left out). */
export async function getPosts(db: Db, accountId: string, mediaIds: readonly string[]): Promise<StoredPost[]> {
  if (mediaIds.length === 0) return [];
  const { rows } = await db.query<PostRow>('SELECT * FROM posts WHERE account_id = $1 AND media_id = ANY($2::text[])', [
    accountId,
    [...mediaIds],
  ]);
  return rows.map(toStoredPost);
}

/**
 * What one copy job needs to start, in one round trip: the stored post, which source file (if
 * any) its slot was copied from, and whether that copy's objects were found missing from storage
 * (missing-copies.ts: then it is made again). null when the post is no longer stored.
 */
export async function getPostForCopy(
  db: Db,
  accountId: string,
  mediaId: string,
  slot: string,
): Promise<{ stored: StoredPost; copiedSourceId: string | null; missing: boolean } | null> {
  const { rows } = await db.query<PostRow & { copied_source_id: string | null; missing: boolean }>(
    `SELECT p.*, c.source_id AS copied_source_id, m.slot IS NOT NULL AS missing FROM posts p
       LEFT JOIN media_copies c ON c.account_id = p.account_id AND c.media_id = p.media_id AND c.slot = $3
       LEFT JOIN missing_copies m ON m.account_id = c.account_id AND m.media_id = c.media_id AND m.slot = c.slot
      WHERE p.account_id = $1 AND p.media_id = $2`,
    [accountId, mediaId, slot],
  );
  const row = rows[0];
  return row ? { stored: toStoredPost(row), copiedSourceId: row.copied_source_id, missing: row.missing } : null;
}

/** Replace a post's links with renewed ones (R-MED-8), keeping everything else. */
export async function updatePostLinks(
  db: Db,
  accountId: string,
  mediaId: string,
  post: Post,
  earliestOe: Date | null,
): Promise<void> {
  const packed = packPost(post);
  await db.query('UPDATE posts SET post = $3, raw = $4, earliest_oe = $5 WHERE account_id = $1 AND media_id = $2', [
    accountId,
    mediaId,
    packed.post,
    packed.raw,
    earliestOe,
  ]);
}

// ---- media copies ----

export interface MediaCopy {
  accountId: string;
  mediaId: string;
  slot: string;
  sourceId: string;
  key: string;
  width: number;
  height: number;
  bytes: number;
  contentType: string;
  variants: CopyVariant[];
  /** Dominant colour and ThumbHash; null for copies made before placeholders existed. */
  placeholder: { color: string; thumbhash: string } | null;
  copiedAt: Date;
  /** A video file's running time, read from its MP4 header; absent for pictures. */
  durationSec?: number | null;
}

export interface CopyVariant {
  key: string;
  width: number;
  height: number;
  /** image/webp or image/avif. */
  contentType: string;
}

interface CopyRow {
  account_id: string;
  media_id: string;
  slot: string;
  source_id: string;
  key: string;
  width: number;
  height: number;
  bytes: string;
  content_type: string;
  /** Variants whose keys follow variantKey, as packVariants writes them; null when `variants` holds them. */
  variant_sizes: string | null;
  /** Variants with keys of their own (migration 018 kept them whole), or null. */
  variants: Array<{ key: string; width: number; height: number; contentType?: string }> | null;
  placeholder: { color: string; thumbhash: string } | null;
  copied_at: Date;
  duration_sec: number | null;
}

const VARIANT_SIZE_RE = /^([1-9][0-9]*)x([1-9][0-9]*)\.([a-z0-9]+)$/;

/**
 * A copy's variants as `media_copies.variant_sizes` keeps them: `<width>x<height>.<ext>` each,
 * comma-separated (`160x200.webp,240x300.webp`), their keys being variantKey(original key, width,
 * image/<ext>). null when a key does not follow it: then the variants are kept whole.
 */
export function packVariants(key: string, variants: readonly CopyVariant[]): string | null {
  const out: string[] = [];
  for (const v of variants) {
    const ext = /^image\/([a-z0-9]+)$/.exec(v.contentType)?.[1];
    if (!ext || !Number.isInteger(v.width) || !Number.isInteger(v.height) || v.width <= 0 || v.height <= 0) return null;
    let derived: string;
    try {
      derived = variantKey(key, v.width, v.contentType);
    } catch {
      return null;
    }
    if (derived !== v.key) return null;
    out.push(`${v.width}x${v.height}.${ext}`);
  }
  return out.join(',');
}

export function unpackVariants(key: string, sizes: string): CopyVariant[] {
  if (sizes === '') return [];
  return sizes.split(',').map((s) => {
    const m = VARIANT_SIZE_RE.exec(s);
    if (!m) throw new Error(`stored variant size ${JSON.stringify(s)} is not <width>x<height>.<ext>`);
    const contentType = `image/${m[3]}`;
    const width = Number(m[1]);
    return { key: variantKey(key, width, contentType), width, height: Number(m[2]), contentType };
  });
}

function toCopy(r: CopyRow): MediaCopy {
  return {
    accountId: r.account_id,
    mediaId: r.media_id,
    slot: r.slot,
    sourceId: r.source_id,
    key: r.key,
    width: r.width,
    height: r.height,
    bytes: Number(r.bytes),
    contentType: r.content_type,
    variants:
      r.variant_sizes !== null
        ? unpackVariants(r.key, r.variant_sizes)
        : // Rows written before MEDIA_VARIANT_FORMATS (migration 005) hold WebP variants only.
          (r.variants ?? []).map((v) => ({
            key: v.key,
            width: v.width,
            height: v.height,
            contentType: v.contentType ?? 'image/webp',
          })),
    placeholder: r.placeholder ?? null,
    copiedAt: r.copied_at,
    ...(r.duration_sec !== null ? { durationSec: r.duration_sec } : {}),
  };
}

/**
 * Record a copy, replacing the slot's earlier one (an older file of the same slot) if any. One
 * statement, no transaction: a copy is saved once per image, and the four round trips of a
 * locked read-then-write cost more than the upsert itself (`npm run bench`).
 */
export async function saveMediaCopy(db: Db, c: MediaCopy): Promise<void> {
  const sizes = packVariants(c.key, c.variants);
  // The slot's recorded copy failures, its mark as missing from storage (missing-copies.ts) and a
  // video's mark as over a cap (video-caps.ts) go in the same statement (no extra round trip per copy).
  await db.query(
    `WITH cleared AS (DELETE FROM media_copy_failures WHERE account_id = $1 AND media_id = $2 AND slot = $3),
          found AS (DELETE FROM missing_copies WHERE account_id = $1 AND media_id = $2 AND slot = $3),
          fits AS (DELETE FROM videos_over_cap WHERE account_id = $1 AND media_id = $2 AND slot = $3)
     INSERT INTO media_copies (account_id, media_id, slot, source_id, key, width, height, bytes, content_type, variant_sizes, variants, placeholder, copied_at, duration_sec)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
     ON CONFLICT (account_id, media_id, slot) DO UPDATE SET
       source_id = EXCLUDED.source_id, key = EXCLUDED.key, width = EXCLUDED.width, height = EXCLUDED.height,
       bytes = EXCLUDED.bytes, content_type = EXCLUDED.content_type, variant_sizes = EXCLUDED.variant_sizes,
       variants = EXCLUDED.variants, placeholder = EXCLUDED.placeholder, copied_at = EXCLUDED.copied_at,
       duration_sec = EXCLUDED.duration_sec`,
    [
      c.accountId,
      c.mediaId,
      c.slot,
      c.sourceId,
      c.key,
      c.width,
      c.height,
      c.bytes,
      c.contentType,
      sizes,
      sizes === null ? JSON.stringify(c.variants) : null,
      c.placeholder ? JSON.stringify(c.placeholder) : null,
      c.copiedAt,
      c.durationSec ?? null,
    ],
  );
}

export async function listMediaCopies(db: Db, accountId: string): Promise<MediaCopy[]> {
  const { rows } = await db.query<CopyRow>('SELECT * FROM media_copies WHERE account_id = $1 ORDER BY media_id, slot', [
    accountId,
  ]);
  return rows.map(toCopy);
}

/** Copies read per query by eachMediaCopyInKeyOrder. */
export const COPY_PAGE = 1000;

/**
 * An account's recorded copies in the order a bucket lists their objects: by media folder
 * (`media_id || '/'` compared byte by byte, COLLATE "C", as S3 orders keys), then slot; a page at
 * a time by keyset (migrations/026_key_order_indexes.sql), so a merge with the listing of
 * `media/<account>/` holds a page of each, whatever the account holds. Any kind of copy the
 * copy records (images, and whatever else is recorded as a copy) comes through here alike.
 */
export async function* eachMediaCopyInKeyOrder(
  db: Db,
  accountId: string,
  opts: { pageSize?: number } = {},
): AsyncGenerator<MediaCopy> {
  const pageSize = opts.pageSize ?? COPY_PAGE;
  let afterFolder = '';
  let afterSlot = '';
  for (;;) {
    const { rows } = await db.query<CopyRow>(
      `SELECT * FROM media_copies
        WHERE account_id = $1
          AND ((media_id || '/') COLLATE "C" > $2
               OR ((media_id || '/') COLLATE "C" = $2 AND slot COLLATE "C" > $3))
        ORDER BY (media_id || '/') COLLATE "C", slot COLLATE "C"
        LIMIT $4`,
      [accountId, afterFolder, afterSlot, pageSize],
    );
    for (const r of rows) yield toCopy(r);
    if (rows.length < pageSize) return;
    const last = rows[rows.length - 1]!;
    afterFolder = `${last.media_id}/`;
    afterSlot = last.slot;
  }
}

/** The recorded copies of one media item (its slots): what a delete reads again just before it. */
export async function listMediaCopiesOf(db: Db, accountId: string, mediaId: string): Promise<MediaCopy[]> {
  const { rows } = await db.query<CopyRow>(
    'SELECT * FROM media_copies WHERE account_id = $1 AND media_id = $2 ORDER BY slot',
    [accountId, mediaId],
  );
  return rows.map(toCopy);
}

/**
 * The source file each recorded copy of an account was made from, keyed by copySourceKey: a
 * sync compares its whole listing against it in one query instead of one query per image.
 */
export async function listCopySources(db: Db, accountId: string): Promise<Map<string, string>> {
  const { rows } = await db.query<CopySourceRow>(
    'SELECT media_id, slot, source_id FROM media_copies WHERE account_id = $1',
    [accountId],
  );
  return copySourcesOf(rows);
}

export interface CopySourceRow {
  media_id: string;
  slot: string;
  source_id: string;
}

/** Each recorded copy's source by copySourceKey. */
export function copySourcesOf(rows: readonly CopySourceRow[]): Map<string, string> {
  return new Map(rows.map((r) => [copySourceKey(r.media_id, r.slot), r.source_id]));
}

export const copySourceKey = (mediaId: string, slot: string) => `${mediaId}/${slot}`;

/** Media ids whose copies are still recorded but whose post was pruned (R-LNK-6). */
export async function listOrphanedCopyMediaIds(db: Db, accountId: string): Promise<string[]> {
  const { rows } = await db.query<{ media_id: string }>(
    `SELECT DISTINCT c.media_id FROM media_copies c
      WHERE c.account_id = $1 AND NOT EXISTS (SELECT 1 FROM posts p WHERE p.account_id = c.account_id AND p.media_id = c.media_id)
      ORDER BY c.media_id`,
    [accountId],
  );
  return rows.map((r) => r.media_id);
}

export async function deleteMediaCopies(db: Db, accountId: string, mediaId: string): Promise<void> {
  await db.query('DELETE FROM media_copies WHERE account_id = $1 AND media_id = $2', [accountId, mediaId]);
}

// ---- feed publications ----

export interface FeedPublication {
  accountId: string;
  feedHash: string;
  publishedAt: Date;
  postCount: number;
  demo: boolean;
  earliestOe: Date | null;
  /** Content hash of each published post by id (for feed.updated's lists of changes); null before migration 007. */
  postHashes?: Record<string, string> | null;
}

export async function getFeedPublication(db: Db, accountId: string): Promise<FeedPublication | null> {
  const { rows } = await db.query<FeedPublicationRow>('SELECT * FROM feed_publications WHERE account_id = $1', [
    accountId,
  ]);
  return rows[0] ? toFeedPublication(rows[0]) : null;
}

export interface FeedPublicationRow {
  account_id: string;
  feed_hash: string;
  published_at: Date;
  post_count: number;
  demo: boolean;
  earliest_oe: Date | null;
  post_hashes: Record<string, string> | null;
}

export function toFeedPublication(r: FeedPublicationRow): FeedPublication {
  return {
    accountId: r.account_id,
    feedHash: r.feed_hash,
    publishedAt: r.published_at,
    postCount: r.post_count,
    demo: r.demo,
    earliestOe: r.earliest_oe,
    postHashes: r.post_hashes ?? null,
  };
}

export async function saveFeedPublication(db: Db, p: FeedPublication): Promise<void> {
  await db.query(
    `INSERT INTO feed_publications (account_id, feed_hash, published_at, post_count, demo, earliest_oe, post_hashes)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (account_id) DO UPDATE SET feed_hash = EXCLUDED.feed_hash, published_at = EXCLUDED.published_at,
       post_count = EXCLUDED.post_count, demo = EXCLUDED.demo, earliest_oe = EXCLUDED.earliest_oe, post_hashes = EXCLUDED.post_hashes`,
    [
      p.accountId,
      p.feedHash,
      p.publishedAt,
      p.postCount,
      p.demo,
      p.earliestOe,
      p.postHashes ? JSON.stringify(p.postHashes) : null,
    ],
  );
}
