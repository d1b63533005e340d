import type { Feed } from '../../src/schema/v1.ts';

/**
 * Every image URL of a feed, every size included (video files stay platform links): what the
 * storage journeys delete behind feedmirror's back and expect back after a repair or a sync.
 */
export function imageUrls(feed: Feed): string[] {
  const urls = new Set<string>();
  for (const p of feed.posts) {
    if (p.thumbnailUrl) urls.add(p.thumbnailUrl);
    for (const s of p.thumbnailSizes ?? []) urls.add(s.url);
    for (const m of p.media) {
      if (!m.mime.startsWith('image/')) continue;
      urls.add(m.url);
      for (const s of m.sizes ?? []) urls.add(s.url);
    }
  }
  return [...urls];
}
