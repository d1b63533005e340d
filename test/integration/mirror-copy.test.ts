import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import {
  IMMUTABLE_CACHE_CONTROL,
  mirrorImage,
  findOrphanMedia,
  mirrorLimitsFromConfig,
  type MirrorLimits,
} from '../../src/mirror/copy.ts';
import { downloadImage } from '../../src/mirror/download.ts';
import { InvalidImageError, LinkExpiredError } from '../../src/mirror/errors.ts';
import { StorageUnavailableError } from '../../src/storage/errors.ts';
import { createStorage } from '../../src/storage/index.ts';
import { parseOwnedKey } from '../../src/storage/keys.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import type { S3Storage } from '../../src/storage/s3.ts';
import type { ObjectStorage, PutOptions } from '../../src/storage/types.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { S3RVER_CREDENTIALS, startS3, type TestS3 } from '../support/s3.ts';

const clock = new ManualClock(Date.UTC(2026, 0, 1));
const oe = (Math.floor(clock.now().getTime() / 1000) + 3 * 24 * 3600).toString(16);
let photo: Buffer; // 1200x900 JPEG
let server: http.Server;
let base: string;
let s3: TestS3;
let tmp: string;
let limits: MirrorLimits;

/** Real storage that counts puts and can be told to fail on a key (a crash mid-copy). */
class CountingStorage {
  puts: string[] = [];
  gets: string[] = [];
  failOn?: RegExp | undefined;
  constructor(readonly inner: ObjectStorage) {}
  wrap(): ObjectStorage {
    const s = Object.create(this.inner) as ObjectStorage;
    s.put = async (key: string, body: Buffer, opts: PutOptions) => {
      if (this.failOn?.test(key)) throw new StorageUnavailableError(`simulated crash before writing ${key}`);
      this.puts.push(key);
      return this.inner.put(key, body, opts);
    };
    s.get = async (key: string) => {
      this.gets.push(key);
      return this.inner.get(key);
    };
    return s;
  }
}

function countingDownload() {
  const calls: string[] = [];
  const fn: typeof downloadImage = (url, opts) => {
    calls.push(url);
    return downloadImage(url, opts);
  };
  return { calls, fn };
}

async function keys(storage: ObjectStorage, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const k of storage.list(prefix)) out.push(k);
  return out;
}

beforeAll(async () => {
  photo = await sharp({ create: { width: 1200, height: 900, channels: 3, background: '#aa5500' } })
    .jpeg({ quality: 80 })
    .toBuffer();
  server = http.createServer((req, res) => {
    const p = new URL(req.url ?? '/', 'http://x').pathname;
    if (p === '/photo.jpg') res.writeHead(200, { 'content-type': 'image/jpeg' }).end(photo);
    else if (p === '/expired.jpg') res.writeHead(403).end('URL signature expired');
    else if (p === '/page.jpg') res.writeHead(200, { 'content-type': 'image/jpeg' }).end('<html>login required</html>');
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  s3 = await startS3('mirror-test');
  tmp = await mkdtemp(path.join(os.tmpdir(), 'feedmirror-mirror-'));
  limits = {
    ...mirrorLimitsFromConfig(loadConfig({ MEDIA_VARIANT_WIDTHS: '320,640,1000,1080,2000' })),
    allowedHosts: [new URL(base).host],
  };
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await s3?.close();
  await rm(tmp, { recursive: true, force: true });
});

describe('mirrorImage', () => {
  it('R-LNK-5 / R-CNV-11: copies the original and variants, measured, content-addressed, immutable', async () => {
    const storage = new LocalStorage(path.join(tmp, 'a'), 'https://media.example.com/');
    const out = await mirrorImage(
      { storage, limits, clock },
      { accountId: 'acc1', mediaId: '1790001', slot: 'cover', url: `${base}/photo.jpg?oe=${oe}` },
    );
    const sha16 = createHash('sha256').update(photo).digest('hex').slice(0, 16);
    expect(out.key).toBe(`media/acc1/1790001/cover-${sha16}.jpg`);
    expect(out.url).toBe(`https://media.example.com/media/acc1/1790001/cover-${sha16}.jpg`);
    expect(out).toMatchObject({
      width: 1200,
      height: 900,
      contentType: 'image/jpeg',
      bytes: photo.length,
      reused: false,
    });
    // 2000 >= 1200 is skipped: no enlargement; 1080 is within 15% of 1200: the original serves it.
    expect(out.variants.map((v) => [v.width, v.height, v.key, v.contentType])).toEqual([
      [320, 240, `media/acc1/1790001/cover-${sha16}-w320.webp`, 'image/webp'],
      [640, 480, `media/acc1/1790001/cover-${sha16}-w640.webp`, 'image/webp'],
      [1000, 750, `media/acc1/1790001/cover-${sha16}-w1000.webp`, 'image/webp'],
    ]);
    // the placeholder is kept in the manifest with the copy.
    expect(out.placeholder?.color).toMatch(/^#[0-9a-f]{6}$/);
    expect(out.placeholder?.thumbhash.length).toBeGreaterThan(10);
    const stored = await storage.get(out.key);
    expect(stored?.body.equals(photo)).toBe(true);
    expect(stored?.cacheControl).toBe(IMMUTABLE_CACHE_CONTROL);
    expect((await storage.head(out.variants[0]!.key))?.contentType).toBe('image/webp');
  });

  it('is idempotent: the second run downloads nothing, uploads nothing and returns the same keys', async () => {
    const counting = new CountingStorage(new LocalStorage(path.join(tmp, 'b')));
    const storage = counting.wrap();
    const dl = countingDownload();
    const job = { accountId: 'acc1', mediaId: '1790002', slot: 'slide-0', url: `${base}/photo.jpg?oe=${oe}` };
    const first = await mirrorImage({ storage, limits, clock, download: dl.fn }, job);
    expect(dl.calls).toHaveLength(1);
    expect(counting.puts).toHaveLength(5); // original + 3 variants + manifest
    expect(counting.puts.at(-1)).toBe('media/acc1/1790002/slide-0.json'); // manifest written LAST

    counting.puts = [];
    const second = await mirrorImage({ storage, limits, clock, download: dl.fn }, job);
    expect(dl.calls).toHaveLength(1);
    expect(counting.puts).toEqual([]);
    expect(second.reused).toBe(true);
    expect({ ...second, reused: false }).toEqual(first);
  });

  it("a job's first attempt does not look for a manifest; a retry after a crash past the upload finds it", async () => {
    const counting = new CountingStorage(new LocalStorage(path.join(tmp, 'first')));
    const storage = counting.wrap();
    const dl = countingDownload();
    const job = { accountId: 'acc1', mediaId: '1790009', slot: 'cover', url: `${base}/photo.jpg?oe=${oe}` };
    const first = await mirrorImage({ storage, limits, clock, download: dl.fn }, { ...job, firstAttempt: true });
    expect(counting.gets).toEqual([]); // no storage read: nothing of a first attempt can be there
    expect(first.reused).toBe(false);
    expect(counting.puts.at(-1)).toBe('media/acc1/1790009/cover.json');
    // The bookkeeping after the upload failed; the retry (not a first attempt) reuses the copy.
    counting.puts = [];
    const retry = await mirrorImage({ storage, limits, clock, download: dl.fn }, job);
    expect(counting.gets).toEqual(['media/acc1/1790009/cover.json']);
    expect(retry.reused).toBe(true);
    expect(counting.puts).toEqual([]);
    expect(dl.calls).toHaveLength(1);
  });

  it('a crash mid-copy leaves no manifest; the re-run writes the same names, no duplicates', async () => {
    const counting = new CountingStorage(new LocalStorage(path.join(tmp, 'c')));
    const storage = counting.wrap();
    const job = { accountId: 'acc1', mediaId: '1790003', slot: 'cover', url: `${base}/photo.jpg?oe=${oe}` };
    counting.failOn = /-w1000\.webp$/;
    await expect(mirrorImage({ storage, limits, clock }, job)).rejects.toBeInstanceOf(StorageUnavailableError);
    const partial = await keys(storage, 'media/acc1/1790003/');
    expect(partial).toHaveLength(3); // original + 2 variants, no manifest
    expect(partial.some((k) => k.endsWith('.json'))).toBe(false);

    counting.failOn = undefined;
    const out = await mirrorImage({ storage, limits, clock }, job);
    expect(out.reused).toBe(false);
    const all = await keys(storage, 'media/acc1/1790003/');
    expect(all).toEqual([out.key, ...out.variants.map((v) => v.key), 'media/acc1/1790003/cover.json'].sort());
    for (const k of partial) expect(all).toContain(k); // the same names were rewritten
  });

  it('R-LNK-3: an expired link fails with LinkExpiredError and uploads nothing; the renewed link copies', async () => {
    const counting = new CountingStorage(new LocalStorage(path.join(tmp, 'd')));
    const storage = counting.wrap();
    const job = { accountId: 'acc1', mediaId: '1790004', slot: 'cover', url: `${base}/expired.jpg?oe=${oe}` };
    await expect(mirrorImage({ storage, limits, clock }, job)).rejects.toBeInstanceOf(LinkExpiredError);
    // Past-oe link (its expiry as stored with the post, R-LNK-1): refused before any request.
    const past = Math.floor(clock.now().getTime() / 1000) - 60;
    await expect(
      mirrorImage(
        { storage, limits, clock },
        { ...job, url: `${base}/photo.jpg?oe=${past.toString(16)}`, expiresAt: new Date(past * 1000) },
      ),
    ).rejects.toBeInstanceOf(LinkExpiredError);
    expect(counting.puts).toEqual([]);
    // The caller renews through the platform (R-MED-8) and retries with the new link.
    const out = await mirrorImage({ storage, limits, clock }, { ...job, url: `${base}/photo.jpg?oe=${oe}` });
    expect(out.width).toBe(1200);
  });

  it('a body that is not an image is refused and nothing is uploaded', async () => {
    const counting = new CountingStorage(new LocalStorage(path.join(tmp, 'e')));
    const job = { accountId: 'acc1', mediaId: '1790005', slot: 'cover', url: `${base}/page.jpg` };
    await expect(mirrorImage({ storage: counting.wrap(), limits, clock }, job)).rejects.toBeInstanceOf(
      InvalidImageError,
    );
    expect(counting.puts).toEqual([]);
  });

  it('refuses a slot that could escape its folder', async () => {
    const storage = new LocalStorage(path.join(tmp, 'f'));
    await expect(
      mirrorImage(
        { storage, limits, clock },
        { accountId: 'acc1', mediaId: 'm', slot: '../x', url: `${base}/photo.jpg` },
      ),
    ).rejects.toThrow(/slot/);
  });

  it('R-LNK-6: findOrphanMedia names the objects of what left the source, nothing else, and deletes nothing; every name the copy writes is one the deletion guard knows (R-DEL-2)', async () => {
    const storage = new LocalStorage(path.join(tmp, 'g'));
    for (const mediaId of ['m1', 'm2', 'm3']) {
      await mirrorImage(
        { storage, limits: { ...limits, variantWidths: [320, 640], variantFormats: ['webp', 'avif'] }, clock },
        { accountId: 'acc9', mediaId, slot: mediaId === 'm3' ? 'slide-2' : 'cover', url: `${base}/photo.jpg` },
      );
    }
    await mirrorImage(
      { storage, limits: { ...limits, variantWidths: [] }, clock },
      { accountId: 'acc99', mediaId: 'm1', slot: 'cover', url: `${base}/photo.jpg` },
    );
    const all = await keys(storage, 'media/');
    const found = await findOrphanMedia(storage, 'acc9', new Set(['m2']));
    expect(found.total).toBe(all.filter((k) => k.startsWith('media/acc9/')).length);
    expect([...found.orphans.keys()].sort()).toEqual(['m1', 'm3']);
    expect(found.orphans.get('m1')).toEqual(all.filter((k) => k.startsWith('media/acc9/m1/')));
    expect(await keys(storage, 'media/')).toEqual(all);
    // Original, 2 widths x 2 formats, manifest: each parses as a copy's object of its account.
    expect(all.filter((k) => k.startsWith('media/acc9/m3/'))).toHaveLength(6);
    for (const key of all)
      expect(parseOwnedKey(key), key).toMatchObject({ kind: 'media', accountId: key.split('/')[1] });
  });

  it('R-LNK-5: mirrors into S3 (s3rver); the S3 API returns the exact bytes, content type and cache control', async () => {
    const storage = createStorage(
      loadConfig({ STORAGE_URL: `s3://${s3.bucket}/fm`, S3_ENDPOINT: s3.endpoint, S3_FORCE_PATH_STYLE: 'true' }),
      {
        credentials: S3RVER_CREDENTIALS,
      },
    );
    const client = new S3Client({
      region: 'us-east-1',
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: S3RVER_CREDENTIALS,
    });
    try {
      const out = await mirrorImage(
        { storage, limits, clock },
        { accountId: 'acc1', mediaId: '1790007', slot: 'cover', url: `${base}/photo.jpg?oe=${oe}` },
      );
      expect(out.url).toBe(`${s3.endpoint}/${s3.bucket}/fm/${out.key}`);
      const got = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: `fm/${out.key}` }));
      const bytes = Buffer.from(await got.Body!.transformToByteArray());
      expect(bytes.equals(photo)).toBe(true);
      expect(got.ContentType).toBe('image/jpeg');
      expect(got.CacheControl).toBe(IMMUTABLE_CACHE_CONTROL);
      const v = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: `fm/${out.variants[0]!.key}` }));
      const vBytes = Buffer.from(await v.Body!.transformToByteArray());
      expect(v.ContentType).toBe('image/webp');
      expect(await sharp(vBytes).metadata()).toMatchObject({ format: 'webp', width: 320, height: 240 });
      const again = await mirrorImage(
        { storage, limits, clock },
        { accountId: 'acc1', mediaId: '1790007', slot: 'cover', url: `${base}/photo.jpg?oe=${oe}` },
      );
      expect(again).toMatchObject({ reused: true, key: out.key });
    } finally {
      client.destroy();
      (storage as S3Storage).close();
    }
  });
});
