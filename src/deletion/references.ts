import type { Feed } from '../schema/v1.ts';
import { mediaPrefix } from '../storage/keys.ts';

/** The storage keys of this account's copies that a feed points at (every size of every image). */
export function referencedKeys(feed: Feed, accountId: string): string[] {
  const marker = mediaPrefix(accountId);
  const urls: string[] = [];
  for (const p of feed.posts) {
    if (p.thumbnailUrl) urls.push(p.thumbnailUrl);
    for (const s of p.thumbnailSizes ?? []) urls.push(s.url);
    for (const m of p.media) {
      urls.push(m.url);
      for (const s of m.sizes ?? []) urls.push(s.url);
    }
  }
  const keys = new Set<string>();
  for (const url of urls) {
    const path = url.split(/[?#]/)[0]!;
    const at = path.indexOf(`/${marker}`);
    if (at !== -1) keys.add(path.slice(at + 1));
    else if (path.startsWith(marker)) keys.add(path);
  }
  return [...keys];
}

/**
 * R-OWN-6: what a published feed needs in storage: every object it points at and the manifest of
 * each of those copies (`<slot>.json` beside it), which says the copy is complete.
 */
export function feedReferences(feed: Feed, accountId: string): Set<string> {
  const keep = new Set<string>();
  for (const key of referencedKeys(feed, accountId)) {
    keep.add(key);
    const slot = /\/([a-z0-9][a-z0-9-]*?)-[0-9a-f]{16}(?:-w\d+)?\.[a-z0-9]+$/.exec(key)?.[1];
    if (slot) keep.add(`${key.slice(0, key.lastIndexOf('/') + 1)}${slot}.json`);
  }
  return keep;
}
