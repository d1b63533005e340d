/**
 * Signed media links and their expiry (`oe`). Pure functions: no clock of their own, no I/O.
 * The lifetime of a link is unpublished (R-LNK-2): every expiry is read from the link itself.
 */

/** The parts of a media item (or a carousel slide) that carry signed links. */
export interface LinkBearing {
  media_url?: string | undefined;
  thumbnail_url?: string | undefined;
  children?:
    { data: ReadonlyArray<{ media_url?: string | undefined; thumbnail_url?: string | undefined }> } | undefined;
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
