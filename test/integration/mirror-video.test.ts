import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DisallowedHostError, InvalidVideoError, TooLargeError } from '../../src/mirror/errors.ts';
import { mirrorVideo, type VideoJob } from '../../src/mirror/video.ts';
import { makeMp4, paddedMp4 } from '../../src/simulator/mp4.ts';
import { LocalStorage } from '../../src/storage/index.ts';

/**
 * R-LNK-5 with MIRROR_VIDEOS: a video copy's guards over real HTTP, into a real folder. The type
 * is checked from the signature, the byte cap is counted while reading (a host that announces no
 * length included), every redirect hop is checked against the allow-list; a refused file leaves
 * nothing in storage (no object, no temporary file, no manifest).
 */
let server: Server;
let base = '';
const mp4 = makeMp4('guard', { width: 720, height: 1280, seconds: 2 });

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/ok.mp4') return res.writeHead(200, { 'content-type': 'video/mp4' }).end(mp4);
    if (req.url === '/page.mp4')
      return res.writeHead(200, { 'content-type': 'video/mp4' }).end('<!doctype html>'.repeat(100));
    if (req.url === '/chunked.mp4') {
      // No Content-Length: only counting the bytes finds it too large.
      res.writeHead(200, { 'content-type': 'video/mp4' });
      paddedMp4(mp4, 5_000_000).stream.pipe(res);
      return;
    }
    if (req.url === '/away.mp4') return res.writeHead(302, { location: 'http://elsewhere.invalid/x.mp4' }).end();
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'fm-video-'));
  const storage = new LocalStorage(dir);
  const deps = { storage, limits: { allowedHosts: ['127.0.0.1'], timeoutMs: 10_000 } };
  const job = (path: string, maxBytes = 1_000_000): VideoJob => ({
    accountId: 'acc',
    mediaId: 'm1',
    slot: 'video-0',
    url: `${base}${path}`,
    sourceId: `${base}${path}`,
    maxBytes,
  });
  const files = () => readdirSync(dir, { recursive: true, withFileTypes: true }).filter((f) => f.isFile());
  return { storage, deps, job, files };
}

describe('mirrorVideo: guards and streaming (R-LNK-5)', () => {
  it('copies an MP4 with its header read, then reuses its manifest', async () => {
    const { storage, deps, job } = setup();
    const v = await mirrorVideo(deps, job('/ok.mp4'));
    expect(v).toMatchObject({ width: 720, height: 1280, durationSec: 2, bytes: mp4.length, reused: false });
    expect((await storage.get(v.key))!.body.equals(mp4)).toBe(true);
    expect((await mirrorVideo(deps, job('/ok.mp4'))).reused).toBe(true);
  });

  it('refuses a file that is not an MP4 from its signature, leaving nothing', async () => {
    const { deps, job, files } = setup();
    await expect(mirrorVideo(deps, job('/page.mp4'))).rejects.toThrow(InvalidVideoError);
    expect(files().filter((f) => !f.parentPath.includes('.meta'))).toEqual([]);
  });

  it('stops at the byte cap while reading a body of no announced length, leaving nothing', async () => {
    const { deps, job, files } = setup();
    await expect(mirrorVideo(deps, job('/chunked.mp4', 1_000_000))).rejects.toThrow(TooLargeError);
    expect(files().filter((f) => !f.parentPath.includes('.meta'))).toEqual([]);
  });

  it('checks every redirect hop against the allowed hosts', async () => {
    const { deps, job } = setup();
    await expect(mirrorVideo(deps, job('/away.mp4'))).rejects.toThrow(DisallowedHostError);
  });
});
