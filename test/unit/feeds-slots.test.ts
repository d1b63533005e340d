import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { imageSlots } from '../../src/feeds/slots.ts';
import { contentHash, sourceIdOf, withoutSignatures } from '../../src/util/content-hash.ts';
import { stableStringify } from '../../src/util/stable-stringify.ts';
import { demoFeed } from '../../src/demo/demo-feed.ts';
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
  it('copies the cover and every photo slide once; a video file is a slot of its own, kind video (MIRROR_VIDEOS)', () => {
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
    expect(imageSlots(post).map((s) => [s.slot, s.kind, s.mediaIndexes])).toEqual([
      ['cover', 'image', [0]],
      ['video-1', 'video', [1]],
      ['slide-2', 'image', [2]],
    ]);
  });
  it('a video post copies its cover frame, and its file only as a video slot', () => {
    const post: Post = {
      ...base,
      type: 'video',
      thumbnailUrl: link('t.jpg'),
      media: [{ url: link('v.mp4'), mime: 'video/mp4' }],
    };
    expect(imageSlots(post).map((s) => [s.slot, s.kind])).toEqual([
      ['cover', 'image'],
      ['video-0', 'video'],
    ]);
  });
});

describe('contentHash', () => {
  it('ignores link signatures (R-LNK-2: re-signed links are the same file) but not content', () => {
    const a = { t: link('a.jpg', '1'), text: 'x' };
    expect(contentHash(a)).toBe(contentHash({ text: 'x', t: link('a.jpg', '2') }));
    expect(contentHash(a)).not.toBe(contentHash({ ...a, text: 'y' }));
    expect(sourceIdOf(link('a.jpg'))).toBe('https://cdn.example.com/a.jpg');
  });

  it('hashes what earlier versions hashed (the stored hashes keep matching): sorted JSON of the content without signatures', () => {
    const reference = (v: unknown) =>
      createHash('sha256')
        .update(stableStringify(withoutSignatures(v)))
        .digest('hex');
    const fixtures = ['feed-v1-valid.json', 'feed-v1-extended.json'].map(
      (f) => JSON.parse(readFileSync(new URL(`../fixtures/${f}`, import.meta.url), 'utf8')) as { posts: unknown[] },
    );
    const values: unknown[] = [
      demoFeed(new Date(Date.UTC(2026, 5, 1))),
      ...demoFeed(new Date(Date.UTC(2026, 5, 1))).posts,
      ...fixtures,
      ...fixtures.flatMap((f) => f.posts),
      { b: undefined, a: [undefined, null, 1.5, true, 'x'], c: { z: 'é"\\', y: [] } },
      {
        thumbnailUrl: link('a.jpg'),
        media: [{ url: link('b.jpg', '2') }, { url: 'http://127.0.0.1:4000/c.jpg?oe=1' }],
      },
    ];
    for (const v of values) expect(contentHash(v)).toBe(reference(v));
  });

  it("sourceIdOf: the parsed link's origin and path, for plain links and for those the parser rewrites", () => {
    const parsed = (url: string) => {
      const u = new URL(url);
      return `${u.origin}${u.pathname}`;
    };
    const urls = [
      'https://scontent.cdninstagram.com/v/t51.2885-15/123_456_n.jpg?stp=dst-jpg&oe=6960d200&_nc_sid=abc',
      'http://img.example.test/a/b.webp?oe=1',
      'https://cdn.example.com/x%20y.jpg?oe=1',
      'https://CDN.Example.com/a.jpg?oe=1',
      'https://cdn.example.com:443/a.jpg?oe=1',
      'https://cdn.example.com/a/../b.jpg?oe=1',
      'https://cdn.example.com/./b.jpg?oe=1',
      'https://127.0.0.1/a.jpg?oe=1',
      'https://1.2.3/a.jpg?oe=1',
      'https://user@cdn.example.com/a.jpg?oe=1',
      'https://cdn.example.com/a b.jpg?oe=1',
      'https://cdn.example.com/a.jpg#frag',
      'https://cdn.example.com?oe=1',
      'https://cdn.example.com/a.jpg',
      'https://xn--bcher-kva.example/a.jpg?oe=1',
      'http://127.0.0.1:41234/media/1/cover.jpg?oe=1&sig=2',
      'http://127.0.0.1:80/a.jpg?oe=1',
      'https://cdn.example.com:443/a.jpg?oe=1',
      'https://cdn.example.com:8443/a.jpg?oe=1',
      'https://cdn.example.com:99999/a.jpg?oe=1',
      'http://127.000.0.1/a.jpg?oe=1',
      'http://0x7f.0.0.1/a.jpg?oe=1',
      'http://256.1.1.1.example/a.jpg?oe=1',
    ];
    const safely = (url: string) => {
      try {
        return parsed(url);
      } catch {
        return url.split('?')[0];
      }
    };
    for (const url of urls) expect(sourceIdOf(url), url).toBe(safely(url));
    expect(sourceIdOf('not a url?x=1')).toBe('not a url');
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
