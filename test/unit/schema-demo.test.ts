import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeDemoFeed } from '../../src/cli/commands/demo.ts';
import { main } from '../../src/cli/main.ts';
import { memoryIO } from '../support/memory-io.ts';
import { demoFeed } from '../../src/demo/demo-feed.ts';
import { validateFeed } from '../../src/schema/validate.ts';
import { ManualClock } from '../../src/util/clock.ts';

describe('demoFeed', () => {
  const now = new Date('2026-03-01T12:00:00Z');
  const feed = demoFeed(now);

  it('validates against schema v1 and is marked demo (R-SCH-11)', () => {
    expect(validateFeed(feed).ok).toBe(true);
    expect(feed.demo).toBe(true);
    expect(feed.fetchedAt).toBe(now.toISOString());
  });

  it('holds every kind of post: image, video, carousel with image and video media, reel, text, link', () => {
    const types = feed.posts.map((p) => `${p.type}/${p.format}`);
    expect(types).toEqual(
      expect.arrayContaining(['image/post', 'video/post', 'carousel/post', 'video/reel', 'text/post', 'link/post']),
    );
    const carousel = feed.posts.find((p) => p.type === 'carousel')!;
    expect(carousel.media.length).toBeGreaterThan(1);
    expect(new Set(carousel.media.map((m) => m.mime.split('/')[0]))).toEqual(new Set(['image', 'video']));
    const video = feed.posts.find((p) => p.type === 'video')!;
    expect(video.thumbnailUrl).toMatch(/^https:\/\//);
  });

  it('times follow the given now', () => {
    const later = demoFeed(new Date('2027-01-01T00:00:00Z'));
    expect(later.posts[0]!.publishedAt > feed.posts[0]!.publishedAt).toBe(true);
  });
});

describe('feedmirror demo', () => {
  const clock = new ManualClock(new Date('2026-03-01T12:00:00Z'));

  it('writes the demo feed to stdout without --out, or with -', async () => {
    for (const out of [undefined, '-']) {
      const io = memoryIO({ cwd: tmpdir() });
      expect(await writeDemoFeed(out === undefined ? {} : { out }, io, clock)).toBe(0);
      expect(JSON.parse(io.out())).toEqual(JSON.parse(JSON.stringify(demoFeed(clock.now()))));
    }
  });

  it('writes the file given by --out, relative to cwd', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'feedmirror-demo-'));
    const io = memoryIO({ cwd: dir });
    expect(await writeDemoFeed({ out: 'demo.json' }, io, clock)).toBe(0);
    const written = JSON.parse(readFileSync(join(dir, 'demo.json'), 'utf8'));
    expect(validateFeed(written).ok).toBe(true);
    expect(written.demo).toBe(true);
    expect(io.out()).toBe('');
  });

  it('exit 2 on a missing --out value or an unknown argument', async () => {
    const missing = memoryIO({ cwd: tmpdir() });
    expect(await main(['demo', '--out'], missing)).toBe(2);
    expect(missing.err()).toMatch(/option '-o, --out <file>' argument missing/);
    const io = memoryIO({ cwd: tmpdir() });
    expect(await main(['demo', '--bogus'], io)).toBe(2);
    expect(io.err()).toMatch(/unknown option '--bogus'/);
    expect(io.out()).toBe('');
  });
});
