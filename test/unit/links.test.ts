import { describe, expect, it } from 'vitest';
import { earliestExpiry, itemLinks, parseOe } from '../../src/platform/links.ts';
import { linkExpiry } from '../../src/feeds/expiry.ts';

const at = (iso: string) => new Date(iso);
const hex = (d: Date) =>
  Math.floor(d.getTime() / 1000)
    .toString(16)
    .toUpperCase();
const link = (expires: Date | undefined, name = 'a') =>
  `https://scontent.cdninstagram.com/v/${name}.jpg?stp=dst-jpg&_nc_ht=x${expires ? `&oe=${hex(expires)}` : ''}&_nc_sid=1`;

describe('parseOe (R-LNK-1)', () => {
  it('R-LNK-1 reads oe as Unix seconds in hex', () => {
    expect(parseOe('https://cdn.example/a.jpg?oe=6553F100')?.toISOString()).toBe(
      new Date(0x6553f100 * 1000).toISOString(),
    );
    expect(parseOe(link(at('2026-03-01T12:00:00Z')))?.toISOString()).toBe('2026-03-01T12:00:00.000Z');
    // lowercase hex is the same moment
    expect(parseOe('https://cdn.example/a.jpg?oe=6553f100')?.getTime()).toBe(0x6553f100 * 1000);
  });
  it('R-LNK-1 missing, empty, non-hex, absurd oe or a bad URL => unknown expiry', () => {
    expect(parseOe('https://cdn.example/a.jpg')).toBeUndefined();
    expect(parseOe('https://cdn.example/a.jpg?oe=')).toBeUndefined();
    expect(parseOe('https://cdn.example/a.jpg?oe=zz12')).toBeUndefined();
    expect(parseOe('https://cdn.example/a.jpg?oe=-1F')).toBeUndefined();
    expect(parseOe('https://cdn.example/a.jpg?oe=0')).toBeUndefined();
    expect(parseOe('https://cdn.example/a.jpg?oe=FFFFFFFFFFFFFFFF')).toBeUndefined();
    expect(parseOe('not a url ?oe=6553F100')).toBeUndefined();
  });
});

describe('itemLinks / earliestExpiry (R-LNK-4, R-MED-9)', () => {
  const early = at('2026-01-03T00:00:00Z');
  const mid = at('2026-01-05T00:00:00Z');
  const late = at('2026-01-07T00:00:00Z');
  const carousel = {
    media_url: link(late, 'cover'),
    children: {
      data: [
        { id: 'c1', media_url: link(mid, 's1') },
        { id: 'c2', media_url: link(late, 's2'), thumbnail_url: link(early, 's2t') },
      ],
    },
  };

  it('lists media_url, thumbnail_url and every slide link', () => {
    expect(itemLinks({ media_url: 'm', thumbnail_url: 't' })).toEqual(['m', 't']);
    expect(itemLinks(carousel)).toHaveLength(4);
    expect(itemLinks({})).toEqual([]);
  });
  it('R-LNK-4 the earliest oe counts, including a video slide thumbnail', () => {
    expect(earliestExpiry(carousel)?.toISOString()).toBe(early.toISOString());
    expect(
      earliestExpiry([
        { media_url: link(late) },
        { media_url: link(mid), thumbnail_url: link(undefined) },
      ])?.toISOString(),
    ).toBe(mid.toISOString());
  });
  it('R-LNK-4 thumbnail_url expires like media_url', () => {
    expect(earliestExpiry({ media_url: link(late), thumbnail_url: link(early) })?.toISOString()).toBe(
      early.toISOString(),
    );
  });
  it('no oe anywhere => undefined', () => {
    expect(earliestExpiry([{ media_url: link(undefined) }, {}])).toBeUndefined();
  });
});

describe('linkExpiry: copy deadline, renewal and cache lifetime from the stored oe (R-LNK-1, R-LNK-3, R-LNK-4, R-LNK-5)', () => {
  const now = at('2026-01-01T00:00:00Z');
  it('an oe an hour away: copy before it, no renewal yet, cacheable for an hour minus 600 s', () => {
    const oe = at('2026-01-01T01:00:00Z');
    expect(linkExpiry(oe, now)).toEqual({ copyDeadline: oe, renew: false, cacheSeconds: 3600 - 600 });
    expect(linkExpiry(oe, now, { cacheMarginSeconds: 60 }).cacheSeconds).toBe(3540);
  });
  it('renews a link that is dead or dies within the margin (R-LNK-3)', () => {
    const oe = at('2026-01-01T00:10:00Z');
    expect(linkExpiry(oe, now).renew).toBe(false);
    expect(linkExpiry(oe, now, { renewMarginMs: 15 * 60_000 }).renew).toBe(true);
    expect(linkExpiry(at('2025-12-31T23:59:59Z'), now).renew).toBe(true);
    expect(linkExpiry(oe, now).cacheSeconds).toBe(0); // inside the 600 s margin: not cacheable
  });
  it('no oe anywhere: unknown deadline, never "expired", a short cache lifetime (R-LNK-4)', () => {
    expect(linkExpiry(null, now)).toEqual({ copyDeadline: null, renew: false, cacheSeconds: 300 });
    expect(linkExpiry(null, now, { unknownCacheSeconds: 120 }).cacheSeconds).toBe(120);
  });
});
