import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { systemClock, type Clock } from '../util/clock.ts';
import { redactUrl } from '../util/redact.ts';
import { Transform, type Readable } from 'node:stream';
import { StorageError } from '../storage/errors.ts';
import { DisallowedHostError, DownloadError, LinkExpiredError, MirrorError, TooLargeError } from './errors.ts';

export interface DownloadOptions {
  /** Entries: 'host' (exact, any port), '.suffix' (subdomains of suffix), 'host:port' (exact host and port). */
  allowedHosts: string[];
  maxBytes: number;
  /** Whole download, every redirect hop and the body included. */
  timeoutMs: number;
  maxRedirects?: number;
  /** "now" for the oe check; the system clock unless a test moves time. */
  clock?: Clock;
  /**
   * When the link dies (its oe, R-LNK-1), as stored when the listing was read: this module never
   * parses a URL for it. Unknown (absent or null): only the host's answer tells (R-LNK-3).
   */
  expiresAt?: Date | null;
}

export interface DownloadedImage {
  body: Buffer;
  contentType?: string;
  /** Last hop, without its query string (it may be signed). */
  finalUrl: string;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const SIGNATURE_EXPIRED_RE = /url signature expired/i;

/** Is this URL's host (and port) on the allow-list? */
export function isAllowedHost(url: URL, allowedHosts: readonly string[]): boolean {
  const host = url.hostname.toLowerCase();
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return allowedHosts.some((raw) => {
    const entry = raw.trim().toLowerCase();
    if (!entry) return false;
    if (entry.startsWith('.')) return host.endsWith(entry) && host.length > entry.length;
    const m = /^(.*):(\d+)$/.exec(entry);
    if (m && !entry.endsWith(']')) return host === m[1] && port === m[2];
    return host === entry;
  });
}

function checkUrl(url: URL, allowedHosts: readonly string[]): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new DisallowedHostError(`refusing to download ${redactUrl(url.href)}: only http and https are allowed`);
  }
  if (!isAllowedHost(url, allowedHosts)) {
    throw new DisallowedHostError(
      `refusing to download from ${url.host}: not in MEDIA_ALLOWED_HOSTS (${redactUrl(url.href)})`,
    );
  }
}

/** R-LNK-1/R-LNK-3: a link past its oe is dead; asking the host would only earn a 403. */
function checkOe(url: URL, clock: Clock, oe: Date | null | undefined): void {
  if (oe && oe.getTime() <= clock.now().getTime()) {
    throw new LinkExpiredError(
      `media link expired at ${oe.toISOString()} (oe); renew it through the platform (${redactUrl(url.href)})`,
      oe,
    );
  }
}

/** One request, answered once its status and headers are in (the body is still to read). */
function request(url: URL, signal: AbortSignal, accept: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    // The default agents keep connections alive (Node's own default since 19), as fetch's did.
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(
      url,
      { signal, headers: { accept, 'user-agent': 'feedmirror' } },
      resolve,
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * Read a response body, failing with `tooLarge()` as soon as it passes `limit` bytes (when given),
 * or reading at most `limit` bytes and stopping there (when not).
 */
function readBody(res: IncomingMessage, limit: number, tooLarge?: () => Error): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let settled = false;
    const finish = (err: unknown, body?: Buffer) => {
      if (settled) return;
      settled = true;
      res.off('data', onData);
      if (err) reject(err instanceof Error ? err : new Error(JSON.stringify(err)));
      else resolve(body!);
    };
    const onData = (chunk: Buffer) => {
      total += chunk.length;
      if (total > limit) {
        if (tooLarge) {
          finish(tooLarge());
          return;
        }
        chunks.push(chunk);
        finish(undefined, Buffer.concat(chunks, total).subarray(0, limit));
        return;
      }
      chunks.push(chunk);
    };
    res.on('data', onData);
    res.once('end', () => finish(undefined, Buffer.concat(chunks, total)));
    res.once('error', (err) => finish(err));
    // A connection dropped mid-body ends the response without 'end'.
    res.once('close', () => finish(res.complete ? undefined : new Error('aborted'), Buffer.concat(chunks, total)));
  });
}

/** What a successful response is handed to: its body still to read, the last hop (redacted). */
interface OpenedResponse {
  res: IncomingMessage;
  current: URL;
  /** Wrap a failure while reading the body as the download's error (timeout or network). */
  wrap: (err: unknown) => DownloadError;
}

/**
 * One guarded GET over http(s), with every guard a server-side fetch of outside URLs needs:
 * allow-listed hosts on every redirect hop, a byte cap (announced length here, the body's own
 * count by the reader), one timeout for the whole download, and expired links recognised
 * (R-LNK-3) so the caller can renew and retry. `read` gets a 2xx response and reads its body
 * within the same timeout. `what` names the file in messages ("image", "video").
 */
async function guardedGet<T>(
  url: string,
  opts: DownloadOptions,
  what: { noun: string; accept: string },
  read: (opened: OpenedResponse) => Promise<T>,
): Promise<T> {
  const clock = opts.clock ?? systemClock;
  const maxRedirects = opts.maxRedirects ?? 5;
  let current: URL;
  try {
    current = new URL(url);
  } catch {
    throw new DownloadError(`not a valid URL: ${JSON.stringify(redactUrl(url).slice(0, 200))}`);
  }
  // One timeout for the whole download, every hop and the body included; aborting destroys the
  // request in flight and its socket.
  const abort = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    abort.abort();
  }, opts.timeoutMs);
  timer.unref();
  let done = false;
  const wrap = (err: unknown): DownloadError => {
    if (timedOut)
      return new DownloadError(
        `download of ${redactUrl(current.href)} timed out after ${opts.timeoutMs} ms`,
        undefined,
        { retryable: true, cause: err },
      );
    const e = err as { cause?: { code?: string }; code?: string; name?: string };
    return new DownloadError(
      `download of ${redactUrl(current.href)} failed: ${e.cause?.code ?? e.code ?? e.name ?? 'Error'}`,
      undefined,
      { retryable: true, cause: err },
    );
  };

  try {
    for (let hop = 0; ; hop++) {
      checkUrl(current, opts.allowedHosts);
      checkOe(current, clock, opts.expiresAt);
      // A link with user:password@ is not a media link (fetch refused those too).
      if (current.username || current.password) throw wrap(new TypeError('a link with credentials'));
      let res: IncomingMessage;
      try {
        res = await request(current, abort.signal, what.accept);
      } catch (err) {
        throw wrap(err);
      }
      const status = res.statusCode ?? 0;

      if (REDIRECTS.has(status)) {
        res.resume(); // the body is not read; the connection goes back to the pool once it is drained
        const location = res.headers.location;
        if (!location) throw new DownloadError(`redirect without Location from ${redactUrl(current.href)}`, status);
        if (hop >= maxRedirects)
          throw new DownloadError(`more than ${maxRedirects} redirects from ${redactUrl(url)}`, status);
        current = new URL(location, current); // the next turn checks its host and scheme
        continue;
      }

      if (status < 200 || status > 299) {
        // A broken error body is still an error response; the status says enough.
        const text = (await readBody(res, 4096).catch(() => Buffer.alloc(0))).toString('utf8');
        // R-LNK-3: the image host's answer to a past-oe link.
        if (status === 403 && SIGNATURE_EXPIRED_RE.test(text)) {
          throw new LinkExpiredError(
            `image host says "URL signature expired" for ${redactUrl(current.href)}; renew the link through the platform`,
            opts.expiresAt ?? undefined,
          );
        }
        const retryable = status >= 500 || status === 429 || status === 408;
        throw new DownloadError(`image host answered HTTP ${status} for ${redactUrl(current.href)}`, status, {
          retryable,
        });
      }

      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > opts.maxBytes) {
        throw new TooLargeError(
          `${what.noun} at ${redactUrl(current.href)} announces ${declared} bytes, more than the ${opts.maxBytes} allowed`,
          opts.maxBytes,
          declared,
        );
      }
      const out = await read({ res, current, wrap });
      done = true;
      return out;
    }
  } finally {
    clearTimeout(timer);
    // Nothing may keep a socket open after we throw: a request or body left unread is destroyed
    // with its connection. A body read to its end has handed its connection back to the pool.
    if (!done && !abort.signal.aborted) abort.abort();
  }
}

/**
 * Download one image into memory with guardedGet's guards.
 * node:http rather than fetch: fetch's web streams, combined abort signals and a promise per chunk
 * cost several times the CPU for the same bytes, and copies are most of a worker's work
 * (docs/benchmarks.md compares them).
 */
export async function downloadImage(url: string, opts: DownloadOptions): Promise<DownloadedImage> {
  return guardedGet(url, opts, { noun: 'image', accept: 'image/*' }, async ({ res, current, wrap }) => {
    let body: Buffer;
    try {
      // Stops reading at once past maxBytes (the connection is dropped by guardedGet): an
      // endless body must not be read to its end.
      body = await readBody(
        res,
        opts.maxBytes,
        () =>
          new TooLargeError(
            `image at ${redactUrl(current.href)} is larger than the ${opts.maxBytes} bytes allowed`,
            opts.maxBytes,
          ),
      );
    } catch (err) {
      if (err instanceof TooLargeError) throw err;
      throw wrap(err);
    }
    const contentType = res.headers['content-type'];
    return {
      body,
      ...(contentType ? { contentType } : {}),
      finalUrl: redactUrl(current.href),
    };
  });
}

/** A streamed download's body as its reader gets it, and the size the host announced. */
export interface StreamedDownload {
  /** The body, counted: it fails with TooLargeError past maxBytes, never delivering more. */
  body: Readable;
  announcedBytes?: number;
  contentType?: string;
  finalUrl: string;
}

/**
 * Download a large file (a video) with guardedGet's guards, streaming it to `consume` instead of
 * holding it: the byte cap is counted as the bytes go by, the timeout covers the whole transfer
 * (consume included: it must read the body to its end or fail). Backpressure runs from consume's
 * writer (the storage upload) to the socket, so memory holds a few chunks, whatever the size.
 */
export async function downloadStream<T>(
  url: string,
  opts: DownloadOptions,
  consume: (d: StreamedDownload) => Promise<T>,
): Promise<T> {
  return guardedGet(url, opts, { noun: 'video', accept: 'video/*' }, async ({ res, current, wrap }) => {
    let seen = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        seen += chunk.length;
        if (seen > opts.maxBytes) {
          cb(
            new TooLargeError(
              `video at ${redactUrl(current.href)} is larger than the ${opts.maxBytes} bytes allowed`,
              opts.maxBytes,
            ),
          );
          return;
        }
        cb(null, chunk);
      },
    });
    // A response that fails or is cut mid-body fails the body its reader holds.
    res.once('error', (err) => counter.destroy(wrap(err)));
    res.once('close', () => {
      if (!res.complete) counter.destroy(wrap(new Error('aborted')));
    });
    res.pipe(counter);
    const declared = Number(res.headers['content-length']);
    const contentType = res.headers['content-type'];
    try {
      return await consume({
        body: counter,
        ...(Number.isFinite(declared) ? { announcedBytes: declared } : {}),
        ...(contentType ? { contentType } : {}),
        finalUrl: redactUrl(current.href),
      });
    } catch (err) {
      res.destroy();
      if (err instanceof MirrorError || err instanceof StorageError) throw err;
      throw wrap(err);
    }
  });
}
