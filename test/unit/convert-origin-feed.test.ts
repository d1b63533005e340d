import { describe, expect, it } from 'vitest';
import { convertItems } from '../../src/convert/convert-item.ts';
import { buildFeed } from '../../src/convert/feed.ts';
import { originFromProfile } from '../../src/convert/origin.ts';
import { SchemaViolationError, validateFeed } from '../../src/schema/validate.ts';
import type { Post } from '../../src/schema/v1.ts';

describe('originFromProfile (R-OWN-5, R-SCH-2)', () => {
  it('reads username, name and picture when offered', () => {
    expect(
      originFromProfile({
        id: '1784',
        username: 'harbour.cafe',
        name: 'Harbour Café',
        profilePictureUrl: 'https://scontent.cdninstagram.com/a.jpg?oe=1',
      }),
    ).toEqual({
      kind: 'profile',
      id: '1784',
      name: 'harbour.cafe',
      displayName: 'Harbour Café',
      url: 'https://www.instagram.com/harbour.cafe/',
      avatarUrl: 'https://scontent.cdninstagram.com/a.jpg?oe=1',
    });
  });

  it('name is the handle without @; displayName falls back to the username; no avatar when not offered', () => {
    const o = originFromProfile({ id: '1', username: '@harbour.cafe' });
    expect(o.name).toBe('harbour.cafe');
    expect(o.displayName).toBe('harbour.cafe');
    expect(o.url).toBe('https://www.instagram.com/harbour.cafe/');
    expect('avatarUrl' in o).toBe(false);
  });

  it('R-OWN-5 falls back to the media items’ username when the profile lacks it', () => {
    const o = originFromProfile({ id: '1', username: '' }, { items: [{}, { username: 'from.items' }] });
    expect(o.name).toBe('from.items');
    expect(o.url).toBe('https://www.instagram.com/from.items/');
  });

  it('says so clearly when no username exists anywhere', () => {
    expect(() => originFromProfile({ id: '1', username: '' }, { items: [{}] })).toThrow(
      /neither the profile nor its media items carry a username/,
    );
  });
});

describe('buildFeed', () => {
  const origin = originFromProfile({ id: '1', username: 'harbour.cafe' });
  const { posts } = convertItems([
    {
      id: '1',
      media_type: 'IMAGE',
      media_url: 'https://cdn.example/1.jpg',
      permalink: 'https://www.instagram.com/p/1/',
      timestamp: '2026-01-01T00:00:00+0000',
    },
  ]);

  it('assembles a valid schema v1 feed (R-SCH-1)', () => {
    const feed = buildFeed({
      origin,
      posts,
      fetchedAt: new Date('2026-03-01T12:00:00Z'),
      demo: false,
      nextCursor: 'abc',
    });
    expect(feed).toMatchObject({
      schemaVersion: 1,
      source: 'instagram',
      demo: false,
      fetchedAt: '2026-03-01T12:00:00.000Z',
      nextCursor: 'abc',
    });
    expect(feed.posts).toHaveLength(1);
    expect(validateFeed(feed).ok).toBe(true);
  });

  it('leaves nextCursor out when there is none', () => {
    expect('nextCursor' in buildFeed({ origin, posts, fetchedAt: new Date(), demo: true })).toBe(false);
  });

  it('refuses to build an invalid feed, naming every problem', () => {
    const bad = { ...posts[0]!, thumbnailUrl: undefined } as unknown as Post;
    let err: unknown;
    try {
      buildFeed({ origin, posts: [bad], fetchedAt: new Date(), demo: false, nextCursor: '' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SchemaViolationError);
    expect((err as SchemaViolationError).problems.map((p) => p.path)).toEqual([
      '$.posts[0].thumbnailUrl',
      '$.nextCursor',
    ]);
  });
});
