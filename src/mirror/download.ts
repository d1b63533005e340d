import { systemClock, type Clock } from '../util/clock.ts';
import { redactUrl } from '../util/redact.ts';
import { DisallowedHostError, DownloadError, LinkExpiredError, TooLargeError } from './errors.ts';

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

/** Read at most `limit` bytes of a small error body (to spot "URL signature expired"). */
async function readSmallText(res: Response, limit = 4096): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    while (total < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      total += value.byteLength;
    }
  } catch {
    // A broken error body is still an error response; the status says enough.
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}

/**
 * Download one image over http(s) with every guard a server-side fetch of outside URLs needs:
 * allow-listed hosts on every redirect hop, a byte cap enforced while streaming, one timeout for
 * the whole download, and expired links recognised (R-LNK-3) so the caller can renew and retry.
 */
export async function downloadImage(url: string, opts: DownloadOptions): Promise<DownloadedImage> {
  const clock = opts.clock ?? systemClock;
  const maxRedirects = opts.maxRedirects ?? 5;
  let current: URL;
  try {
    current = new URL(url);
  } catch {
    throw new DownloadError(`not a valid URL: ${JSON.stringify(redactUrl(url).slice(0, 200))}`);
  }
  const abort = new AbortController();
  const signal = AbortSignal.any([abort.signal, AbortSignal.timeout(opts.timeoutMs)]);
  const wrap = (err: unknown): DownloadError => {
    const timedOut = signal.aborted && (signal.reason as Error | undefined)?.name === 'TimeoutError';
    if (timedOut)
      return new DownloadError(
        `download of ${redactUrl(current.href)} timed out after ${opts.timeoutMs} ms`,
        undefined,
        { retryable: true, cause: err },
      );
    return new DownloadError(
      `download of ${redactUrl(current.href)} failed: ${(err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name ?? 'Error'}`,
      undefined,
      { retryable: true, cause: err },
    );
  };

  try {
    for (let hop = 0; ; hop++) {
      checkUrl(current, opts.allowedHosts);
      checkOe(current, clock, opts.expiresAt);
      let res: Response;
      try {
        res = await fetch(current, {
          redirect: 'manual',
          signal,
          headers: { accept: 'image/*', 'user-agent': 'feedmirror' },
        });
      } catch (err) {
        throw wrap(err);
      }

      if (REDIRECTS.has(res.status)) {
        await res.body?.cancel().catch(() => undefined);
        const location = res.headers.get('location');
        if (!location) throw new DownloadError(`redirect without Location from ${redactUrl(current.href)}`, res.status);
        if (hop >= maxRedirects)
          throw new DownloadError(`more than ${maxRedirects} redirects from ${redactUrl(url)}`, res.status);
        current = new URL(location, current); // the next turn checks its host and scheme
        continue;
      }

      if (!res.ok) {
        const text = await readSmallText(res);
        // R-LNK-3: the image host's answer to a past-oe link.
        if (res.status === 403 && SIGNATURE_EXPIRED_RE.test(text)) {
          throw new LinkExpiredError(
            `image host says "URL signature expired" for ${redactUrl(current.href)}; renew the link through the platform`,
            opts.expiresAt ?? undefined,
          );
        }
        const retryable = res.status >= 500 || res.status === 429 || res.status === 408;
        throw new DownloadError(`image host answered HTTP ${res.status} for ${redactUrl(current.href)}`, res.status, {
          retryable,
        });
      }

      const declared = Number(res.headers.get('content-length'));
      if (Number.isFinite(declared) && declared > opts.maxBytes) {
        abort.abort();
        throw new TooLargeError(
          `image at ${redactUrl(current.href)} announces ${declared} bytes, more than the ${opts.maxBytes} allowed`,
          opts.maxBytes,
        );
      }

      const chunks: Uint8Array[] = [];
      let total = 0;
      if (res.body) {
        const reader = res.body.getReader();
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            total += value.byteLength;
            if (total > opts.maxBytes) {
              // Stop reading at once and drop the connection: an endless body must not be read to its end.
              abort.abort();
              throw new TooLargeError(
                `image at ${redactUrl(current.href)} is larger than the ${opts.maxBytes} bytes allowed`,
                opts.maxBytes,
              );
            }
            chunks.push(value);
          }
        } catch (err) {
          if (err instanceof TooLargeError) throw err;
          throw wrap(err);
        }
      }
      const contentType = res.headers.get('content-type') ?? undefined;
      return {
        body: Buffer.concat(chunks, total),
        ...(contentType ? { contentType } : {}),
        finalUrl: redactUrl(current.href),
      };
    }
  } finally {
    // Nothing may keep a socket open after we return or throw.
    if (!abort.signal.aborted) abort.abort();
  }
}
