import { randomBytes, createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import type { FeedDeps } from '../../src/feeds/deps.ts';
import { publishAccountFeed } from '../../src/feeds/publish.ts';
import { mirrorLimitsFromConfig } from '../../src/mirror/copy.ts';
import { PlatformClient } from '../../src/platform/client.ts';
import type { Post } from '../../src/schema/v1.ts';
import { createStorage, LocalStorage, mediaKey, type S3Storage } from '../../src/storage/index.ts';
import type { ObjectStorage } from '../../src/storage/types.ts';
import { upsertAccount } from '../../src/store/accounts.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { createPool } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { eachMediaCopyInKeyOrder, saveMediaCopy, upsertPosts } from '../../src/store/posts.ts';
import { systemClock } from '../../src/util/clock.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { openInventory } from '../../src/verify/inventory.ts';
import { runVerify } from '../../src/verify/verify.ts';
import { S3RVER_CREDENTIALS, startS3, type TestS3 } from '../support/s3.ts';
import { freshDatabase } from '../support/services.ts';
import { ownStorage } from '../support/storage-owner.ts';

/**
 * verify as a merge of the listing with the records read in the same key order: each kind of
 * problem found from a listing of 2 keys a page and copy records read 2 a query (so every
 * difference sits across page boundaries), HEADs only where the listing cannot decide, media ids
 * whose byte order differs from their plain order (`a-b/` before `a/`), and an S3 Inventory
 * report in place of the listing.
 */
const cipher = TokenCipher.fromEnv(randomBytes(32).toString('base64'));
const ACCOUNT = '17841400000000777';
const MEDIA = ['1790', '1790_3', '1791', '1792', '1793'];
// '-' (0x2D) and '_' (0x5F) around '/' (0x2F): the key order of their folders is 1780-2, 1780, 1780_3
// (s3rver walks folders in name order, so this order is checked against the local folder).
const TRICKY = ['1780', '1780-2', '1780_3'];
const VARIANT_WIDTHS = [160, 320];
let db: pg.Pool;
let drop: () => Promise<void>;
let s3: TestS3;
let storage: S3Storage;
let deps: FeedDeps;
const body = randomBytes(1500);

function keysOf(mediaId: string) {
  const stem = `cover-${createHash('sha256').update(mediaId).digest('hex').slice(0, 16)}`;
  return {
    original: mediaKey(ACCOUNT, mediaId, `${stem}.jpg`),
    variants: VARIANT_WIDTHS.map((w) => mediaKey(ACCOUNT, mediaId, `${stem}-w${w}.webp`)),
    manifest: mediaKey(ACCOUNT, mediaId, 'cover.json'),
  };
}

async function putAll(s: ObjectStorage, mediaId: string) {
  const k = keysOf(mediaId);
  const put = (key: string, type: string) => s.put(key, body, { contentType: type, cacheControl: 'no-cache' });
  await put(k.original, 'image/jpeg');
  for (const v of k.variants) await put(v, 'image/webp');
  await put(k.manifest, 'application/json');
}

beforeAll(async () => {
  const fresh = await freshDatabase('verifymerge');
  drop = fresh.drop;
  db = createPool(fresh.url, { max: 5 });
  await migrate(db);
  s3 = await startS3('verify-merge');
  const config = loadConfig({
    STORAGE_URL: `s3://${s3.bucket}/site`,
    S3_ENDPOINT: s3.endpoint,
    S3_FORCE_PATH_STYLE: 'true',
    MEDIA_PUBLIC_URL: 'https://cdn.example.test/site/',
  });
  storage = createStorage(config, { credentials: S3RVER_CREDENTIALS, maxAttempts: 1 }) as S3Storage;
  deps = {
    db,
    cipher,
    platform: new PlatformClient({
      graphUrl: 'http://127.0.0.1:9',
      apiVersion: 'v25.0',
      oauthTokenUrl: 'http://127.0.0.1:9',
    }),
    storage,
    limits: mirrorLimitsFromConfig(config),
    clock: systemClock,
    logger: silentLogger,
  };
  await ownStorage(db, storage);
  const now = new Date();
  await upsertAccount(db, { id: ACCOUNT, username: 'merge.shop' }, now);
  const inputs = MEDIA.map((mediaId, i) => {
    const link = `https://scontent.cdninstagram.com/v/t51/${mediaId}.jpg?oe=FFFFFFFF`;
    const post: Post = {
      id: mediaId,
      source: 'instagram',
      type: 'image',
      format: 'post',
      status: 'published',
      url: `https://www.instagram.com/p/${mediaId}/`,
      text: `post ${i}`,
      media: [{ url: link, mime: 'image/jpeg' }],
      thumbnailUrl: link,
      publishedAt: new Date(now.getTime() - i * 3_600_000).toISOString(),
    };
    return { mediaId, post, contentHash: mediaId, earliestOe: null };
  });
  await upsertPosts(db, ACCOUNT, inputs, now);
  for (const { mediaId, post } of inputs) {
    await putAll(storage, mediaId);
    const k = keysOf(mediaId);
    await saveMediaCopy(db, {
      accountId: ACCOUNT,
      mediaId,
      slot: 'cover',
      sourceId: post.thumbnailUrl.split('?')[0]!,
      key: k.original,
      width: 1080,
      height: 1080,
      bytes: body.length,
      contentType: 'image/jpeg',
      variants: k.variants.map((key, i) => ({
        key,
        width: VARIANT_WIDTHS[i]!,
        height: VARIANT_WIDTHS[i]!,
        contentType: 'image/webp',
      })),
      placeholder: null,
      copiedAt: now,
    });
  }
  expect((await publishAccountFeed(deps, ACCOUNT, { complete: true })).outcome).toBe('written');
});

afterAll(async () => {
  storage?.close();
  await s3?.close();
  await db?.end();
  await drop?.();
});

/**
 * The merge at its smallest pages: 2 copy records a query. The listing's pages of 2 keys are the
 * local folder's test below: s3rver answers 500 to every truncated listing on this Node (its
 * continuation tokens need DES, which OpenSSL 3 no longer has), so against it a prefix is one page.
 */
const small = { trigger: 'cli' as const, copyPageSize: 2, orphanGraceMs: 0 };

describe('verify: a merge of the listing with the records in key order', () => {
  it('the records come in S3 key order (COLLATE "C", the folder with its slash), as the listings give the objects', async () => {
    const keys: string[] = [];
    for await (const c of eachMediaCopyInKeyOrder(db, ACCOUNT, { pageSize: 2 })) keys.push(c.key);
    const listed: string[] = [];
    for await (const o of storage.listObjects(`media/${ACCOUNT}/`)) if (o.key.endsWith('.jpg')) listed.push(o.key);
    expect(keys).toEqual(listed);
    expect(listed.length).toBe(MEDIA.length);
    // Ids whose byte order differs from their plain order, against the local folder's listing.
    const dir = await mkdtemp(path.join(os.tmpdir(), 'feedmirror-order-'));
    const other = '17841400000000778';
    try {
      await upsertAccount(db, { id: other, username: 'order.shop' }, new Date());
      const local = new LocalStorage(dir);
      for (const m of TRICKY) {
        const key = mediaKey(other, m, 'cover-0000000000000001.jpg');
        await local.put(key, body, { contentType: 'image/jpeg', cacheControl: 'no-cache' });
        await saveMediaCopy(db, {
          accountId: other,
          mediaId: m,
          slot: 'cover',
          sourceId: `https://x.test/${m}`,
          key,
          width: 10,
          height: 10,
          bytes: body.length,
          contentType: 'image/jpeg',
          variants: [],
          placeholder: null,
          copiedAt: new Date(),
        });
      }
      const ordered: string[] = [];
      for await (const c of eachMediaCopyInKeyOrder(db, other, { pageSize: 2 })) ordered.push(c.mediaId);
      expect(ordered).toEqual(['1780-2', '1780', '1780_3']);
      const fromLocal: string[] = [];
      for await (const o of local.listObjects(`media/${other}/`)) fromLocal.push(o.key.split('/')[2]!);
      expect(fromLocal).toEqual(ordered);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('all well: every object settled by the listing, no HEAD but the sample; none at a sample of 0', async () => {
    const report = await runVerify(deps, { ...small, typeSample: 0 });
    expect(report.problems).toEqual([]);
    expect(report.counts).toMatchObject({ objects: MEDIA.length * 3, storedObjects: MEDIA.length * 4, heads: 0 });
    const sampledAll = await runVerify(deps, { ...small, typeSample: 1 });
    expect(sampledAll.ok).toBe(true);
    expect(sampledAll.counts.heads).toBe(MEDIA.length * 3);
  });

  it('missing, wrong size and orphan found from the listing alone (each confirmed by one HEAD); a wrong type by the sample', async () => {
    const missing = keysOf('1790').variants[1]!;
    const shortened = keysOf('1790_3').original;
    const retyped = keysOf('1791').variants[0]!;
    const orphan = mediaKey(ACCOUNT, '1792', 'cover-00000000000000aa.jpg');
    await storage.delete(missing);
    await storage.put(shortened, body.subarray(0, 100), { contentType: 'image/jpeg', cacheControl: 'no-cache' });
    await storage.put(retyped, body, { contentType: 'text/plain', cacheControl: 'no-cache' });
    await storage.put(orphan, body, { contentType: 'image/jpeg', cacheControl: 'no-cache' });
    try {
      const unsampled = await runVerify(deps, { ...small, typeSample: 0 });
      expect(unsampled.problems.map((p) => `${p.kind} ${p.key}`).sort()).toEqual(
        [`object-missing ${missing}`, `object-size ${shortened}`, `orphan ${orphan}`].sort(),
      );
      // One HEAD for the missing object and one for the damaged one; the orphan's age is the listing's.
      expect(unsampled.counts.heads).toBe(2);
      const sampled = await runVerify(deps, { ...small, typeSample: 1 });
      expect(sampled.problems.map((p) => `${p.kind} ${p.key}`)).toContain(`object-type ${retyped}`);
    } finally {
      await putAll(storage, '1790');
      await putAll(storage, '1790_3');
      await putAll(storage, '1791');
      await storage.delete(orphan);
    }
    expect((await runVerify(deps, { ...small, typeSample: 1 })).ok).toBe(true);
  });

  it('the local folder lists in the same byte order as S3', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'feedmirror-order-'));
    try {
      const local = new LocalStorage(dir);
      for (const m of MEDIA) await putAll(local, m);
      const fromLocal: string[] = [];
      for await (const o of local.listObjects(`media/${ACCOUNT}/`)) fromLocal.push(o.key);
      const fromS3: string[] = [];
      for await (const o of storage.listObjects(`media/${ACCOUNT}/`)) fromS3.push(o.key);
      expect(fromLocal).toEqual(fromS3);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('an S3 Inventory report (manifest.json and gzipped CSV as AWS writes them, in two files) as the listing: its orphan named after one HEAD; another bucket’s report and a Parquet one refused', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'feedmirror-inventory-'));
    const missing = keysOf('1792').original;
    const orphan = mediaKey(ACCOUNT, '1791', 'cover-00000000000000bb.jpg');
    try {
      await storage.put(orphan, body, { contentType: 'image/jpeg', cacheControl: 'no-cache' });
      // The report as S3 writes it: every object of the bucket, keys URL-encoded, in two files.
      const rows: string[] = [];
      for await (const o of storage.listObjects(''))
        rows.push(
          [
            s3.bucket,
            encodeURIComponent(`site/${o.key}`).replace(/%2F/g, '/'),
            String(o.size),
            o.lastModified!.toISOString(),
            (o.etag ?? '').replace(/"/g, ''),
          ]
            .map((v) => `"${v}"`)
            .join(','),
        );
      await storage.delete(missing); // deleted after the report: the listing shows it, a HEAD does not
      const config = 'feedmirror-daily';
      const root = path.join(dir, s3.bucket, config);
      await mkdir(path.join(root, 'data'), { recursive: true });
      await mkdir(path.join(root, '2026-11-27T01-00Z'), { recursive: true });
      const half = Math.ceil(rows.length / 2);
      const files = [rows.slice(0, half), rows.slice(half)].map((part, i) => {
        const name = `data/0000000${i}-inventory.csv.gz`;
        return { name, bytes: gzipSync(part.join('\n') + '\n') };
      });
      for (const f of files) await writeFile(path.join(root, f.name), f.bytes);
      const manifestPath = path.join(root, '2026-11-27T01-00Z', 'manifest.json');
      await writeFile(
        manifestPath,
        JSON.stringify({
          sourceBucket: s3.bucket,
          destinationBucket: 'arn:aws:s3:::inventory-reports',
          version: '2016-11-30',
          creationTimestamp: String(Date.now()),
          fileFormat: 'CSV',
          fileSchema: 'Bucket, Key, Size, LastModifiedDate, ETag',
          files: files.map((f) => ({
            key: `reports/${s3.bucket}/${config}/${f.name}`,
            size: f.bytes.length,
            MD5checksum: createHash('md5').update(f.bytes).digest('hex'),
          })),
        }),
      );
      const listing = await openInventory(manifestPath, storage.location);
      expect(listing.files).toBe(2);
      const report = await runVerify(deps, { trigger: 'cli', orphanGraceMs: 0, typeSample: 0, listing });
      // The original deleted after the report is settled by the report (it lists it): a report
      // is a day old, and only what it says is wrong is confirmed, here the orphan, by one HEAD.
      expect(report.problems.map((p) => `${p.kind} ${p.key}`)).toEqual([`orphan ${orphan}`]);
      expect(report.counts.heads).toBe(1);
      await expect(openInventory(manifestPath, { bucket: 'another-bucket', prefix: 'site/' })).rejects.toThrow(
        /lists bucket .* not another-bucket/,
      );
      await writeFile(manifestPath, JSON.stringify({ sourceBucket: s3.bucket, fileFormat: 'Parquet', files: [] }));
      await expect(openInventory(manifestPath, storage.location)).rejects.toThrow(/only CSV reports are read/);
    } finally {
      await putAll(storage, '1792');
      await storage.delete(orphan);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
