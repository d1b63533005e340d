import http from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { downloadImage } from '../../src/mirror/download.ts';
import { DisallowedHostError, DownloadError, LinkExpiredError, TooLargeError } from '../../src/mirror/errors.ts';
import { HOUR, ManualClock } from '../../src/util/clock.ts';

/**
 * A real image host on 127.0.0.1 (node:http), and a second one on another port that is NOT on the
 * allow-list, to prove redirects there are never followed.
 */
const clock = new ManualClock(Date.UTC(2026, 0, 1));
const oeHex = (ms: number) => Math.floor(ms / 1000).toString(16);
let jpeg: Buffer;
let base: string;
let evilBase: string;
let evilHits = 0;
const hits: Record<string, number> = {};
/** Bytes the server managed to hand to the socket for the streaming routes, settled on close. */
const sent: Record<string, Promise<number>> = {};
let server: http.Server;
let evil: http.Server;

function pump(name: string, res: http.ServerResponse, limit: number): void {
  const chunk = Buffer.alloc(64 * 1024, 0xff);
  let count = 0;
  sent[name] = new Promise((resolve) => res.on('close', () => resolve(count)));
  const go = () => {
    while (!res.destroyed && count < limit) {
      count += chunk.length;
      if (!res.write(chunk)) {
        res.once('drain', go);
        return;
      }
    }
  };
  go();
}

async function listen(s: http.Server): Promise<string> {
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  jpeg = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#336699' } })
    .jpeg()
    .toBuffer();
  server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    hits[path] = (hits[path] ?? 0) + 1;
    switch (path) {
      case '/ok.jpg':
        res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': jpeg.length }).end(jpeg);
        return;
      case '/hop1':
        res.writeHead(302, { location: '/hop2?sig=abc' }).end();
        return;
      case '/hop2':
        res.writeHead(301, { location: `${base}/ok.jpg` }).end();
        return;
      case '/to-evil':
        res.writeHead(302, { location: `${evilBase}/x.jpg` }).end();
        return;
      case '/to-file':
        res.writeHead(302, { location: 'file:///etc/passwd' }).end();
        return;
      case '/loop':
        res.writeHead(302, { location: '/loop' }).end();
        return;
      case '/huge-declared':
        res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': '2147483648' });
        pump(path, res, 2147483648);
        return;
      case '/endless':
        res.writeHead(200, { 'content-type': 'image/jpeg' }); // chunked, no length
        pump(path, res, Number.POSITIVE_INFINITY);
        return;
      case '/slow':
        res.writeHead(200, { 'content-type': 'image/jpeg' });
        res.write(jpeg.subarray(0, 10)); // then nothing, ever
        return;
      case '/hang':
        return; // never answers
      case '/cut':
        // Announces the whole image, sends part of it, then drops the connection.
        res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': jpeg.length });
        res.write(jpeg.subarray(0, 10), () => res.socket?.destroy());
        return;
      case '/expired':
        res.writeHead(403, { 'content-type': 'text/plain' }).end('URL signature expired');
        return;
      case '/forbidden':
        res.writeHead(403, { 'content-type': 'text/plain' }).end('Forbidden');
        return;
      case '/down':
        res.writeHead(503).end('try later');
        return;
      default:
        res.writeHead(404).end('not found');
    }
  });
  evil = http.createServer((_req, res) => {
    evilHits++;
    res.writeHead(200, { 'content-type': 'image/jpeg' }).end(jpeg);
  });
  base = await listen(server);
  evilBase = await listen(evil);
});

afterAll(async () => {
  server.closeAllConnections();
  evil.closeAllConnections();
  await new Promise((r) => server.close(r));
  await new Promise((r) => evil.close(r));
});

const opts = () => ({ allowedHosts: [new URL(base).host], maxBytes: 1024 * 1024, timeoutMs: 5_000, clock });

describe('downloadImage', () => {
  it('downloads from an allowed host, following allowed redirects', async () => {
    const out = await downloadImage(`${base}/hop1?oe=${oeHex(clock.now().getTime() + HOUR)}`, opts());
    expect(out.body.equals(jpeg)).toBe(true);
    expect(out.contentType).toBe('image/jpeg');
    expect(out.finalUrl).toBe(`${base}/ok.jpg`);
  });

  it('refuses a host outside the allow-list without contacting it', async () => {
    await expect(downloadImage(`${evilBase}/x.jpg`, opts())).rejects.toBeInstanceOf(DisallowedHostError);
    expect(evilHits).toBe(0);
  });

  it('refuses a redirect to a disallowed host, and never follows it', async () => {
    const err = await downloadImage(`${base}/to-evil`, opts()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DisallowedHostError);
    expect((err as Error).message).toContain(new URL(evilBase).host);
    expect(evilHits).toBe(0);
  });

  it('refuses non-http schemes, directly or by redirect', async () => {
    await expect(downloadImage('file:///etc/passwd', { ...opts(), allowedHosts: [''] })).rejects.toBeInstanceOf(
      DisallowedHostError,
    );
    await expect(downloadImage(`${base}/to-file`, opts())).rejects.toThrow(/only http and https/);
  });

  it('gives up after maxRedirects', async () => {
    const err = await downloadImage(`${base}/loop`, { ...opts(), maxRedirects: 3 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DownloadError);
    expect((err as Error).message).toMatch(/more than 3 redirects/);
  });

  it('refuses a "2 GB" Content-Length up front without reading the body', async () => {
    const err = await downloadImage(`${base}/huge-declared`, opts()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TooLargeError);
    expect((err as Error).message).toContain('2147483648');
    // The connection is dropped: the server could hand over no more than socket buffers' worth.
    expect(await sent['/huge-declared']).toBeLessThan(64 * 1024 * 1024);
  });

  it('stops an endless chunked body as soon as maxBytes is exceeded', async () => {
    const err = await downloadImage(`${base}/endless`, opts()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TooLargeError);
    expect((err as TooLargeError).maxBytes).toBe(1024 * 1024);
    expect(await sent['/endless']).toBeLessThan(64 * 1024 * 1024);
  });

  it('times out a server that stops sending the body, and one that never answers (retryable)', async () => {
    for (const path of ['/slow', '/hang']) {
      const started = Date.now();
      const err = await downloadImage(`${base}${path}`, { ...opts(), timeoutMs: 300 }).catch((e: unknown) => e);
      expect(err, path).toBeInstanceOf(DownloadError);
      expect((err as Error).message).toMatch(/timed out after 300 ms/);
      expect((err as DownloadError).retryable).toBe(true);
      expect(Date.now() - started).toBeLessThan(4_000);
    }
  });

  it('a connection dropped mid-body, or refused, is a retryable DownloadError naming the cause, not a timeout', async () => {
    const cut = await downloadImage(`${base}/cut`, opts()).catch((e: unknown) => e);
    expect(cut).toBeInstanceOf(DownloadError);
    expect((cut as DownloadError).retryable).toBe(true);
    expect((cut as Error).message).toMatch(/download of .*\/cut failed: /);
    // Port 1 on 127.0.0.1: nothing listens there, the connection is refused.
    const refused = await downloadImage('http://127.0.0.1:1/x.jpg', { ...opts(), allowedHosts: ['127.0.0.1:1'] }).catch(
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(DownloadError);
    expect((refused as DownloadError).retryable).toBe(true);
    expect((refused as Error).message).toContain('failed: ECONNREFUSED');
  });

  it('keeps the connection for the next download (keep-alive), as a worker copying many images needs', async () => {
    const sockets = new Set<unknown>();
    const onConnection = (s: unknown) => sockets.add(s);
    server.on('connection', onConnection);
    try {
      for (let i = 0; i < 3; i++) await downloadImage(`${base}/ok.jpg`, opts());
    } finally {
      server.off('connection', onConnection);
    }
    expect(sockets.size).toBeLessThanOrEqual(1);
  });

  it('R-LNK-3: HTTP 403 "URL signature expired" => LinkExpiredError (renew, then copy)', async () => {
    const err = await downloadImage(
      `${base}/expired?oe=${oeHex(clock.now().getTime() + HOUR)}&_nc_sig=SECRETSIG`,
      opts(),
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LinkExpiredError);
    expect((err as Error).message).not.toContain('SECRETSIG');
  });

  it('R-LNK-1/R-LNK-3: a link past its oe is refused without asking the host', async () => {
    const before = hits['/ok.jpg'] ?? 0;
    const oe = clock.now().getTime() - 1000;
    // The expiry comes stored with the post (parsed once when the listing was read), not from the URL.
    const expiresAt = new Date(Math.floor(oe / 1000) * 1000);
    const err = await downloadImage(`${base}/ok.jpg?oe=${oeHex(oe)}`, { ...opts(), expiresAt }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(LinkExpiredError);
    expect((err as LinkExpiredError).expiredAt?.getTime()).toBe(Math.floor(oe / 1000) * 1000);
    expect(hits['/ok.jpg'] ?? 0).toBe(before);
    // Move time back before oe (a fresh clock): the same link works.
    const fresh = new ManualClock(oe - HOUR);
    await expect(
      downloadImage(`${base}/ok.jpg?oe=${oeHex(oe)}`, { ...opts(), expiresAt, clock: fresh }),
    ).resolves.toMatchObject({ contentType: 'image/jpeg' });
  });

  it('other non-2xx => DownloadError with status; 5xx retryable, 403 not', async () => {
    const forbidden = await downloadImage(`${base}/forbidden`, opts()).catch((e: unknown) => e);
    expect(forbidden).toBeInstanceOf(DownloadError);
    expect(forbidden).not.toBeInstanceOf(LinkExpiredError);
    expect((forbidden as DownloadError).status).toBe(403);
    expect((forbidden as DownloadError).retryable).toBe(false);
    const down = await downloadImage(`${base}/down`, opts()).catch((e: unknown) => e);
    expect((down as DownloadError).status).toBe(503);
    expect((down as DownloadError).retryable).toBe(true);
  });

  it('R-LNK-7: errors never carry the query string (it is the signature, sometimes a token)', async () => {
    const err = await downloadImage(`${base}/missing.jpg?access_token=IGQVJtoken123&oe=ffffffff`, opts()).catch(
      (e: unknown) => e,
    );
    expect((err as DownloadError).status).toBe(404);
    expect((err as Error).message).toContain('/missing.jpg');
    expect((err as Error).message).not.toContain('IGQVJtoken123');
    expect((err as Error).message).not.toContain('oe=');
  });
});
