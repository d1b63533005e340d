import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { feedSchema, postSchema, statsSchema } from '../../src/schema/v1.ts';
import { jsonPath, validateFeed, validatePost } from '../../src/schema/validate.ts';

// Fixtures are JSON mutated freely by each case; `any` keeps the cases one line each.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const fixture = (): Json =>
  JSON.parse(readFileSync(new URL('../fixtures/feed-v1-valid.json', import.meta.url), 'utf8'));
// Index of each kind of post in the valid fixture (the demo feed plus a converted-looking post).
const IMAGE = 0;
const VIDEO = 1;
const CAROUSEL = 2;
const REEL = 3;
const TEXT = 4;
const LINK = 5;

interface Case {
  name: string;
  mutate: (f: Json) => void;
  /** For a rejected case: the path of the problem, and words its message contains. */
  path?: string;
  message?: RegExp | undefined;
}

function check(c: Case): void {
  const feed = fixture();
  c.mutate(feed);
  const r = validateFeed(feed);
  if (c.path === undefined) {
    expect(r.ok ? [] : r.problems).toEqual([]);
    return;
  }
  expect(r.ok).toBe(false);
  if (r.ok) return;
  const hit = r.problems.find((p) => p.path === c.path);
  expect(hit, `expected a problem at ${c.path}, got ${JSON.stringify(r.problems)}`).toBeDefined();
  if (c.message) expect(hit!.message).toMatch(c.message);
}

const rejects = (name: string, path: string, mutate: (f: Json) => void, message?: RegExp): Case => ({
  name,
  path,
  mutate,
  message,
});
const accepts = (name: string, mutate: (f: Json) => void): Case => ({ name, mutate });

describe('schema v1 fixture', () => {
  it('the valid fixture validates, keeping unknown keys (forward compatibility)', () => {
    const r = validateFeed(fixture());
    expect(r.ok).toBe(true);
    if (r.ok) expect((r.feed.posts[6] as Json).futureField).toEqual({ anything: true });
  });
});

describe('R-SCH-1 Feed', () => {
  it.each([
    rejects('schemaVersion 2', '$.schemaVersion', (f) => (f.schemaVersion = 2), /must be 1/),
    rejects('schemaVersion "1"', '$.schemaVersion', (f) => (f.schemaVersion = '1')),
    rejects('schemaVersion missing', '$.schemaVersion', (f) => delete f.schemaVersion, /required/),
    rejects('source empty', '$.source', (f) => (f.source = ''), /empty/),
    rejects('origin missing', '$.origin', (f) => delete f.origin, /required/),
    rejects('posts missing', '$.posts', (f) => delete f.posts, /required/),
    rejects('posts not an array', '$.posts', (f) => (f.posts = {}), /array/),
    rejects('fetchedAt missing', '$.fetchedAt', (f) => delete f.fetchedAt, /required/),
    rejects('fetchedAt without offset', '$.fetchedAt', (f) => (f.fetchedAt = '2026-03-01T12:00:00'), /offset/),
    rejects('fetchedAt not a date', '$.fetchedAt', (f) => (f.fetchedAt = 'yesterday')),
    rejects('demo missing', '$.demo', (f) => delete f.demo, /required/),
    rejects('nextCursor empty', '$.nextCursor', (f) => (f.nextCursor = ''), /empty/),
    accepts('nextCursor absent', (f) => delete f.nextCursor),
    accepts('fetchedAt with +02:00 offset', (f) => (f.fetchedAt = '2026-03-01T14:00:00+02:00')),
    accepts('empty posts', (f) => (f.posts = [])),
  ])('$name', check);
});

describe('R-SCH-2 Origin', () => {
  it.each([
    rejects(
      'kind unknown',
      '$.origin.kind',
      (f) => (f.origin.kind = 'user'),
      /one of profile, hashtag, playlist, board, channel/,
    ),
    rejects('id empty', '$.origin.id', (f) => (f.origin.id = '')),
    rejects('name empty', '$.origin.name', (f) => (f.origin.name = '')),
    rejects('displayName missing', '$.origin.displayName', (f) => delete f.origin.displayName, /required/),
    rejects('url not http(s)', '$.origin.url', (f) => (f.origin.url = 'ftp://example.com/'), /http/),
    rejects('avatarUrl not http(s)', '$.origin.avatarUrl', (f) => (f.origin.avatarUrl = 'data:image/png;base64,xx')),
    accepts('avatarUrl absent', (f) => delete f.origin.avatarUrl),
    ...['hashtag', 'playlist', 'board', 'channel'].map((k) => accepts(`kind ${k}`, (f) => (f.origin.kind = k))),
  ])('$name', check);
});

describe('R-SCH-3 Media', () => {
  it.each([
    rejects('url not http(s)', '$.posts[0].media[0].url', (f) => (f.posts[IMAGE].media[0].url = '//cdn.example/x.jpg')),
    rejects(
      'mime text/plain',
      '$.posts[0].media[0].mime',
      (f) => (f.posts[IMAGE].media[0].mime = 'text/plain'),
      /image\/, video\/ or audio\//,
    ),
    rejects('mime missing', '$.posts[0].media[0].mime', (f) => delete f.posts[IMAGE].media[0].mime, /required/),
    rejects('width 0', '$.posts[0].media[0].width', (f) => (f.posts[IMAGE].media[0].width = 0), /> 0/),
    rejects('height negative', '$.posts[0].media[0].height', (f) => (f.posts[IMAGE].media[0].height = -1)),
    rejects('durationSec 0', '$.posts[1].media[0].durationSec', (f) => (f.posts[VIDEO].media[0].durationSec = 0)),
    rejects('alt not a string', '$.posts[0].media[0].alt', (f) => (f.posts[IMAGE].media[0].alt = 3)),
    accepts('mime audio/mpeg', (f) => (f.posts[IMAGE].media[0].mime = 'audio/mpeg')),
    accepts(
      'width, height, alt absent',
      (f) => (f.posts[IMAGE].media[0] = { url: 'https://a.example/1.jpg', mime: 'image/jpeg' }),
    ),
  ])('$name', check);
});

describe('R-SCH-4 Link', () => {
  it.each([
    rejects('url not http(s)', '$.posts[5].link.url', (f) => (f.posts[LINK].link.url = 'mailto:a@b.c')),
    rejects('imageUrl not http(s)', '$.posts[5].link.imageUrl', (f) => (f.posts[LINK].link.imageUrl = 'x.png')),
    rejects('title not a string', '$.posts[5].link.title', (f) => (f.posts[LINK].link.title = 1)),
    accepts('only url', (f) => (f.posts[LINK].link = { url: 'http://example.com' })),
  ])('$name', check);
});

describe('R-SCH-5 Stats', () => {
  it.each([
    rejects('likes negative', '$.posts[0].stats.likes', (f) => (f.posts[IMAGE].stats.likes = -1), />= 0/),
    rejects('views a string', '$.posts[3].stats.views', (f) => (f.posts[REEL].stats.views = '10')),
    rejects(
      'another key',
      '$.posts[0].stats.saves',
      (f) => (f.posts[IMAGE].stats.saves = 1),
      /likes, comments, views, shares/,
    ),
    accepts('all four, zero', (f) => (f.posts[IMAGE].stats = { likes: 0, comments: 0, views: 0, shares: 0 })),
    accepts('empty stats', (f) => (f.posts[IMAGE].stats = {})),
  ])('$name', check);

  it('statsSchema alone rejects any other key', () => {
    expect(statsSchema.safeParse({ likes: 1, reach: 2 }).success).toBe(false);
  });
});

describe('R-SCH-6 Post', () => {
  it.each([
    rejects('id empty', '$.posts[0].id', (f) => (f.posts[IMAGE].id = '')),
    rejects('source missing', '$.posts[0].source', (f) => delete f.posts[IMAGE].source),
    rejects(
      'type unknown',
      '$.posts[0].type',
      (f) => (f.posts[IMAGE].type = 'audio'),
      /one of image, video, carousel, text, link/,
    ),
    rejects('type missing', '$.posts[0].type', (f) => delete f.posts[IMAGE].type, /required/),
    rejects('format empty', '$.posts[0].format', (f) => (f.posts[IMAGE].format = '')),
    rejects(
      'status unknown',
      '$.posts[0].status',
      (f) => (f.posts[IMAGE].status = 'draft'),
      /published, live, upcoming/,
    ),
    rejects('url not http(s)', '$.posts[0].url', (f) => (f.posts[IMAGE].url = 'instagram.com/p/x')),
    rejects('text missing', '$.posts[0].text', (f) => delete f.posts[IMAGE].text, /required/),
    rejects('media missing', '$.posts[4].media', (f) => delete f.posts[TEXT].media, /required/),
    rejects(
      'publishedAt with +0000',
      '$.posts[0].publishedAt',
      (f) => (f.posts[IMAGE].publishedAt = '2026-03-01T10:00:00+0000'),
    ),
    rejects(
      'publishedAt impossible date',
      '$.posts[0].publishedAt',
      (f) => (f.posts[IMAGE].publishedAt = '2026-02-30T10:00:00Z'),
    ),
    accepts('text empty', (f) => (f.posts[IMAGE].text = '')),
    accepts('status live', (f) => (f.posts[VIDEO].status = 'live')),
    accepts('status upcoming', (f) => (f.posts[VIDEO].status = 'upcoming')),
  ])('$name', check);

  it('a post with an unknown type still has its other problems listed', () => {
    const f = fixture();
    f.posts[IMAGE].type = 'audio';
    f.posts[IMAGE].url = 'nope';
    const r = validateFeed(f);
    expect(r.ok ? [] : r.problems.map((p) => p.path)).toEqual(['$.posts[0].url', '$.posts[0].type']);
  });
});

describe('R-SCH-7 thumbnailUrl required for image, video, carousel', () => {
  it.each([
    rejects(
      'image without',
      '$.posts[0].thumbnailUrl',
      (f) => delete f.posts[IMAGE].thumbnailUrl,
      /required when type is image, video or carousel/,
    ),
    rejects(
      'video without',
      '$.posts[1].thumbnailUrl',
      (f) => delete f.posts[VIDEO].thumbnailUrl,
      /required when type is/,
    ),
    rejects(
      'carousel without',
      '$.posts[2].thumbnailUrl',
      (f) => delete f.posts[CAROUSEL].thumbnailUrl,
      /required when type is/,
    ),
    rejects(
      'image with non-http thumbnail',
      '$.posts[0].thumbnailUrl',
      (f) => (f.posts[IMAGE].thumbnailUrl = 'file:///x.jpg'),
      /http/,
    ),
    accepts('text without', (f) => delete f.posts[TEXT].thumbnailUrl),
    accepts('link without', (f) => delete f.posts[LINK].thumbnailUrl),
    rejects('text with non-http thumbnail', '$.posts[4].thumbnailUrl', (f) => (f.posts[TEXT].thumbnailUrl = 'x')),
  ])('$name', check);
});

describe('R-SCH-8 link required for type link', () => {
  it.each([
    rejects(
      'link post without link',
      '$.posts[5].link',
      (f) => delete f.posts[LINK].link,
      /required when type is link/,
    ),
    rejects('link not an object', '$.posts[5].link', (f) => (f.posts[LINK].link = 'https://example.com'), /object/),
    accepts('text post without link', (f) => delete f.posts[TEXT].link),
    accepts('image post with a link', (f) => (f.posts[IMAGE].link = { url: 'https://example.com' })),
  ])('$name', check);
});

describe('R-SCH-9 Post optional fields', () => {
  it.each([
    rejects('embedUrl not http(s)', '$.posts[1].embedUrl', (f) => (f.posts[VIDEO].embedUrl = 'javascript:alert(1)')),
    rejects('aspectRatio 0', '$.posts[0].aspectRatio', (f) => (f.posts[IMAGE].aspectRatio = 0), /> 0/),
    rejects('durationSec negative', '$.posts[1].durationSec', (f) => (f.posts[VIDEO].durationSec = -5)),
    rejects('stats with unknown key', '$.posts[1].stats.plays', (f) => (f.posts[VIDEO].stats.plays = 1)),
    accepts('embedUrl https', (f) => (f.posts[VIDEO].embedUrl = 'https://example.com/embed/1')),
    accepts('raw a string', (f) => (f.posts[IMAGE].raw = 'anything')),
    accepts('raw null', (f) => (f.posts[IMAGE].raw = null)),
  ])('$name', check);

  it('raw is kept untouched, deep-equal to the input', () => {
    const f = fixture();
    const raw = { a: [1, null, { b: 'c', 'odd key': true }], nested: { deep: [[]] }, n: 1.5 };
    f.posts[IMAGE].raw = raw;
    const r = validateFeed(f);
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.feed.posts[IMAGE]!.raw).toStrictEqual(raw);
  });
});

describe('R-SCH-10 type says what to render; format is free, for badges only', () => {
  it.each([
    // The conditionals follow type, not format: a "reel" text post needs no thumbnail.
    accepts('text post with format reel needs no thumbnail', (f) => {
      f.posts[TEXT].format = 'reel';
      delete f.posts[TEXT].thumbnailUrl;
    }),
    accepts('any non-empty format string', (f) => (f.posts[VIDEO].format = 'igtv')),
    rejects('format text does not exempt an image post from its thumbnail', '$.posts[0].thumbnailUrl', (f) => {
      f.posts[IMAGE].format = 'text';
      delete f.posts[IMAGE].thumbnailUrl;
    }),
    rejects('format must be present', '$.posts[3].format', (f) => delete f.posts[REEL].format, /required/),
  ])('$name', check);
});

describe('R-SCH-11 demo', () => {
  it.each([
    rejects('demo a string', '$.demo', (f) => (f.demo = 'true'), /true or false/),
    accepts('demo false', (f) => (f.demo = false)),
  ])('$name', check);
});

describe('validatePost and problem reporting', () => {
  it('lists every problem, not just the first, each with its JSON path', () => {
    const f = fixture();
    delete f.posts[IMAGE].thumbnailUrl;
    f.posts[VIDEO].media[0].mime = 'x';
    f.source = '';
    const r = validateFeed(f);
    expect(r.ok ? [] : r.problems.map((p) => `${p.path}: ${p.message}`)).toEqual([
      '$.source: must not be empty',
      '$.posts[0].thumbnailUrl: required when type is image, video or carousel',
      '$.posts[1].media[0].mime: must be a MIME type starting with image/, video/ or audio/',
    ]);
  });

  it('validatePost paths start at the post', () => {
    const post = fixture().posts[LINK];
    delete post.link;
    expect(validatePost(post)).toEqual({
      ok: false,
      problems: [{ path: '$.link', message: 'required when type is link' }],
    });
    expect(validatePost(fixture().posts[IMAGE]).ok).toBe(true);
  });

  it('a non-object says so at $', () => {
    expect(validateFeed(null)).toEqual({
      ok: false,
      problems: [{ path: '$', message: 'must be an object, got null' }],
    });
    expect(validateFeed([])).toEqual({
      ok: false,
      problems: [{ path: '$', message: 'must be an object, got an array' }],
    });
  });

  it('jsonPath quotes keys that are not identifiers', () => {
    expect(jsonPath(['posts', 3, 'thumbnailUrl'])).toBe('$.posts[3].thumbnailUrl');
    expect(jsonPath(['raw', 'odd key'])).toBe('$.raw["odd key"]');
  });

  it('the zod schemas and validateFeed agree', () => {
    const f = fixture();
    expect(feedSchema.safeParse(f).success).toBe(true);
    delete f.posts[IMAGE].thumbnailUrl;
    expect(feedSchema.safeParse(f).success).toBe(false);
    expect(postSchema.safeParse(fixture().posts[CAROUSEL]).success).toBe(true);
  });
});

describe('the sizes and placeholder extension fields', () => {
  const load = (name: string): unknown =>
    JSON.parse(readFileSync(new URL(`../fixtures/${name}.json`, import.meta.url), 'utf8'));

  it('a feed without them and a feed with them are both valid', () => {
    expect(validateFeed(load('feed-v1-valid')).ok).toBe(true);
    const extended = validateFeed(load('feed-v1-extended'));
    if (!extended.ok) throw new Error(JSON.stringify(extended.problems));
    // Kept, not stripped: readers downstream of validation still see them.
    expect(extended.feed.posts[0]!.thumbnailSizes?.at(-1)).toMatchObject({
      width: 1080,
      height: 1080,
      mime: 'image/jpeg',
    });
    expect(extended.feed.posts[0]!.thumbnailPlaceholder).toEqual({
      color: '#c8285a',
      thumbhash: '3OcRJYB4d3h/iIeHeEh3eIhw+j3A',
    });
  });

  it('malformed ones are refused, each with its JSON path', () => {
    const r = validateFeed(load('feed-v1-extended-broken'));
    expect(r.ok).toBe(false);
    const problems = r.ok ? [] : r.problems.map((p) => `${p.path}: ${p.message}`);
    expect(problems).toEqual(
      expect.arrayContaining([
        '$.posts[0].thumbnailSizes[0].width: must be a number > 0',
        '$.posts[0].thumbnailSizes[1].url: must be an http:// or https:// URL',
        '$.posts[0].thumbnailSizes[2].mime: must be an image MIME type (image/...)',
        '$.posts[0].thumbnailPlaceholder.color: must be a #rrggbb colour',
        '$.posts[0].thumbnailPlaceholder.thumbhash: must be a base64 ThumbHash',
        '$.posts[1].thumbnailSizes: must list at least one size when present',
        '$.posts[2].media[0].sizes[0].width: must be a whole number of pixels',
        '$.posts[2].media[0].sizes[0].height: required',
        '$.posts[2].media[0].placeholder.color: required',
        '$.posts[2].media[2].sizes: must be an array, got a string ("https://x/y.webp")',
      ]),
    );
  });
});
