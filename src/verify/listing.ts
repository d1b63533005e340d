import { mediaPrefix } from '../storage/keys.ts';
import type { ListedObject, ObjectStorage } from '../storage/types.ts';

/**
 * Where verify reads what storage holds under each account's `media/<account>/`: the bucket
 * listed now (ListObjectsV2, a page of up to 1,000 keys a request with each key's size, ETag and
 * last-modified time), or an S3 Inventory report (./inventory.ts) for a bucket too large to list
 * every day. Either way the objects come in key order (byte order), which the merge with the
 * records read in the same order relies on.
 */
export interface Listing {
  /** 'listing' (the storage listed now) or 'inventory' (a report, taken at `takenAt`). */
  readonly kind: 'listing' | 'inventory';
  /**
   * When the listing was taken, for a report: an object it shows may have been deleted or
   * rewritten since, so what it alone says is wrong (an orphan, a wrong size) is confirmed with a
   * HEAD before it is reported. Undefined for a live listing.
   */
  readonly takenAt?: Date;
  /**
   * The objects under media/<accountId>/ in key order. Called in the accounts' key order (an
   * inventory is read once, front to back, and hands each account its part).
   */
  media(accountId: string): AsyncIterable<ListedObject>;
}

/** The storage listed now, one account prefix at a time. */
export function liveListing(storage: ObjectStorage, opts: { pageSize?: number } = {}): Listing {
  return { kind: 'listing', media: (accountId) => storage.listObjects(mediaPrefix(accountId), opts) };
}

/**
 * The content type a copy's object is written with, from its name's extension: the copy names
 * its files by their format (cover-<hash>.jpg, -w320.webp, <slot>.json; a video copy .mp4). A
 * record whose type is this one is settled by the listing (only the sampled HEADs look at the
 * stored header); any other is looked at with a HEAD.
 */
const TYPE_OF_EXTENSION: Readonly<Record<string, string>> = {
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  png: 'image/png',
  webp: 'image/webp',
  avif: 'image/avif',
  gif: 'image/gif',
  json: 'application/json',
  mp4: 'video/mp4',
  mov: 'video/quicktime',
  webm: 'video/webm',
};

export function typeOfKey(key: string): string | undefined {
  const ext = /\.([a-z0-9]+)$/.exec(key)?.[1];
  return ext === undefined ? undefined : TYPE_OF_EXTENSION[ext];
}

/**
 * Whether this run looks at `key`'s stored Content-Type with a HEAD: a share of the objects,
 * chosen by a hash of the key and the run's salt (the day), so each daily run samples others and
 * a problem anywhere is found within a few runs, at a cost of `share` HEADs per object.
 */
export function sampled(key: string, salt: string, share: number): boolean {
  if (share >= 1) return true;
  if (share <= 0) return false;
  // FNV-1a, 32 bits: cheap, and spread well enough for a sample.
  let h = 0x811c9dc5;
  const s = salt + key;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) / 0x100000000 < share;
}

/** At most `limit` of fn at once, across every caller of the returned function. */
export function limiter(limit: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    active++;
    try {
      return await fn();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}
