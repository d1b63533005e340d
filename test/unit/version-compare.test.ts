import { describe, expect, it } from 'vitest';
import { compareListings, fieldDifferences, type VersionListing } from '../../src/convert/version-compare.ts';
import type { MediaItem } from '../../src/platform/media-item.ts';
import { knownVersions, newestVersion, versionAvailability, versionInfo } from '../../src/platform/versions.ts';
import { DAY } from '../../src/util/clock.ts';

/**
 * R-MED-13: the same media read through the pinned version and a candidate, compared as items and
 * as the schema v1 posts they convert to; whether moving would change a published feed.
 */
const CDN = 'https://scontent-ams2-1.cdninstagram.com/v/t51.29350-15';
const signed = (path: string, oe: string) => `${CDN}/${path}?stp=dst-jpg&oh=00_${oe}&oe=${oe}`;

const IMAGE: MediaItem = {
  id: '17900000000000001',
  caption: 'Morning light #harbour',
  media_type: 'IMAGE',
  media_product_type: 'FEED',
  media_url: signed('1_n.jpg', '69A1B2C3'),
  permalink: 'https://www.instagram.com/p/C1mage/',
  timestamp: '2026-02-28T09:15:00+0000',
  username: 'harbour.cafe',
  like_count: 12,
};
const REEL: MediaItem = {
  id: '17900000000000003',
  caption: 'Reel',
  media_type: 'VIDEO',
  media_product_type: 'REELS',
  media_url: signed('3_n.mp4', '69A1B2C3'),
  thumbnail_url: signed('3_cover.jpg', '69A1B2C3'),
  permalink: 'https://www.instagram.com/reel/C3reel/',
  timestamp: '2026-02-27T18:00:00+0000',
  username: 'harbour.cafe',
};
const listing = (version: string, items: MediaItem[], complete = true): VersionListing => ({
  version,
  items,
  complete,
});

describe('compareListings (R-MED-13)', () => {
  it('the same media under both versions: nothing differs, no feed would change', () => {
    const c = compareListings(listing('v25.0', [IMAGE, REEL]), listing('v26.0', [IMAGE, REEL]));
    expect(c).toMatchObject({ compared: 2, differing: [], summary: [], feedWouldChange: false });
  });

  it('a re-signed link is no difference: links are compared without their signature', () => {
    const resigned = { ...IMAGE, media_url: signed('1_n.jpg', '6A000000') };
    const c = compareListings(listing('v25.0', [IMAGE]), listing('v26.0', [resigned]));
    expect(c.differing).toEqual([]);
    expect(c.feedWouldChange).toBe(false);
    // A link to another file is.
    const other = { ...IMAGE, media_url: signed('2_n.jpg', '69A1B2C3') };
    const d = compareListings(listing('v25.0', [IMAGE]), listing('v26.0', [other]));
    expect(d.differing[0]!.item).toEqual([
      { path: 'media_url', pinned: `${CDN}/1_n.jpg`, candidate: `${CDN}/2_n.jpg` },
    ]);
    // Shown without the signed query (R-LNK-7).
    expect(JSON.stringify(d)).not.toContain('oe=');
    expect(d.feedWouldChange).toBe(true);
  });

  it("a reel's media_type REELS: the item differs, the post is no longer converted, the feed would change", () => {
    const reel26 = { ...REEL, media_type: 'REELS' };
    const c = compareListings(listing('v25.0', [IMAGE, REEL]), listing('v26.0', [IMAGE, reel26]));
    expect(c.compared).toBe(2);
    expect(c.differing).toHaveLength(1);
    const d = c.differing[0]!;
    expect(d.id).toBe(REEL.id);
    expect(d.item).toEqual([{ path: 'media_type', pinned: 'VIDEO', candidate: 'REELS' }]);
    expect(d.pinnedPost).toEqual({ post: true });
    expect(d.candidatePost).toEqual({ leftOut: 'unknown media_type "REELS"' });
    expect(d.feedChanges).toBe(true);
    expect(c.feedChanges).toEqual({ changed: 0, leftOut: 1, added: 0 });
    expect(c.feedWouldChange).toBe(true);
    expect(c.summary).toEqual([
      { side: 'item', path: 'media_type', pinned: 'VIDEO', candidate: 'REELS', count: 1, ids: [REEL.id] },
      {
        side: 'post',
        path: '(post)',
        pinned: 'converted',
        candidate: 'left out: unknown media_type "REELS"',
        count: 1,
        ids: [REEL.id],
      },
    ]);
  });

  it('a value the converter maps differently shows in the post, field by field (raw included: it is published)', () => {
    const renamed = { ...IMAGE, like_count: undefined, likes: 12 } as unknown as MediaItem;
    delete (renamed as Record<string, unknown>).like_count;
    const c = compareListings(listing('v25.0', [IMAGE]), listing('v26.0', [renamed]));
    const d = c.differing[0]!;
    expect(d.item).toEqual([
      { path: 'like_count', pinned: 12 },
      { path: 'likes', candidate: 12 },
    ]);
    expect(d.post.map((p) => p.path)).toEqual(['raw.like_count', 'raw.likes', 'stats']);
    expect(d.post.find((p) => p.path === 'stats')).toEqual({ path: 'stats', pinned: { likes: 12 } });
    expect(c.feedChanges).toEqual({ changed: 1, leftOut: 0, added: 0 });
  });

  it('an item listed under one version only: a change only when both listings are complete', () => {
    const full = compareListings(listing('v25.0', [IMAGE, REEL]), listing('v26.0', [IMAGE]));
    expect(full.onlyPinned).toEqual([REEL.id]);
    expect(full.feedWouldChange).toBe(true);
    const cut = compareListings(listing('v25.0', [IMAGE, REEL]), listing('v26.0', [IMAGE], false));
    expect(cut.complete).toBe(false);
    expect(cut.feedWouldChange).toBe(false);
  });

  it('an item the listing skipped as malformed is compared as left out', () => {
    const c = compareListings(listing('v25.0', [IMAGE]), {
      ...listing('v26.0', []),
      skipped: [{ id: IMAGE.id, reason: 'id: expected string' }],
    });
    expect(c.onlyPinned).toEqual([]);
    expect(c.differing[0]!.candidatePost).toEqual({ leftOut: 'malformed: id: expected string' });
    expect(c.feedChanges.leftOut).toBe(1);
  });

  it('fieldDifferences walks objects and arrays and names absent sides', () => {
    expect(fieldDifferences({ a: [1, { b: 2 }] }, { a: [1, { b: 3 }, 4] })).toEqual([
      { path: 'a[1].b', pinned: 2, candidate: 3 },
      { path: 'a[2]', candidate: 4 },
    ]);
  });
});

describe('the versions feedmirror knows (R-MED-1, R-MED-13)', () => {
  it('v25.0 and v26.0, v25.0 available until 2028-07-29', () => {
    expect(knownVersions()).toEqual(['v25.0', 'v26.0']);
    expect(newestVersion()).toBe('v26.0');
    expect(versionInfo('v25.0')?.availableUntil).toBe('2028-07-29');
  });

  it('ok until the lead, a warning within it, a failure after the last day', () => {
    const end = Date.parse('2028-07-30T00:00:00Z');
    expect(versionAvailability('v25.0', new Date(end - 91 * DAY), 90).level).toBe('ok');
    const near = versionAvailability('v25.0', new Date(end - 30 * DAY), 90);
    expect(near).toMatchObject({ level: 'warn', daysLeft: 30, availableUntil: '2028-07-29' });
    expect(near.text).toContain('feedmirror platform compare --version v26.0');
    // The last day itself still answers.
    expect(versionAvailability('v25.0', new Date(end - 1), 90)).toMatchObject({ level: 'warn', daysLeft: 0 });
    expect(versionAvailability('v25.0', new Date(end), 90).level).toBe('fail');
    // A version without an announced end never warns; an unknown one fails.
    expect(versionAvailability('v26.0', new Date(end + 400 * DAY), 90).level).toBe('ok');
    expect(versionAvailability('v24.0', new Date(end), 90).level).toBe('fail');
  });
});
