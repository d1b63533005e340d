import { describe, expect, it } from 'vitest';
import { convertItem, convertItems } from '../../src/convert/convert-item.ts';
import { normalizeTimestamp } from '../../src/convert/timestamp.ts';
import type { MediaItem } from '../../src/platform/media-item.ts';
import { mediaItemSchema } from '../../src/platform/media-item.ts';
import { SOURCE } from '../../src/platform/identifiers.ts';
import { postSchema, type Post } from '../../src/schema/v1.ts';

const CDN = 'https://scontent-ams2-1.cdninstagram.com/v/t51.29350-15';
const photo = (n: number) => `${CDN}/${n}_n.jpg?stp=dst-jpg&_nc_ht=x&oh=00_AbC&oe=69A1B2C3`;
const video = (n: number) => `${CDN}/${n}_n.mp4?efg=x&oe=69A1B2C3`;
const cover = (n: number) => `${CDN}/${n}_cover.jpg?oe=69A1B2C3`;

/** Items as the media edge returns them with the full fields list (R-MED-3). */
const IMAGE: MediaItem = {
  id: '17900000000000001',
  caption: 'Morning light #harbour',
  media_type: 'IMAGE',
  media_product_type: 'FEED',
  media_url: photo(1),
  permalink: 'https://www.instagram.com/p/C1mage/',
  timestamp: '2026-02-28T09:15:00+0000',
  username: 'harbour.cafe',
  like_count: 12,
  comments_count: 3,
};
const VIDEO: MediaItem = {
  id: '17900000000000002',
  caption: 'Clip',
  media_type: 'VIDEO',
  media_product_type: 'FEED',
  media_url: video(2),
  thumbnail_url: cover(2),
  permalink: 'https://www.instagram.com/p/C2video/',
  timestamp: '2026-02-27T18:00:00+0000',
  username: 'harbour.cafe',
};
const REEL: MediaItem = {
  ...VIDEO,
  id: '17900000000000003',
  media_product_type: 'REELS',
  permalink: 'https://www.instagram.com/reel/C3reel/',
  is_shared_to_feed: true,
};
const CAROUSEL: MediaItem = {
  id: '17900000000000004',
  caption: 'Swipe',
  media_type: 'CAROUSEL_ALBUM',
  media_product_type: 'FEED',
  media_url: photo(40),
  permalink: 'https://www.instagram.com/p/C4carousel/',
  timestamp: '2026-02-26T08:00:00+0000',
  children: {
    data: [
      { id: '18000000000000041', media_type: 'IMAGE', media_url: photo(41) },
      { id: '18000000000000042', media_type: 'VIDEO', media_url: video(42), thumbnail_url: cover(42) },
      { id: '18000000000000043', media_type: 'IMAGE', media_url: photo(43) },
    ],
  },
};

function post(item: MediaItem, opts?: Parameters<typeof convertItem>[1]): Post {
  const r = convertItem(item, opts);
  if (!('post' in r)) throw new Error(`expected a post, got dropped: ${r.dropped.reason}`);
  // Every converted post satisfies schema v1.
  expect(postSchema.safeParse(r.post).success).toBe(true);
  return r.post;
}

function dropped(item: MediaItem, opts?: Parameters<typeof convertItem>[1]): string {
  const r = convertItem(item, opts);
  if (!('dropped' in r)) throw new Error(`expected a drop, got post ${JSON.stringify(r.post)}`);
  expect(r.dropped.id).toBe(item.id);
  return r.dropped.reason;
}

describe('sample items', () => {
  it('are valid platform media items', () => {
    for (const item of [IMAGE, VIDEO, REEL, CAROUSEL]) expect(mediaItemSchema.safeParse(item).success).toBe(true);
  });
});

describe('R-CNV-1 id, source, status (R-OWN-2)', () => {
  it.each([IMAGE, VIDEO, REEL, CAROUSEL])('$media_type $id', (item) => {
    const p = post(item);
    expect(p.id).toBe(item.id);
    expect(p.source).toBe(SOURCE);
    expect(p.source).toBe('instagram');
    expect(p.status).toBe('published');
  });
});

describe('R-CNV-2 media_type to type', () => {
  it.each([
    ['IMAGE', IMAGE, 'image'],
    ['VIDEO', VIDEO, 'video'],
    ['CAROUSEL_ALBUM', CAROUSEL, 'carousel'],
  ] as const)('%s -> %s', (_, item, type) => {
    expect(post(item).type).toBe(type);
  });

  it.each([
    ['an unknown media_type', { ...IMAGE, media_type: 'AUDIO' }, /unknown media_type "AUDIO"/],
    ['no media_type', (({ media_type: _, ...rest }) => rest)(IMAGE), /no media_type/],
  ])('%s is dropped with a reason', (_, item, reason) => {
    expect(dropped(item as MediaItem)).toMatch(reason);
  });
});

describe('R-CNV-3 / R-CNV-13 format: reel only from media_product_type REELS', () => {
  it.each([
    ['REELS', REEL, 'reel'],
    ['FEED', VIDEO, 'post'],
    ['AD', { ...VIDEO, media_product_type: 'AD' }, 'post'],
    ['STORY', { ...VIDEO, media_product_type: 'STORY' }, 'post'],
    ['a future value', { ...VIDEO, media_product_type: 'CLIPS' }, 'post'],
  ] as const)('%s -> %s', (_, item, format) => {
    expect(post(item).format).toBe(format);
  });

  it('without media_product_type every video is a post, even with a /reel/ permalink (never guessed)', () => {
    const { media_product_type: _, ...noProduct } = REEL;
    const p = post(noProduct);
    expect(p.format).toBe('post');
    expect(p.url).toContain('/reel/');
    expect(p.type).toBe('video');
  });

  it('R-MED-11 is_shared_to_feed is not a reel detector', () => {
    expect(post({ ...VIDEO, is_shared_to_feed: true }).format).toBe('post');
    expect(post({ ...REEL, is_shared_to_feed: false }).format).toBe('reel');
  });

  it('a reel renders as a video: format never changes the type (R-SCH-10)', () => {
    expect(post(REEL).type).toBe('video');
  });
});

describe('R-CNV-4 thumbnailUrl', () => {
  it('a photo uses media_url', () => {
    expect(post(IMAGE).thumbnailUrl).toBe(IMAGE.media_url);
  });
  it('a video uses thumbnail_url, never the video file', () => {
    expect(post(VIDEO).thumbnailUrl).toBe(VIDEO.thumbnail_url);
  });
  it('a carousel uses the first slide (photo: its media_url)', () => {
    expect(post(CAROUSEL).thumbnailUrl).toBe(photo(41));
  });
  it('a carousel whose first slide is a video uses that slide’s thumbnail_url', () => {
    const slides = CAROUSEL.children!.data;
    const p = post({ ...CAROUSEL, children: { data: [slides[1]!, slides[0]!, slides[2]!] } });
    expect(p.thumbnailUrl).toBe(cover(42));
  });
  it('our choice: when the first slide gives none, the first slide that gives one', () => {
    const slides = CAROUSEL.children!.data;
    const flagged = { id: '18000000000000040', media_type: 'IMAGE' };
    expect(post({ ...CAROUSEL, children: { data: [flagged, ...slides] } }).thumbnailUrl).toBe(photo(41));
  });
  it('our choice: a carousel whose children were not expanded uses the album’s own media_url', () => {
    const { children: _, ...noChildren } = CAROUSEL;
    const p = post(noChildren);
    expect(p.thumbnailUrl).toBe(photo(40));
    expect(p.media).toEqual([]);
  });
});

describe('R-CNV-5 url and text', () => {
  it('url from permalink, text from caption', () => {
    const p = post(IMAGE);
    expect(p.url).toBe(IMAGE.permalink);
    expect(p.text).toBe(IMAGE.caption);
  });
  it('text is an empty string when caption is absent (refused or omitted, R-MED-4)', () => {
    const { caption: _, ...noCaption } = IMAGE;
    expect(post(noCaption).text).toBe('');
  });
  it('no permalink: dropped with a reason (url is required by schema v1)', () => {
    const { permalink: _, ...noPermalink } = IMAGE;
    expect(dropped(noPermalink)).toMatch(/no permalink/);
    expect(dropped({ ...IMAGE, permalink: 'instagram.com/p/x' })).toMatch(/permalink is not an http\(s\) URL/);
  });
});

describe('R-CNV-6 publishedAt', () => {
  it.each([
    ['2026-02-28T09:15:00+0000', '2026-02-28T09:15:00.000Z'],
    ['2026-02-28T09:15:00+00:00', '2026-02-28T09:15:00.000Z'],
    ['2026-02-28T11:15:00+0200', '2026-02-28T09:15:00.000Z'],
    ['2026-02-28T01:15:00-0800', '2026-02-28T09:15:00.000Z'],
    ['2026-02-28T09:15:00.5Z', '2026-02-28T09:15:00.500Z'],
  ])('%s -> %s', (timestamp, iso) => {
    expect(normalizeTimestamp(timestamp)).toBe(iso);
    expect(post({ ...IMAGE, timestamp }).publishedAt).toBe(iso);
  });

  it.each([
    '2026-02-30T09:15:00+0000',
    '2026-02-28T09:15:00',
    '2026-02-28',
    'yesterday',
    '',
    '2026-02-28T25:00:00+0000',
  ])('invalid timestamp %j: dropped with a reason', (timestamp) => {
    expect(normalizeTimestamp(timestamp)).toBeUndefined();
    expect(dropped({ ...IMAGE, timestamp })).toMatch(/timestamp .* is not a valid date-time/);
  });

  it('missing timestamp: dropped with a reason', () => {
    const { timestamp: _, ...noTimestamp } = IMAGE;
    expect(dropped(noTimestamp)).toMatch(/no timestamp/);
  });
});

describe('R-CNV-7 media[]', () => {
  it('a single photo gives one entry from the item itself', () => {
    expect(post(IMAGE).media).toEqual([{ url: IMAGE.media_url, mime: 'image/jpeg' }]);
  });
  it('a single video gives one entry: the video file', () => {
    expect(post(VIDEO).media).toEqual([{ url: VIDEO.media_url, mime: 'video/mp4' }]);
  });
  it('a carousel gives one entry per slide, in order', () => {
    expect(post(CAROUSEL).media).toEqual([
      { url: photo(41), mime: 'image/jpeg' },
      { url: video(42), mime: 'video/mp4' },
      { url: photo(43), mime: 'image/jpeg' },
    ]);
  });
  it('a slide without media_url gives no entry', () => {
    const slides = CAROUSEL.children!.data;
    const p = post({
      ...CAROUSEL,
      children: { data: [slides[0]!, { id: 's2', media_type: 'VIDEO', thumbnail_url: cover(9) }, slides[2]!] },
    });
    expect(p.media.map((m) => m.url)).toEqual([photo(41), photo(43)]);
  });
});

describe('R-CNV-8 mime derived from media_type (assumption)', () => {
  it.each([
    ['IMAGE', IMAGE, 'image/jpeg'],
    ['VIDEO', VIDEO, 'video/mp4'],
  ] as const)('%s -> %s', (_, item, mime) => {
    expect(post(item).media[0]!.mime).toBe(mime);
  });
  it('slides follow their own media_type; a slide with none is taken as a photo', () => {
    const p = post({
      ...CAROUSEL,
      children: {
        data: [
          { id: 'a', media_url: photo(7) },
          { id: 'b', media_type: 'VIDEO', media_url: video(8), thumbnail_url: cover(8) },
        ],
      },
    });
    expect(p.media.map((m) => m.mime)).toEqual(['image/jpeg', 'video/mp4']);
  });
});

describe('R-CNV-9 stats only when returned (R-MED-10)', () => {
  it('both counts', () => {
    expect(post(IMAGE).stats).toEqual({ likes: 12, comments: 3 });
  });
  it('missing counts are not zeros: no stats at all', () => {
    const p = post(VIDEO);
    expect(p.stats).toBeUndefined();
    expect('stats' in p).toBe(false);
  });
  it('only the count returned', () => {
    const { comments_count: _, ...likesOnly } = IMAGE;
    expect(post(likesOnly).stats).toEqual({ likes: 12 });
    expect(post({ ...VIDEO, comments_count: 0 }).stats).toEqual({ comments: 0 });
  });
});

describe('R-CNV-10 raw holds the whole item untouched', () => {
  it.each([IMAGE, VIDEO, REEL, CAROUSEL])('$media_type $id', (item) => {
    const withExtra = { ...item, some_future_field: { nested: [1, null] } } as MediaItem;
    const p = post(withExtra);
    expect(p.raw).toStrictEqual(withExtra);
  });
  it('is a copy: changing the post’s raw does not change the item', () => {
    const item = structuredClone(CAROUSEL);
    const p = post(item);
    (p.raw as MediaItem).children!.data.pop();
    expect(item).toStrictEqual(CAROUSEL);
  });
});

describe('R-CNV-11 width, height, aspectRatio never set by conversion', () => {
  it.each([IMAGE, VIDEO, REEL, CAROUSEL])('$media_type $id', (item) => {
    const p = post(item);
    expect(p.aspectRatio).toBeUndefined();
    for (const m of p.media) {
      expect(m.width).toBeUndefined();
      expect(m.height).toBeUndefined();
    }
  });
});

describe('R-CNV-12 no determinable cover (copyright-flagged)', () => {
  const { media_url: _m, ...flaggedImage } = IMAGE;
  const { thumbnail_url: _t, media_url: _v, ...flaggedVideo } = VIDEO;
  const flaggedCarousel: MediaItem = {
    ...CAROUSEL,
    media_url: undefined,
    children: { data: [{ id: 'x', media_type: 'IMAGE' }] },
  };
  delete flaggedCarousel.media_url;

  it.each([
    ['image without media_url', flaggedImage],
    ['video without thumbnail_url', flaggedVideo],
    ['video with its file but no cover', { ...VIDEO, thumbnail_url: undefined }],
    ['carousel without any slide media', flaggedCarousel],
  ])('%s: dropped by default', (_, item) => {
    expect(dropped(item as MediaItem)).toMatch(/no cover image determinable/);
  });

  it.each([
    ['image without media_url', flaggedImage],
    ['video without thumbnail_url', flaggedVideo],
    ['carousel without any slide media', flaggedCarousel],
  ])('%s: a text card linking to the permalink when configured, never an image post without image', (_, item) => {
    const p = post(item, { copyrightItems: 'text-card' });
    expect(p.type).toBe('text');
    expect(p.url).toBe(item.permalink);
    expect(p.text).toBe(item.caption);
    expect(p.thumbnailUrl).toBeUndefined();
    expect(p.media).toEqual([]);
  });

  it('an item with a cover is unaffected by the option', () => {
    expect(post(IMAGE, { copyrightItems: 'text-card' }).type).toBe('image');
  });
});

describe('convertItems', () => {
  it('keeps order, collects drops with reasons', () => {
    const { media_url: _, ...flagged } = IMAGE;
    const r = convertItems([
      IMAGE,
      { ...flagged, id: 'f1' },
      VIDEO,
      { ...IMAGE, id: 'u1', media_type: 'STORY_HIGHLIGHT' },
      CAROUSEL,
    ]);
    expect(r.posts.map((p) => p.id)).toEqual([IMAGE.id, VIDEO.id, CAROUSEL.id]);
    expect(r.dropped.map((d) => d.id)).toEqual(['f1', 'u1']);
    expect(r.dropped.every((d) => d.reason.length > 0)).toBe(true);
    // R-CNV-12: the copyright-flagged item is left out by policy, the unknown type is a fault.
    expect(r.dropped.find((d) => d.id === 'f1')?.byPolicy).toBe(true);
    expect(r.dropped.find((d) => d.id === 'u1')?.byPolicy).toBeUndefined();
  });

  it('a post the schema would refuse is dropped with the problem named, never emitted', () => {
    // MediaItem is a type, not a guarantee: an empty id from an unchecked caller must not slip through.
    const r = convertItem({ ...IMAGE, id: '' });
    expect(r).toEqual({ dropped: { id: '', reason: expect.stringMatching(/^malformed id ""/) } });
    // An id that would not fit a key or a path (seen in the wild: 1799.1) is dropped the same way.
    expect(convertItem({ ...IMAGE, id: '1799.1' })).toEqual({
      dropped: { id: '1799.1', reason: expect.stringMatching(/^malformed id "1799\.1"/) },
    });
  });

  it('a slide link that is not http(s) counts as absent', () => {
    const p = post({
      ...CAROUSEL,
      children: {
        data: [
          { id: 'a', media_type: 'IMAGE', media_url: 'ftp://x/y.jpg' },
          { id: 'b', media_type: 'IMAGE', media_url: photo(2) },
        ],
      },
    });
    expect(p.thumbnailUrl).toBe(photo(2));
    expect(p.media).toEqual([{ url: photo(2), mime: 'image/jpeg' }]);
  });
});
