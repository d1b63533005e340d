import { z } from 'zod';

/**
 * A media item as the platform's media edge returns it. Apart from `id`, every field is optional:
 * a field is returned only when named in `fields=` (R-MED-2), and caption / media_product_type may
 * be silently omitted (R-MED-4). Unknown fields are kept (loose) so `raw` holds the item untouched
 * (R-CNV-10). media_type stays a string: an unknown future type must not fail a whole listing;
 * the converter drops such items with a reason.
 */
export const childItemSchema = z.looseObject({
  id: z.string().min(1),
  media_type: z.string().optional(),
  media_url: z.string().optional(),
  thumbnail_url: z.string().optional(),
});

export const mediaItemSchema = z.looseObject({
  id: z.string().min(1),
  caption: z.string().optional(),
  media_type: z.string().optional(),
  media_product_type: z.string().optional(),
  media_url: z.string().optional(),
  thumbnail_url: z.string().optional(),
  permalink: z.string().optional(),
  timestamp: z.string().optional(),
  username: z.string().optional(),
  like_count: z.number().int().nonnegative().optional(),
  comments_count: z.number().int().nonnegative().optional(),
  is_shared_to_feed: z.boolean().optional(),
  children: z.looseObject({ data: z.array(childItemSchema) }).optional(),
});

export type ChildItem = z.infer<typeof childItemSchema>;
export type MediaItem = z.infer<typeof mediaItemSchema>;

/** The full-feed field list (R-MED-3), in the order the optional ones are dropped last-to-first. */
export const FULL_FEED_FIELDS = [
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
  'children{media_type,media_url,thumbnail_url}',
] as const;

/** Fields the platform may refuse for this login variant, dropped one at a time in this order (R-MED-4). */
export const DROPPABLE_FIELDS = ['caption', 'media_product_type'] as const;
export type DroppableField = (typeof DROPPABLE_FIELDS)[number];
