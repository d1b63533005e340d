import { SOURCE } from '../platform/identifiers.ts';
import type { Feed, Post } from '../schema/v1.ts';
import { SchemaViolationError, validateFeed } from '../schema/validate.ts';

/**
 * Placeholder pictures: stable https addresses (picsum.photos serves the same picture for the same
 * seed). The served demo replaces them with mirrored copies.
 */
const picture = (seed: string, w = 1080, h = 1080) => `https://picsum.photos/seed/feedmirror-${seed}/${w}/${h}`;
/** A short public-domain clip (CC0, MDN's example media). */
const VIDEO = 'https://interactive-examples.mdn.mozilla.net/media/cc0-videos/flower.mp4';
const PERMALINK = (id: string) => `https://example.com/feedmirror-demo/p/${id}/`;

const HOUR = 3_600_000;

/**
 * The demo feed (R-SCH-11: demo is true until an account is connected): one post of every kind a
 * renderer must handle, image, video, carousel (photo and video slides), reel, text and link.
 * Times are relative to `now`, so the feed looks fresh whenever it is made.
 */
export function demoFeed(now: Date): Feed {
  const ago = (hours: number) => new Date(now.getTime() - hours * HOUR).toISOString();
  const base = (id: string, hours: number) => ({
    id: `demo-${id}`,
    source: SOURCE,
    status: 'published' as const,
    url: PERMALINK(id),
    publishedAt: ago(hours),
  });

  const posts: Post[] = [
    {
      ...base('image', 2),
      type: 'image',
      format: 'post',
      text: 'Morning light over the harbour. #demo',
      thumbnailUrl: picture('image'),
      media: [{ url: picture('image'), mime: 'image/jpeg', width: 1080, height: 1080, alt: 'A harbour at sunrise' }],
      aspectRatio: 1,
      stats: { likes: 128, comments: 7 },
    },
    {
      ...base('video', 20),
      type: 'video',
      format: 'post',
      text: 'A flower opening, in five seconds.',
      thumbnailUrl: picture('video-cover', 1080, 1350),
      media: [{ url: VIDEO, mime: 'video/mp4', durationSec: 5 }],
      durationSec: 5,
      stats: { likes: 54 },
    },
    {
      ...base('carousel', 30),
      type: 'carousel',
      format: 'post',
      text: 'Three from the weekend: swipe.',
      thumbnailUrl: picture('carousel-1'),
      media: [
        { url: picture('carousel-1'), mime: 'image/jpeg', width: 1080, height: 1080 },
        { url: VIDEO, mime: 'video/mp4', durationSec: 5 },
        { url: picture('carousel-3'), mime: 'image/jpeg', width: 1080, height: 1080 },
      ],
      stats: { likes: 301, comments: 22 },
    },
    {
      ...base('reel', 50),
      type: 'video', // R-SCH-10: a reel renders as a video; format only adds the badge
      format: 'reel',
      text: 'Behind the scenes (reel).',
      thumbnailUrl: picture('reel-cover', 1080, 1920),
      media: [{ url: VIDEO, mime: 'video/mp4', durationSec: 5 }],
      aspectRatio: 9 / 16,
      durationSec: 5,
      stats: { likes: 1024, comments: 64, views: 20480 },
    },
    {
      ...base('text', 72),
      type: 'text',
      format: 'post',
      text: 'This is a demo feed. Connect an account and your own posts replace these.',
      media: [],
    },
    {
      ...base('link', 96),
      type: 'link',
      format: 'post',
      text: 'How the feed stays alive after the platform links expire.',
      media: [],
      link: {
        url: 'https://example.com/feedmirror-demo/how-it-works',
        title: 'How feedmirror works',
        description: 'Tokens refreshed on schedule, covers copied before their links expire.',
        imageUrl: picture('link', 1200, 630),
        domain: 'example.com',
      },
    },
  ];

  const feed = {
    schemaVersion: 1 as const,
    source: SOURCE,
    origin: {
      kind: 'profile' as const,
      id: 'demo',
      name: 'feedmirror.demo',
      displayName: 'feedmirror demo',
      url: 'https://example.com/feedmirror-demo/',
      avatarUrl: picture('avatar', 320, 320),
    },
    posts,
    fetchedAt: now.toISOString(),
    demo: true,
  };
  const r = validateFeed(feed);
  if (!r.ok) throw new SchemaViolationError('demo feed', r.problems);
  return r.feed;
}
