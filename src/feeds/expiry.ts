/**
 * The one expiry model (R-LNK-1..R-LNK-5): every decision about a link's life comes from the
 * earliest `oe` stored with the post (posts.earliest_oe), parsed once when the listing (or the
 * single-media read) was read (src/platform/links.ts), never from a URL again.
 */
export interface LinkExpiry {
  /** R-LNK-5: copy the post's images before this moment (the earliest oe); null = unknown. */
  copyDeadline: Date | null;
  /** R-LNK-3 / R-MED-8: renew the links before using them (dead, or dying within the margin). */
  renew: boolean;
  /** R-LNK-4: how long something holding these links may be cached, seconds (oe - now - margin). */
  cacheSeconds: number;
}

export interface LinkExpiryOptions {
  /** Renew when the links die within this long (a download or a feed's lifetime takes time). */
  renewMarginMs?: number;
  /** R-LNK-4: 600 s. */
  cacheMarginSeconds?: number;
  /** R-LNK-4: no oe anywhere -> a short lifetime. */
  unknownCacheSeconds?: number;
}

export function linkExpiry(earliestOe: Date | null, now: Date, opts: LinkExpiryOptions = {}): LinkExpiry {
  if (!earliestOe) return { copyDeadline: null, renew: false, cacheSeconds: opts.unknownCacheSeconds ?? 300 };
  const left = earliestOe.getTime() - now.getTime();
  return {
    copyDeadline: earliestOe,
    // An unknown expiry is never "expired": the host's answer tells (HTTP 403, R-LNK-3).
    renew: left <= (opts.renewMarginMs ?? 0),
    cacheSeconds: Math.max(0, Math.floor(left / 1000) - (opts.cacheMarginSeconds ?? 600)),
  };
}
