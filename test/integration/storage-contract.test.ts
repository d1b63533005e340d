import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { InvalidKeyError, StorageUnavailableError } from '../../src/storage/errors.ts';
import { createStorage } from '../../src/storage/index.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { S3Storage } from '../../src/storage/s3.ts';
import type { ObjectStorage } from '../../src/storage/types.ts';
import { S3RVER_CREDENTIALS, startS3, type TestS3 } from '../support/s3.ts';

/** Every byte value, in an order that is not a simple ramp: catches framing and encoding bugs. */
const binary = Buffer.from(Array.from({ length: 200_003 }, (_, i) => (i * 7919 + (i >> 8)) % 256));
const opts = { contentType: 'image/jpeg', cacheControl: 'public, max-age=31536000, immutable' };

async function collect(it: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const k of it) out.push(k);
  return out;
}

let s3: TestS3;
let localRoot: string;
const made: Record<string, ObjectStorage> = {};

beforeAll(async () => {
  s3 = await startS3();
  localRoot = await mkdtemp(path.join(os.tmpdir(), 'feedmirror-local-'));
  made.s3 = createStorage(
    loadConfig({ STORAGE_URL: `s3://${s3.bucket}/contract`, S3_ENDPOINT: s3.endpoint, S3_FORCE_PATH_STYLE: 'true' }),
    {
      credentials: S3RVER_CREDENTIALS,
    },
  );
  made.local = createStorage(loadConfig({ STORAGE_URL: localRoot }));
});

afterAll(async () => {
  (made.s3 as S3Storage | undefined)?.close();
  await s3?.close();
  await rm(localRoot, { recursive: true, force: true });
});

describe.each(['s3', 'local'] as const)('ObjectStorage contract: %s', (kind) => {
  const storage = () => {
    const s = made[kind];
    if (!s) throw new Error('storage not set up');
    return s;
  };

  it('is the implementation STORAGE_URL asks for', () => {
    expect(storage().kind).toBe(kind);
    expect(storage()).toBeInstanceOf(kind === 's3' ? S3Storage : LocalStorage);
  });

  it('binary round trip is byte-exact, with content type and cache control kept', async () => {
    await storage().put('media/acc/m1/cover.jpg', binary, opts);
    const got = await storage().get('media/acc/m1/cover.jpg');
    expect(got).not.toBeNull();
    // A streamed body against s3rver would come back with aws-chunked framing: longer, different bytes.
    expect(got!.body.length).toBe(binary.length);
    expect(got!.body.equals(binary)).toBe(true);
    expect(got!.contentType).toBe('image/jpeg');
    expect(got!.cacheControl).toBe(opts.cacheControl);
    const head = await storage().head('media/acc/m1/cover.jpg');
    expect(head).toMatchObject({ size: binary.length, contentType: 'image/jpeg' });
    // the HTTP validators, the same on both backends for the same bytes (S3's single-PUT ETag is the MD5).
    const md5 = `"${createHash('md5').update(binary).digest('hex')}"`;
    expect(got!.etag).toBe(md5);
    expect(head!.etag).toBe(md5);
    expect(got!.lastModified).toBeInstanceOf(Date);
  });

  it('an empty object is fine', async () => {
    await storage().put('media/acc/m1/empty.json', Buffer.alloc(0), {
      contentType: 'application/json',
      cacheControl: 'no-cache',
    });
    expect((await storage().get('media/acc/m1/empty.json'))?.body.length).toBe(0);
    expect((await storage().head('media/acc/m1/empty.json'))?.size).toBe(0);
  });

  it('missing keys: get and head answer null, delete is fine', async () => {
    expect(await storage().get('feeds/nobody.json')).toBeNull();
    expect(await storage().head('feeds/nobody.json')).toBeNull();
    await expect(storage().delete('feeds/nobody.json')).resolves.toBeUndefined();
    // A "folder" is not an object.
    expect(await storage().get('media/acc')).toBeNull();
  });

  it('overwrite replaces the whole object, content type and cache control included', async () => {
    const a = Buffer.alloc(100_000, 'a');
    const b = Buffer.alloc(50_000, 'b');
    await storage().put('feeds/acc.json', a, { contentType: 'application/json', cacheControl: 'no-cache' });
    await storage().put('feeds/acc.json', b, { contentType: 'text/plain', cacheControl: 'max-age=60' });
    const last = await storage().get('feeds/acc.json');
    expect(last?.body.equals(b)).toBe(true);
    expect(last?.contentType).toBe('text/plain');
    expect(last?.cacheControl).toBe('max-age=60');
    expect((await storage().head('feeds/acc.json'))?.size).toBe(b.length);
  });

  it('list by prefix in key order; deletePrefix removes exactly that prefix', async () => {
    const keys = ['media/acc2/m1/a.jpg', 'media/acc2/m1/b.webp', 'media/acc2/m2/a.jpg', 'media/acc22/m1/a.jpg'];
    for (const k of keys) await storage().put(k, Buffer.from(k), opts);
    expect(await collect(storage().list('media/acc2/'))).toEqual(keys.slice(0, 3));
    expect(await collect(storage().list('media/acc2'))).toEqual(keys);
    expect(await collect(storage().list('media/acc2/m1/'))).toEqual(keys.slice(0, 2));
    expect(await collect(storage().list('media/none/'))).toEqual([]);

    expect(await storage().deletePrefix('media/acc2/m1/')).toBe(2);
    expect(await collect(storage().list('media/acc2'))).toEqual([keys[2], keys[3]]);
    expect(await storage().deletePrefix('media/acc2/')).toBe(1);
    expect(await storage().get('media/acc22/m1/a.jpg')).not.toBeNull();
    expect(await storage().deletePrefix('media/acc2/')).toBe(0);
    await storage().delete('media/acc22/m1/a.jpg');
    expect(await storage().head('media/acc22/m1/a.jpg')).toBeNull();
  });

  it('refuses invalid keys and prefixes (no path traversal)', async () => {
    for (const bad of ['../escape.txt', 'media/../../escape', '/abs', 'a//b', '.meta/x', 'media/a/.hidden', '']) {
      await expect(storage().put(bad, Buffer.from('x'), opts), bad).rejects.toBeInstanceOf(InvalidKeyError);
      await expect(storage().get(bad), bad).rejects.toBeInstanceOf(InvalidKeyError);
      await expect(storage().delete(bad), bad).rejects.toBeInstanceOf(InvalidKeyError);
    }
    await expect(storage().deletePrefix('')).rejects.toBeInstanceOf(InvalidKeyError);
    await expect(collect(storage().list('../'))).rejects.toBeInstanceOf(InvalidKeyError);
  });

  it('publicUrl points at the object', () => {
    const url = storage().publicUrl('media/acc/m1/cover.jpg');
    expect(url.endsWith('/media/acc/m1/cover.jpg')).toBe(true);
    if (kind === 's3') expect(url).toBe(`${s3.endpoint}/${s3.bucket}/contract/media/acc/m1/cover.jpg`);
    else expect(url).toMatch(/^file:\/\//);
  });

  it('ping succeeds while the storage is up', async () => {
    await expect(storage().ping()).resolves.toBeUndefined();
  });
});

describe('S3 specifics', () => {
  it('MEDIA_PUBLIC_URL wins over the endpoint address', () => {
    const s = createStorage(
      loadConfig({
        STORAGE_URL: 's3://bucket/p',
        S3_ENDPOINT: 'http://127.0.0.1:9',
        S3_FORCE_PATH_STYLE: 'true',
        MEDIA_PUBLIC_URL: 'https://cdn.example.com/m/',
      }),
      { credentials: S3RVER_CREDENTIALS },
    );
    expect(s.publicUrl('media/a/b/c.jpg')).toBe('https://cdn.example.com/m/media/a/b/c.jpg');
    (s as S3Storage).close();
  });

  it('storage down: put and ping throw StorageUnavailableError naming the endpoint, never credentials; back up: works again', async () => {
    const down = await startS3('down-test');
    const storage = createStorage(
      loadConfig({ STORAGE_URL: `s3://${down.bucket}`, S3_ENDPOINT: down.endpoint, S3_FORCE_PATH_STYLE: 'true' }),
      {
        credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'very-secret-value-123' },
        maxAttempts: 2,
      },
    );
    try {
      await storage.put('feeds/a.json', Buffer.from('{}'), {
        contentType: 'application/json',
        cacheControl: 'no-cache',
      });
      await down.stop();
      const err = await storage
        .put('feeds/a.json', Buffer.from('{}'), { contentType: 'application/json', cacheControl: 'no-cache' })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StorageUnavailableError);
      expect((err as StorageUnavailableError).retryable).toBe(true);
      expect((err as Error).message).toContain(down.endpoint);
      expect((err as Error).message).toContain('down-test');
      expect((err as Error).message).not.toContain('very-secret-value-123');
      await expect(storage.ping()).rejects.toBeInstanceOf(StorageUnavailableError);
      await expect(storage.get('feeds/a.json')).rejects.toBeInstanceOf(StorageUnavailableError);

      await down.start();
      await expect(storage.ping()).resolves.toBeUndefined();
      expect((await storage.get('feeds/a.json'))?.body.toString()).toBe('{}');
    } finally {
      (storage as S3Storage).close();
      await down.close();
    }
  });
});

describe('local specifics', () => {
  // Local only: S3 PutObject is atomic by the service's semantics, while s3rver's file store is not
  // (it streams a file while it is replaced), so racing readers against it would test s3rver.
  it('overwrite is atomic: concurrent readers see the old or the new object, never a torn one', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'feedmirror-race-'));
    const local = new LocalStorage(root);
    const storage = () => local;
    const a = Buffer.alloc(1_000_000, 'a');
    const b = Buffer.alloc(500_000, 'b');
    await storage().put('feeds/race.json', a, { contentType: 'application/json', cacheControl: 'no-cache' });
    const seen: string[] = [];
    let writing = true;
    // One writer overwriting in turn while readers read in a loop until the writer is done.
    const writer = (async () => {
      for (let i = 0; i < 30; i++)
        await storage().put('feeds/race.json', i % 2 ? a : b, {
          contentType: 'application/json',
          cacheControl: 'no-cache',
        });
      writing = false;
    })();
    const reader = async () => {
      while (writing) {
        const body = (await storage().get('feeds/race.json'))?.body;
        seen.push(!body ? 'missing' : body.equals(a) ? 'a' : body.equals(b) ? 'b' : `torn(${body.length})`);
      }
    };
    await Promise.all([writer, reader(), reader(), reader()]);
    expect(seen.length).toBeGreaterThan(10);
    expect(seen).toContain('b');
    expect(seen.filter((s) => s !== 'a' && s !== 'b')).toEqual([]);
    await rm(root, { recursive: true, force: true });
  });

  it('objects are plain files (servable as-is); metadata in .meta sidecars that are never listed', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'feedmirror-local2-'));
    try {
      const storage = new LocalStorage(root);
      await storage.put('media/a/b/x.webp', Buffer.from('webp!'), { contentType: 'image/webp', cacheControl: 'c' });
      expect((await readdir(path.join(root, 'media/a/b'))).sort()).toEqual(['x.webp']); // no temp files left
      expect(await collect(storage.list(''))).toEqual(['media/a/b/x.webp']);
      // A file copied in by hand, without a sidecar: content type from its extension.
      await writeFile(path.join(root, 'media/a/b/y.png'), 'png');
      expect(await storage.head('media/a/b/y.png')).toMatchObject({ size: 3, contentType: 'image/png' });
      expect(await storage.deletePrefix('media/a/')).toBe(2);
      expect(await readdir(root)).toEqual([]); // empty folders and sidecars are cleaned up
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('ping throws StorageUnavailableError when the folder cannot be created', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'feedmirror-local3-'));
    try {
      await writeFile(path.join(dir, 'a-file'), 'x');
      const storage = new LocalStorage(path.join(dir, 'a-file', 'storage')); // a folder under a file
      await expect(storage.ping()).rejects.toBeInstanceOf(StorageUnavailableError);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/**
 * An S3-compatible server in front of s3rver with one rule of its own for multi-object deletes
 * (POST ?delete), as real servers differ: 'md5' refuses a request without a correct Content-MD5
 * (400, like servers that still require it); 'unsupported' answers 501 NotImplemented.
 * Everything else is forwarded untouched (same Host, so s3rver's signature check still passes).
 */
async function strictProxy(
  upstream: string,
  rule: 'md5' | 'unsupported',
): Promise<{ endpoint: string; bulkDeletes: () => number; close: () => Promise<void> }> {
  const { createServer, request } = await import('node:http');
  const { createHash } = await import('node:crypto');
  const target = new URL(upstream);
  let bulk = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.method === 'POST' && /[?&]delete(=|&|$)/.test(req.url ?? '')) {
        bulk++;
        const refuse = (status: number, code: string) => {
          res.writeHead(status, { 'content-type': 'application/xml' });
          res.end(
            `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${code}</Message></Error>`,
          );
        };
        if (rule === 'unsupported') return refuse(501, 'NotImplemented');
        const md5 = req.headers['content-md5'];
        if (md5 !== createHash('md5').update(body).digest('base64'))
          return refuse(400, md5 ? 'BadDigest' : 'InvalidRequest');
      }
      const fwd = request(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      fwd.on('error', () => res.destroy());
      fwd.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as import('node:net').AddressInfo).port;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bulkDeletes: () => bulk,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

describe('S3 deletePrefix works on every S3-compatible server (S3_CHECKSUMS=when_required)', () => {
  // A post's folder holds its copies, variants and manifests: many objects sharing folders.
  const postKeys = (acc: string) =>
    Array.from({ length: 8 }, (_, m) =>
      ['cover-0123456789abcdef.jpg', 'cover-0123456789abcdef-w320.webp', 'cover.json', 'slide-1.json'].map(
        (n) => `media/${acc}/m${m}/${n}`,
      ),
    ).flat();

  async function fill(storage: ObjectStorage, keys: string[]) {
    for (const k of keys) await storage.put(k, Buffer.from(k), opts);
  }

  const s3For = (endpoint: string, bucket: string) =>
    createStorage(
      loadConfig({
        STORAGE_URL: `s3://${bucket}/dp`,
        S3_ENDPOINT: endpoint,
        S3_FORCE_PATH_STYLE: 'true',
        S3_CHECKSUMS: 'when_required',
      }),
      {
        credentials: S3RVER_CREDENTIALS,
        maxAttempts: 1, // no SDK retry hiding a refused request
      },
    ) as S3Storage;

  it('against s3rver: a folder of many objects is deleted whole, with an exact count, no HTTP 500', async () => {
    const storage = s3For(s3.endpoint, s3.bucket);
    try {
      const keys = postKeys('dp1');
      await fill(storage, [...keys, 'media/dp1x/m0/cover.json']);
      expect(await storage.deletePrefix('media/dp1/')).toBe(keys.length);
      expect(await collect(storage.list('media/dp1/'))).toEqual([]);
      expect(await collect(storage.list('media/dp1x/'))).toEqual(['media/dp1x/m0/cover.json']); // a sibling prefix is kept
      await fill(storage, keys.slice(0, 4));
      expect(await storage.deletePrefix('media/dp1/m0/')).toBe(4); // one post's folder (publish's prune)
      expect(await collect(storage.list('media/dp1/'))).toEqual([]);
    } finally {
      storage.close();
    }
  });

  it('a server that requires Content-MD5 on DeleteObjects gets a correct one: deleted in one request', async () => {
    const proxy = await strictProxy(s3.endpoint, 'md5');
    const storage = s3For(proxy.endpoint, s3.bucket);
    try {
      const keys = postKeys('dp2').slice(0, 4); // one folder: s3rver's own folder race stays out of this test
      await fill(storage, keys);
      expect(await storage.deletePrefix('media/dp2/m0/')).toBe(4);
      expect(proxy.bulkDeletes()).toBe(1);
      expect(await collect(storage.list('media/dp2/'))).toEqual([]);
    } finally {
      storage.close();
      await proxy.close();
    }
  });

  it('a server without DeleteObjects (501): objects are deleted one by one, and the batch is not asked again', async () => {
    const proxy = await strictProxy(s3.endpoint, 'unsupported');
    const storage = s3For(proxy.endpoint, s3.bucket);
    try {
      const keys = postKeys('dp3');
      await fill(storage, keys);
      expect(await storage.deletePrefix('media/dp3/m1/')).toBe(4);
      expect(await storage.deletePrefix('media/dp3/')).toBe(keys.length - 4);
      expect(proxy.bulkDeletes()).toBe(1);
      expect(await collect(storage.list('media/dp3/'))).toEqual([]);
    } finally {
      storage.close();
      await proxy.close();
    }
  });
});
