import type { FieldRequest } from './fields.ts';
import type { LinkSigner } from './links.ts';
import type { AccountRecord, PostRecord, SimState } from './state.ts';
import type { SimSlide } from './types.ts';

/**
 * A post as the media edge and the single-media call answer it. Apart from id, only the named
 * fields are returned (R-MED-2); links are signed to expire at `linkExpiresAtMs`.
 */

export const MEDIA_FIELDS = new Set([
  'id',
  'caption',
  'media_type',
  'media_product_type',
  'media_url',
  'thumbnail_url',
  'permalink',
  'timestamp',
  'username',
  'like_count',
  'comments_count',
  'is_shared_to_feed',
  'children',
  'shortcode',
  'owner',
]);
export const CHILD_FIELDS = new Set([
  'id',
  'media_type',
  'media_url',
  'thumbnail_url',
  'timestamp',
  'permalink',
  'username',
  'shortcode',
]);

/** Why a field list is refused, in the platform's words; undefined when acceptable. */
export function refusedField(fields: FieldRequest[], account: AccountRecord): string | undefined {
  for (const f of fields) {
    // R-MED-4: this login variant may refuse caption / media_product_type outright.
    if (!MEDIA_FIELDS.has(f.name) || account.refuseFields.has(f.name as 'caption')) {
      return `Tried accessing nonexisting field (${f.name}) on node type (IGMedia)`;
    }
    if (f.sub) {
      if (f.name !== 'children') return `Field ${f.name} does not support expansion`;
      for (const s of f.sub)
        if (!CHILD_FIELDS.has(s)) return `Tried accessing nonexisting field (${s}) on node type (IGMedia)`;
    }
  }
  return undefined;
}

/** From v26.0 on, a reel comes back with media_type REELS instead of VIDEO. */
export function reelsHaveTheirOwnType(version: string): boolean {
  const [major] = version.slice(1).split('.');
  return Number(major) >= 26;
}

/** Timestamp written the platform's way: 2026-01-01T10:00:00+0000. */
export function platformTimestamp(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, '+0000');
}

export class MediaRenderer {
  constructor(
    private readonly state: SimState,
    private readonly signer: LinkSigner,
  ) {}

  private link(p: PostRecord, slot: string, ext: 'jpg' | 'mp4', expiresAtMs: number): string {
    return this.signer.sign(
      { accountId: p.accountId, mediaId: p.id, slot: `${slot}-r${p.rev}`, ext },
      p.linksWithoutOe ? null : expiresAtMs,
    );
  }

  private mediaType(p: PostRecord, version: string): string {
    if (p.kind === 'image') return 'IMAGE';
    if (p.kind === 'carousel') return 'CAROUSEL_ALBUM';
    // The documented difference between the versions (README "API versions"): from v26.0 a reel
    // is media_type REELS; before, video, reel and copyright-flagged (music) videos are all VIDEO
    // (R-CNV-13).
    if (p.kind === 'reel' && reelsHaveTheirOwnType(version)) return 'REELS';
    return 'VIDEO';
  }

  private slideItem(
    p: PostRecord,
    index: number,
    s: SimSlide,
    sub: string[] | undefined,
    expiresAtMs: number,
  ): Record<string, unknown> {
    const out: Record<string, unknown> = { id: s.id };
    for (const name of sub ?? []) {
      if (name === 'media_type') out.media_type = s.kind === 'video' ? 'VIDEO' : 'IMAGE';
      else if (name === 'media_url') {
        // 'image-no-url': a slide the platform returns without media_url (R-CNV-7).
        if (s.kind === 'video') out.media_url = this.link(p, `s${index}-media`, 'mp4', expiresAtMs);
        else if (s.kind === 'image') out.media_url = this.link(p, `s${index}-media`, 'jpg', expiresAtMs);
      } else if (name === 'thumbnail_url') {
        // R-MED-9: a video slide has its own cover frame.
        if (s.kind === 'video') out.thumbnail_url = this.link(p, `s${index}-thumb`, 'jpg', expiresAtMs);
      } else if (name === 'timestamp') out.timestamp = platformTimestamp(p.timestamp);
      else if (name === 'username') out.username = this.state.account(p.accountId).username;
      // permalink and shortcode: slides have none (R-MED-9).
    }
    return out;
  }

  /** The item of a carousel slide asked for by its own id. */
  renderSlide(p: PostRecord, slideId: string, fields: FieldRequest[], expiresAtMs: number): Record<string, unknown> {
    const index = p.slides.findIndex((s) => s.id === slideId);
    const slide = p.slides[index] as SimSlide;
    return this.slideItem(
      p,
      index,
      slide,
      fields.map((f) => f.name).filter((n) => CHILD_FIELDS.has(n)),
      expiresAtMs,
    );
  }

  /** `version`: the API version the call named (v25.0 unless given); see mediaType. */
  render(p: PostRecord, fields: FieldRequest[], expiresAtMs: number, version = 'v25.0'): Record<string, unknown> {
    const account = this.state.account(p.accountId);
    const out: Record<string, unknown> = { id: p.id };
    const video = p.kind === 'video' || p.kind === 'reel';
    for (const f of fields) {
      // R-MED-4: silently omitted for this account.
      if (account.omitFields.has(f.name as 'caption')) continue;
      switch (f.name) {
        case 'caption':
          if (p.caption !== null) out.caption = p.caption;
          break;
        case 'media_type':
          // A glitch: a media type no converter knows.
          out.media_type = p.glitch === 'unknown-media-type' ? 'HOLOGRAM' : this.mediaType(p, version);
          break;
        case 'media_product_type':
          out.media_product_type = p.kind === 'reel' ? 'REELS' : 'FEED';
          break;
        case 'media_url':
          if (p.kind === 'image') out.media_url = this.link(p, 'media', 'jpg', expiresAtMs);
          else if (video) out.media_url = this.link(p, 'media', 'mp4', expiresAtMs);
          else if (p.kind === 'carousel') {
            // The album's own media_url is its first slide's file (when that slide has one).
            const first = p.slides[0];
            if (first && first.kind !== 'image-no-url')
              out.media_url = this.link(p, 's0-media', first.kind === 'video' ? 'mp4' : 'jpg', expiresAtMs);
          }
          // copyright: no media_url at all (R-CNV-12).
          break;
        case 'thumbnail_url':
          if (video) out.thumbnail_url = this.link(p, 'thumb', 'jpg', expiresAtMs);
          break;
        case 'permalink':
          out.permalink = this.state.permalink(p);
          break;
        case 'shortcode':
          out.shortcode = p.shortcode;
          break;
        case 'timestamp':
          if (p.glitch !== 'no-timestamp') out.timestamp = platformTimestamp(p.timestamp);
          break;
        case 'username':
          out.username = account.username;
          break;
        case 'owner':
          out.owner = { id: p.accountId };
          break;
        case 'like_count':
          if (p.likeCount !== null) out.like_count = p.likeCount;
          break;
        case 'comments_count':
          if (p.commentsCount !== null) out.comments_count = p.commentsCount;
          break;
        case 'is_shared_to_feed':
          // R-MED-11: reels only; undefined on other media.
          if (p.kind === 'reel') out.is_shared_to_feed = p.isSharedToFeed;
          break;
        case 'children':
          if (p.kind === 'carousel') {
            out.children = {
              data: p.slides.map((s, i) => (f.sub ? this.slideItem(p, i, s, f.sub, expiresAtMs) : { id: s.id })),
            };
          }
          break;
        default:
          break;
      }
    }
    return out;
  }
}
