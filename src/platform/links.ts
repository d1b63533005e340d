/**
 * Signed media links and their expiry (`oe`). Pure functions: no clock of their own, no I/O.
 * The lifetime of a link is unpublished (R-LNK-2): every expiry is read from the link itself.
 */

/** The parts of a media item (or a carousel slide) that carry signed links. */
export interface LinkBearing {
  media_url?: string;
  thumbnail_url?: string;
  children?: { data: ReadonlyArray<{ media_url?: string; thumbnail_url?: string }> };
}

/** oe is at most 12 hex digits: anything longer is not a plausible Unix time in seconds. */
const OE_RE = /^[0-9a-f]{1,12}$/i;

/**
 * The moment a signed link dies: its `oe` query parameter, Unix seconds in hex (R-LNK-1).
 * Missing, empty or invalid `oe`, or an unparseable URL => undefined (unknown expiry).
 */
export function parseOe(url: string): Date | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  const oe = parsed.searchParams.get('oe');
  if (!oe || !OE_RE.test(oe)) return undefined;
  const seconds = Number.parseInt(oe, 16);
  if (!Number.isSafeInteger(seconds) || seconds <= 0) return undefined;
  const at = new Date(seconds * 1000);
  return Number.isFinite(at.getTime()) ? at : undefined;
}

/** Every signed link of an item: media_url, thumbnail_url and each slide's (R-LNK-4, R-MED-9). */
export function itemLinks(item: LinkBearing): string[] {
  const links: string[] = [];
  if (item.media_url) links.push(item.media_url);
  if (item.thumbnail_url) links.push(item.thumbnail_url);
  for (const child of item.children?.data ?? []) {
    if (child.media_url) links.push(child.media_url);
    if (child.thumbnail_url) links.push(child.thumbnail_url);
  }
  return links;
}

/** The earliest `oe` among all links of one item or many; undefined when no link carries one. */
export function earliestExpiry(items: LinkBearing | readonly LinkBearing[]): Date | undefined {
  const list: readonly LinkBearing[] = Array.isArray(items) ? items : [items as LinkBearing];
  let earliest: number | undefined;
  for (const item of list) {
    for (const link of itemLinks(item)) {
      const at = parseOe(link)?.getTime();
      if (at !== undefined && (earliest === undefined || at < earliest)) earliest = at;
    }
  }
  return earliest === undefined ? undefined : new Date(earliest);
}

/**
 * Whether a link is dead (or will be within `marginMs`) at `now`. An unknown expiry is not
 * treated as expired: the download itself tells (HTTP 403, R-LNK-3).
 */
export function isLinkExpired(url: string, now: Date, marginMs = 0): boolean {
  const oe = parseOe(url);
  if (!oe) return false;
  return now.getTime() + marginMs >= oe.getTime();
}

export interface CacheLifetimeOptions {
  /** Safety margin before the earliest oe (R-LNK-4: 600 s). */
  marginSeconds?: number;
  /** Lifetime when no link carries oe (R-LNK-4: "a short lifetime"). */
  unknownSeconds?: number;
}

/**
 * How long a page of posts may be cached (R-LNK-4): time to the earliest oe among media_url,
 * thumbnail_url and children links, minus the margin, never below 0. No oe anywhere => the short
 * lifetime. Links without oe next to links with one do not shorten it (the spec's rule reads the
 * earliest oe only).
 */
export function cacheLifetimeSeconds(items: readonly LinkBearing[], now: Date, opts: CacheLifetimeOptions = {}): number {
  const marginSeconds = opts.marginSeconds ?? 600;
  const unknownSeconds = opts.unknownSeconds ?? 300;
  const earliest = earliestExpiry(items);
  if (!earliest) return unknownSeconds;
  const remaining = Math.floor((earliest.getTime() - now.getTime()) / 1000) - marginSeconds;
  return Math.max(0, remaining);
}
