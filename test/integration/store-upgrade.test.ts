import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertItems } from '../../src/convert/convert-item.ts';
import { buildAccountFeed } from '../../src/feeds/publish.ts';
import { contentHash } from '../../src/util/content-hash.ts';
import { earliestExpiry } from '../../src/platform/links.ts';
import { postSchema } from '../../src/schema/v1.ts';
import { getAccount, upsertAccount } from '../../src/store/accounts.ts';
import { createPool } from '../../src/store/db.ts';
import { DEFAULT_MIGRATIONS_DIR, migrate } from '../../src/store/migrate.ts';
import { jsonbOrdered, packPost } from '../../src/store/post-pack.ts';
import {
  adoptPosts,
  listMediaCopies,
  listPosts,
  saveMediaCopy,
  updatePostLinks,
  upsertPosts,
  type PostInput,
} from '../../src/store/posts.ts';
import {
  ADOPTED_ID,
  ADOPTED_POST,
  UPGRADE_ACCOUNT,
  UPGRADE_COPIES,
  UPGRADE_ITEMS,
  UPGRADE_NOW,
  UPGRADE_PUBLIC_URL,
} from '../fixtures/store-upgrade.ts';
import { freshDatabase } from '../support/services.ts';

/**
 * Migration 018 keeps posts as their raw item and copies' variants as their sizes. An upgrade
 * must keep every published post and copy as it was: a database holding rows as the store wrote
 * them before 018 is migrated, and the feed built from it is byte for byte the one the code before
 * 018 built from the same rows (test/fixtures/store-upgrade-feed.json, made with that code); so is
 * the feed after the next listing has written the rows in the compact form.
 */
let db: pg.Pool;
const cleanups: Array<() => Promise<unknown>> = [];
let golden: string;

const accountId = UPGRADE_ACCOUNT.id;
const { posts: converted, dropped } = convertItems(UPGRADE_ITEMS, { copyrightItems: 'text-card' });
const byId = new Map(UPGRADE_ITEMS.map((i) => [i.id, i]));
const inputs = (): PostInput[] =>
  converted.map((post) => ({
    mediaId: post.id,
    post,
    contentHash: contentHash(post),
    earliestOe: earliestExpiry(byId.get(post.id)!) ?? null,
  }));
const adopted: PostInput = {
  mediaId: ADOPTED_ID,
  post: ADOPTED_POST,
  contentHash: contentHash(ADOPTED_POST),
  earliestOe: null,
};

/** The feed as publishing writes it. */
async function feedText(): Promise<string> {
  const account = (await getAccount(db, accountId))!;
  const built = await buildAccountFeed(db, account, UPGRADE_PUBLIC_URL, UPGRADE_NOW);
  return JSON.stringify(built.feed);
}

beforeAll(async () => {
  golden = (await readFile(new URL('../fixtures/store-upgrade-feed.json', import.meta.url), 'utf8')).trim();
  const fresh = await freshDatabase('storeupgrade');
  db = createPool(fresh.url, { max: 2 });
  cleanups.push(fresh.drop, () => db.end());
  // The schema as it was before 018.
  const before = await mkdtemp(join(tmpdir(), 'fm-migrations-017-'));
  cleanups.push(() => rm(before, { recursive: true, force: true }));
  await cp(DEFAULT_MIGRATIONS_DIR, before, {
    recursive: true,
    filter: (src) => !/\/0(1[89]|[2-9]\d)_[^/]*\.sql$/.test(src),
  });
  const applied = await migrate(db, { dir: before });
  expect(applied.current).toBe('017_leases.sql');
  await upsertAccount(db, UPGRADE_ACCOUNT, UPGRADE_NOW);
  // The rows exactly as the store wrote them before 018: each post whole, each copy's variants
  // with their keys.
  for (const p of [...inputs(), adopted])
    await db.query(
      `INSERT INTO posts (account_id, media_id, post, content_hash, earliest_oe, first_seen_at, last_seen_at)
       VALUES ($1, $2, $3, $4, $5, $6, $6)`,
      [accountId, p.mediaId, JSON.stringify(p.post), p.contentHash, p.earliestOe, UPGRADE_NOW],
    );
  for (const c of UPGRADE_COPIES)
    await db.query(
      `INSERT INTO media_copies (account_id, media_id, slot, source_id, key, width, height, bytes, content_type, variants, placeholder, copied_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 1000, $8, $9, $10, $11)`,
      [
        accountId,
        c.mediaId,
        c.slot,
        c.sourceId,
        c.key,
        c.width,
        c.height,
        c.contentType,
        JSON.stringify(c.variants),
        c.placeholder ? JSON.stringify(c.placeholder) : null,
        UPGRADE_NOW,
      ],
    );
});

afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe('upgrading to the compact posts and copies (migration 018)', () => {
  it('the fixture converts as it did when the golden feed was made', () => {
    expect(dropped).toEqual([]);
    expect(converted.map((p) => p.type)).toEqual(['image', 'carousel', 'video', 'text', 'image', 'image']);
  });

  it('migrates the rows: variants that follow the naming rule become sizes, others stay whole; posts stay whole', async () => {
    const { applied } = await migrate(db);
    // 018 first; the migrations of later releases after it.
    expect(applied[0]).toBe('018_compact_posts_and_copies.sql');
    const { rows } = await db.query<{ media_id: string; slot: string; variant_sizes: string | null; whole: boolean }>(
      `SELECT media_id, slot, variant_sizes, variants IS NOT NULL AS whole FROM media_copies ORDER BY media_id, slot`,
    );
    expect(rows).toEqual([
      {
        media_id: '17900000000000101',
        slot: 'cover',
        variant_sizes: '160x200.webp,240x300.webp,360x450.webp,540x675.webp,810x1013.webp',
        whole: false,
      },
      {
        media_id: '17900000000000102',
        slot: 'cover',
        variant_sizes: '160x160.webp,160x160.avif,240x240.webp,240x240.avif,360x360.webp,360x360.avif',
        whole: false,
      },
      { media_id: '17900000000000102', slot: 'slide-2', variant_sizes: '160x120.webp,240x180.webp', whole: false },
      // cover-small.webp is not cover-00000000000a0106-w160.webp: kept with its keys.
      { media_id: '17900000000000106', slot: 'cover', variant_sizes: null, whole: true },
      { media_id: '17900000000000108', slot: 'cover', variant_sizes: '', whole: false },
      { media_id: '17900000000000109', slot: 'cover', variant_sizes: '160x160.webp', whole: false },
      { media_id: ADOPTED_ID, slot: 'cover', variant_sizes: '', whole: false },
    ]);
    const posts = await db.query<{ n: string }>(
      'SELECT count(*) AS n FROM posts WHERE post IS NOT NULL AND raw IS NULL',
    );
    expect(Number(posts.rows[0]!.n)).toBe(7);
  });

  it('every copy reads back as it was recorded: the same keys, sizes and types', async () => {
    const copies = await listMediaCopies(db, accountId);
    const expected = [...UPGRADE_COPIES]
      .sort((a, b) => a.mediaId.localeCompare(b.mediaId) || a.slot.localeCompare(b.slot))
      .map((c) => ({
        mediaId: c.mediaId,
        slot: c.slot,
        key: c.key,
        variants: c.variants.map((v) => ({ ...v, contentType: v.contentType ?? 'image/webp' })),
        placeholder: c.placeholder,
      }));
    expect(
      copies.map((c) => ({
        mediaId: c.mediaId,
        slot: c.slot,
        key: c.key,
        variants: c.variants,
        placeholder: c.placeholder,
      })),
    ).toEqual(expected);
  });

  it('the migrated rows publish the feed the code before 018 published, byte for byte', async () => {
    expect(await feedText()).toBe(golden);
  });

  it('the next listing writes the posts compact (the post taken over stays whole) and the feed is still the same bytes', async () => {
    const before = await db.query<{ media_id: string; size: number }>(
      'SELECT media_id, pg_column_size(posts.*) AS size FROM posts ORDER BY media_id',
    );
    await upsertPosts(db, accountId, inputs(), UPGRADE_NOW);
    await adoptPosts(db, accountId, [adopted], UPGRADE_NOW); // already stored: left as it is
    for (const c of await listMediaCopies(db, accountId)) await saveMediaCopy(db, c);
    const { rows } = await db.query<{ media_id: string; whole: boolean; size: number }>(
      'SELECT media_id, post IS NOT NULL AS whole, pg_column_size(posts.*) AS size FROM posts ORDER BY media_id',
    );
    expect(rows.filter((r) => r.whole).map((r) => r.media_id)).toEqual([ADOPTED_ID]);
    for (const r of rows.filter((x) => !x.whole)) {
      const old = before.rows.find((b) => b.media_id === r.media_id)!;
      expect(r.size).toBeLessThan(old.size * 0.75);
    }
    const copies = await db.query<{ whole: number }>(
      'SELECT count(*)::int AS whole FROM media_copies WHERE variants IS NOT NULL',
    );
    expect(copies.rows[0]!.whole).toBe(1); // the copy whose variant keys follow no rule
    expect(await feedText()).toBe(golden);
  });

  it('a post read back is the post written, keys in the order jsonb gave them', async () => {
    const stored = await listPosts(db, accountId);
    expect(stored.map((s) => s.mediaId)).toEqual([
      '17900000000000101',
      '17900000000000102',
      '17900000000000106',
      '17900000000000107',
      '17900000000000109', // same time as ...108: the greater id first
      '17900000000000108',
      ADOPTED_ID,
    ]);
    for (const s of stored) {
      const written = s.mediaId === ADOPTED_ID ? ADOPTED_POST : converted.find((p) => p.id === s.mediaId)!;
      const viaJsonb = (await db.query<{ j: unknown }>('SELECT $1::jsonb AS j', [JSON.stringify(written)])).rows[0]!.j;
      expect(JSON.stringify(jsonbOrdered(written))).toBe(JSON.stringify(viaJsonb));
      // What the store gave when it read the whole post from its jsonb column.
      expect(JSON.stringify(s.post)).toBe(JSON.stringify(postSchema.parse(viaJsonb)));
    }
  });

  it('renewed links are stored compact too, and read back as written', async () => {
    const video = converted.find((p) => p.type === 'video')!;
    const raw = {
      ...(video.raw as Record<string, unknown>),
      media_url: 'https://scontent.example.test/v/106/reel.mp4?oe=7b0afec4&sig=ff',
    };
    const [renewed] = convertItems([raw as unknown as Parameters<typeof convertItems>[0][number]], {
      copyrightItems: 'drop',
    }).posts;
    expect(packPost(renewed!).raw).not.toBeNull();
    await updatePostLinks(db, accountId, video.id, renewed!, null);
    const stored = (await listPosts(db, accountId)).find((p) => p.mediaId === video.id)!;
    expect(stored.post.media[0]!.url).toBe(raw.media_url);
    expect(JSON.stringify(stored.post)).toBe(JSON.stringify(postSchema.parse(jsonbOrdered(renewed))));
  });
});
