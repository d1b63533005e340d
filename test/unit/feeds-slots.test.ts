import { describe, expect, it } from 'vitest';
import { contentHash, imageSlots, sourceIdOf } from '../../src/feeds/slots.ts';
import { feedCacheControl } from '../../src/feeds/publish.ts';
import type { Post } from '../../src/schema/v1.ts';

const link = (path: string, oe = '6960d200') => `https://cdn.example.com/${path}?oe=${oe}&sig=abc`;
const base = {
  id: '1',
  source: 'instagram',
  format: 'post',
  status: 'published' as const,
  url: 'https://x.example/p/1/',
  text: '',
  publishedAt: '2026-01-01T00:00:00.000Z',
};

describe('imageSlots (R-LNK-5)', () => {
  it('copies the cover and every photo slide once; video files are not copied', () => {
    const post: Post = {
      ...base,
      type: 'carousel',
      thumbnailUrl: link('a.jpg'),
      media: [
        { url: link('a.jpg', '1'), mime: 'image/jpeg' },
        { url: link('v.mp4'), mime: 'video/mp4' },
        { url: link('c.jpg'), mime: 'image/jpeg' },
      ],
    };
    expect(imageSlots(post).map((s) => [s.slot, s.mediaIndexes])).toEqual([
      ['cover', [0]],
      ['slide-2', [2]],
    ]);
  });
  it('a video post copies only its cover frame', () => {
    const post: Post = {
      ...base,
      type: 'video',
      thumbnailUrl: link('t.jpg'),
      media: [{ url: link('v.mp4'), mime: 'video/mp4' }],
    };
    expect(imageSlots(post).map((s) => s.slot)).toEqual(['cover']);
  });
});

describe('contentHash', () => {
  it('ignores link signatures (R-LNK-2: re-signed links are the same file) but not content', () => {
    const a = { t: link('a.jpg', '1'), text: 'x' };
    expect(contentHash(a)).toBe(contentHash({ text: 'x', t: link('a.jpg', '2') }));
    expect(contentHash(a)).not.toBe(contentHash({ ...a, text: 'y' }));
    expect(sourceIdOf(link('a.jpg'))).toBe('https://cdn.example.com/a.jpg');
  });
});

describe('feedCacheControl (R-LNK-4)', () => {
  const now = new Date(Date.UTC(2026, 0, 1));
  it('shorter than the earliest oe of platform links minus 600 s, capped by the default', () => {
    const oe = (Math.floor(now.getTime() / 1000) + 700).toString(16);
    // The stored earliest oe decides (parsed once when the listing was read), not the URL.
    const earliestOe = new Date(now.getTime() + 700_000);
    expect(feedCacheControl({ platformLinks: [link('v.mp4', oe)], earliestOe }, now)).toBe('public, max-age=100');
    expect(feedCacheControl({ platformLinks: [link('v.mp4')], earliestOe: null }, now)).toBe('public, max-age=300');
    expect(feedCacheControl({ platformLinks: [], earliestOe }, now)).toBe('public, max-age=300');
  });
});
