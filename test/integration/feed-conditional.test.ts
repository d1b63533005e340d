import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { FEED_CONTENT_TYPE } from '../../src/feeds/publish.ts';
import { notModified } from '../../src/http/conditional.ts';
import { feedsRouter } from '../../src/http/feeds.ts';
import { createStorage, LocalStorage, type S3Storage } from '../../src/storage/index.ts';
import { feedKey } from '../../src/storage/keys.ts';
import type { ObjectStorage } from '../../src/storage/types.ts';
import { S3RVER_CREDENTIALS, startS3, type TestS3 } from '../support/s3.ts';

/**
 * Conditional reads of GET /feeds/<id>.json, over a local folder and over S3
 * (s3rver): ETag and Last-Modified are the stored object's own, 304 answers a matching
 * If-None-Match or If-Modified-Since, and a changed feed gets new validators.
 */
let s3: TestS3;
let tmp = '';
let s3storage: ObjectStorage;
let local: ObjectStorage;

beforeAll(async () => {
  s3 = await startS3('feed-conditional');
  tmp = await mkdtemp(path.join(os.tmpdir(), 'feedmirror-conditional-'));
  local = new LocalStorage(tmp);
  s3storage = createStorage(
    loadConfig({ STORAGE_URL: `s3://${s3.bucket}/fm`, S3_ENDPOINT: s3.endpoint, S3_FORCE_PATH_STYLE: 'true' }),
    { credentials: S3RVER_CREDENTIALS, maxAttempts: 1 },
  );
});

afterAll(async () => {
  (s3storage as S3Storage | undefined)?.close();
  await s3?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

async function serve(storage: ObjectStorage): Promise<{ base: string; close: () => Promise<void> }> {
  const server: Server = express()
    .use(feedsRouter({ storage, publishStatus: false }))
    .listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

const feedBody = (n: number) => Buffer.from(JSON.stringify({ schemaVersion: 1, posts: [], n }));

describe.each([
  ['local folder', () => local],
  ['S3 (s3rver)', () => s3storage],
] as const)('conditional GET /feeds/<id>.json over %s', (_name, storageOf) => {
  it('ETag and Last-Modified come from the stored object; a matching If-None-Match or If-Modified-Since gets 304, a changed feed 200 with new validators', async () => {
    const storage = storageOf();
    const id = '17841400000000077';
    await storage.put(feedKey(id), feedBody(1), {
      contentType: FEED_CONTENT_TYPE,
      cacheControl: 'public, max-age=300',
    });
    const stored = await storage.get(feedKey(id));
    // The object in storage carries the validators (S3's own for a bucket).
    expect(stored?.etag).toMatch(/^"[0-9a-f]{32}"$/);
    expect(stored?.lastModified).toBeInstanceOf(Date);
    expect((await storage.head(feedKey(id)))?.etag).toBe(stored!.etag);

    const { base, close } = await serve(storage);
    try {
      const url = `${base}/feeds/${id}.json`;
      const first = await fetch(url);
      expect(first.status).toBe(200);
      const etag = first.headers.get('etag');
      const lastModified = first.headers.get('last-modified');
      expect(etag).toBe(stored!.etag);
      expect(lastModified).toBe(stored!.lastModified!.toUTCString());
      expect(first.headers.get('access-control-expose-headers')).toMatch(/ETag/);
      expect(Buffer.from(await first.arrayBuffer()).equals(feedBody(1))).toBe(true);

      const notModified = await fetch(url, { headers: { 'if-none-match': etag! } });
      expect(notModified.status).toBe(304);
      expect(await notModified.text()).toBe('');
      expect(notModified.headers.get('etag')).toBe(etag);
      // A list holding it, and the weak form, match too (RFC 9110 weak comparison).
      expect((await fetch(url, { headers: { 'if-none-match': `"nope", W/${etag}` } })).status).toBe(304);
      expect((await fetch(url, { headers: { 'if-modified-since': lastModified! } })).status).toBe(304);
      // If-None-Match wins over If-Modified-Since when both are sent.
      expect(
        (await fetch(url, { headers: { 'if-none-match': '"other"', 'if-modified-since': lastModified! } })).status,
      ).toBe(200);
      const before = new Date(new Date(lastModified!).getTime() - 1000).toUTCString();
      expect((await fetch(url, { headers: { 'if-modified-since': before } })).status).toBe(200);

      // The feed changes: the old ETag no longer matches.
      await storage.put(feedKey(id), feedBody(2), {
        contentType: FEED_CONTENT_TYPE,
        cacheControl: 'public, max-age=300',
      });
      const changed = await fetch(url, { headers: { 'if-none-match': etag! } });
      expect(changed.status).toBe(200);
      expect(changed.headers.get('etag')).not.toBe(etag);
      expect(Buffer.from(await changed.arrayBuffer()).equals(feedBody(2))).toBe(true);
      expect((await fetch(url, { headers: { 'if-none-match': changed.headers.get('etag')! } })).status).toBe(304);
    } finally {
      await close();
    }
  });
});

it('the local folder and S3 give the same ETag for the same bytes (readers may switch between them)', async () => {
  await local.put('feeds/same.json', feedBody(3), { contentType: FEED_CONTENT_TYPE, cacheControl: 'no-cache' });
  await s3storage.put('feeds/same.json', feedBody(3), { contentType: FEED_CONTENT_TYPE, cacheControl: 'no-cache' });
  expect((await local.get('feeds/same.json'))?.etag).toBe((await s3storage.get('feeds/same.json'))?.etag);
  // And what the bucket itself serves to a site reading it directly is that same ETag.
  const direct = await fetch(`${s3.endpoint}/${s3.bucket}/fm/feeds/same.json`, { method: 'HEAD' });
  expect(direct.headers.get('etag')).toBe((await s3storage.get('feeds/same.json'))?.etag);
});

describe('notModified (RFC 9110 preconditions at the origin)', () => {
  const at = new Date('2026-03-01T10:00:00.500Z');
  it('If-None-Match: exact, weak, listed or * match; anything else does not; it overrides If-Modified-Since', () => {
    const v = { etag: '"abc"', lastModified: at };
    expect(notModified({ 'if-none-match': '"abc"' }, v)).toBe(true);
    expect(notModified({ 'if-none-match': 'W/"abc"' }, v)).toBe(true);
    expect(notModified({ 'if-none-match': '"x", "abc"' }, v)).toBe(true);
    expect(notModified({ 'if-none-match': '*' }, v)).toBe(true);
    expect(notModified({ 'if-none-match': '"abcd"' }, v)).toBe(false);
    expect(notModified({ 'if-none-match': '"x"', 'if-modified-since': at.toUTCString() }, v)).toBe(false);
    expect(notModified({ 'if-none-match': '"abc"' }, { lastModified: at })).toBe(false);
  });
  it('If-Modified-Since: at or after the second of Last-Modified matches; before, or not a date, does not', () => {
    const v = { lastModified: at };
    expect(notModified({ 'if-modified-since': 'Sun, 01 Mar 2026 10:00:00 GMT' }, v)).toBe(true);
    expect(notModified({ 'if-modified-since': 'Sun, 01 Mar 2026 10:00:05 GMT' }, v)).toBe(true);
    expect(notModified({ 'if-modified-since': 'Sun, 01 Mar 2026 09:59:59 GMT' }, v)).toBe(false);
    expect(notModified({ 'if-modified-since': 'yesterday' }, v)).toBe(false);
    expect(notModified({}, { etag: '"abc"', lastModified: at })).toBe(false);
  });
});
