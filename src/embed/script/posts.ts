import type { Post } from '../../schema/v1.ts';
import type { WidgetPost } from '../../schema/widget-document.ts';
import { safeUrl } from './safe.ts';

/** Alt texts stop at about this many characters. */
export const ALT_MAX = 120;
const MONTHS = 'Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec'.split(' ');

export type CardKind = 'visual' | 'text' | 'link';

/** What to draw for a post: chosen from `type`, never from `format` (R-SCH-10). */
export function cardKind(post: Post): CardKind {
  if (post.type === 'link' && post.link && safeUrl(post.link.url)) return 'link';
  if ((post.type === 'image' || post.type === 'video' || post.type === 'carousel') && safeUrl(post.thumbnailUrl))
    return 'visual';
  // No usable cover: a text card, never an empty image (R-CNV-12).
  return 'text';
}

/** The same on the server and in every browser (English, UTC). */
export function shortDate(iso: unknown): string {
  const d = new Date(iso as string);
  return isNaN(d.getTime()) ? '' : `${MONTHS[d.getUTCMonth()]} ${d.getUTCDate()}, ${d.getUTCFullYear()}`;
}

/** R-EMB-1: caption without hashtags, first sentence, ~120 characters. */
export function captionAlt(text: unknown): string {
  let t = String(text || '')
    .replace(/(^|\s)#[^\s#]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  const m = /^.+?[.!?](?=\s|$)/.exec(t);
  if (m) t = m[0];
  if (t.length > ALT_MAX)
    t = `${t
      .slice(0, ALT_MAX)
      .replace(/\s+\S*$/, '')
      .replace(/[\s,;:]+$/, '')}\u2026`;
  return t;
}

/** R-EMB-1: the media's own alt, else the caption's first sentence, else who posted it and when. */
export function widgetAlt(post: WidgetPost): string {
  const m = post.media && post.media[0];
  if (m && typeof m.alt === 'string' && m.alt.trim()) return m.alt.trim();
  const d = shortDate(post.publishedAt);
  return captionAlt(post.text) || `Post by @${post.username || 'unknown'}${d ? ` on ${d}` : ''}`;
}

/** R-SCH-10: format and type serve badges. */
export function badgeOf(post: Post): string {
  if (post.format === 'reel') return 'Reel';
  if (post.type === 'carousel') return 'Carousel';
  return post.type === 'video' ? 'Video' : '';
}

/** Post ids are unique per account only. */
export function keyOf(p: WidgetPost): string {
  return `${p.accountId}/${p.id}`;
}

/** The key of the post a tile shows. */
export function liKey(li: Element): string {
  return `${li.getAttribute('data-account-id')}/${li.getAttribute('data-post-id')}`;
}
