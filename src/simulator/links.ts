import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signed media links of the fake CDN: `/v/<accountId>/<mediaId>/<slot>.<ext>?oe=<hex s>&sig=<hmac>`.
 * The signature covers the path and oe, so editing either breaks the link (R-MED-8: only the
 * single-media call renews a link); past oe the CDN answers 403 "URL signature expired" (R-LNK-3).
 * A link signed without oe (`?sig=` only: an unknown expiry, R-LNK-1) never expires.
 */

export const LINK_PATH_RE = /^\/v\/(\d+)\/(\d+)\/([a-z0-9-]+)\.(jpg|mp4)$/;

export interface LinkTarget {
  accountId: string;
  mediaId: string;
  slot: string;
  ext: 'jpg' | 'mp4';
}

export class LinkSigner {
  constructor(
    private readonly key: Buffer,
    private readonly baseUrl: () => string,
  ) {}

  private sig(pathname: string, oe: string): string {
    return createHmac('sha256', this.key).update(`${pathname}\n${oe}`).digest('hex').slice(0, 32);
  }

  /** A link valid until `expiresAtMs` (rounded down to the second, as oe is in seconds); null: no oe. */
  sign(t: LinkTarget, expiresAtMs: number | null): string {
    const pathname = `/v/${t.accountId}/${t.mediaId}/${t.slot}.${t.ext}`;
    if (expiresAtMs === null) return `${this.baseUrl()}${pathname}?sig=${this.sig(pathname, '')}`;
    const oe = Math.floor(expiresAtMs / 1000).toString(16);
    return `${this.baseUrl()}${pathname}?oe=${oe}&sig=${this.sig(pathname, oe)}`;
  }

  /** Check a request: 'bad' for a tampered or unknown link, else its expiry in ms and its target. */
  verify(
    pathname: string,
    query: Record<string, string>,
  ): { kind: 'bad' } | { kind: 'ok'; expiresAtMs: number; target: LinkTarget } {
    const m = LINK_PATH_RE.exec(pathname);
    const oe = query.oe;
    const sig = query.sig;
    if (!m || !sig || (oe !== undefined && !/^[0-9a-f]{1,12}$/.test(oe))) return { kind: 'bad' };
    const expected = Buffer.from(this.sig(pathname, oe ?? ''));
    const given = Buffer.from(sig);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { kind: 'bad' };
    return {
      kind: 'ok',
      expiresAtMs: oe === undefined ? Number.POSITIVE_INFINITY : parseInt(oe, 16) * 1000,
      target: { accountId: m[1] as string, mediaId: m[2] as string, slot: m[3] as string, ext: m[4] as 'jpg' | 'mp4' },
    };
  }
}
