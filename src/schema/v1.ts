import { z } from 'zod';

/**
 * Schema v1: the portable feed shape (spec "Resources and their fields", rules R-SCH-1..11).
 * This module imports nothing of ours (docs/architecture.md): it is the contract every other part and every
 * outside reader relies on, and the JSON Schema in feed-v1.schema.json is generated from it.
 *
 * Unknown keys: Feed, Origin, Post, Media and Link ALLOW (and keep) keys they do not know. v1 is a
 * portable format read by code we do not control; a producer may add an optional field later, and
 * an old reader must not reject the whole feed for it (forward compatibility). Stats is the one
 * closed object, because the spec says so (R-SCH-5). Misspelled required fields are still caught,
 * since the required one is then missing.
 */

const HTTP_URL = /^https?:\/\//;
const MIME = /^(image|video|audio)\//;

/** A string that must be an http(s) URL (R-SCH-2/3/4/6/7/9). */
const httpUrl = () => z.string().regex(HTTP_URL, { error: 'must be an http:// or https:// URL' });
/** A non-empty string (minLength 1). */
const nonEmpty = () => z.string().min(1, { error: 'must not be empty' });
/** ISO 8601 / RFC 3339 date-time with Z or a ±hh:mm offset; local times and +0000 are refused. */
const dateTime = () =>
  z.iso.datetime({
    offset: true,
    // A missing value falls through to the generic "required".
    error: (iss) =>
      iss.input === undefined
        ? undefined
        : 'must be an ISO 8601 date-time with Z or a ±hh:mm offset (e.g. 2024-05-01T12:00:00+00:00)',
  });
const positive = () => z.number().positive({ error: 'must be a number > 0' });
const nonNegative = () => z.number().min(0, { error: 'must be a number >= 0' });

/** Named definitions of the JSON Schema ($defs); private, so importing twice never collides. */
export const v1Registry = z.registry<{ id?: string; description?: string }>();

/** Attach a description that ends up in the JSON Schema (kept in our registry, not zod's global one). */
function doc<T extends z.ZodType>(schema: T, description: string): T {
  v1Registry.add(schema, { description });
  return schema;
}

export const ORIGIN_KINDS = ['profile', 'hashtag', 'playlist', 'board', 'channel'] as const;
export const POST_TYPES = ['image', 'video', 'carousel', 'text', 'link'] as const;
/** Types that render a picture, hence need thumbnailUrl (R-SCH-7). */
export const VISUAL_POST_TYPES = ['image', 'video', 'carousel'] as const;
export const POST_STATUSES = ['published', 'live', 'upcoming'] as const;
export const STATS_KEYS = ['likes', 'comments', 'views', 'shares'] as const;

// R-SCH-2
export const originSchema = z.looseObject({
  kind: z.enum(ORIGIN_KINDS),
  id: nonEmpty(),
  name: doc(nonEmpty(), 'handle without @, playlist id, board slug, or hashtag without #'),
  displayName: nonEmpty(),
  url: httpUrl(),
  avatarUrl: httpUrl().optional(),
});
originSchema.register(v1Registry, { id: 'Origin', description: 'Where the posts come from.' });

/*
 * Extension fields (optional; a v1 reader that does not know them ignores them, since every
 * object but Stats is open). Each mirrored image (a post's cover, every photo slide) may list its
 * sizes, for `srcset`, and a placeholder to paint while it loads. They are validated when present:
 * a feed carrying them malformed is refused.
 */
const IMAGE_MIME = /^image\//;
const HEX_COLOR = /^#[0-9a-fA-F]{6}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

export const imageSizeSchema = z.looseObject({
  url: httpUrl(),
  width: z.number().int({ error: 'must be a whole number of pixels' }).positive({ error: 'must be a number > 0' }),
  height: z.number().int({ error: 'must be a whole number of pixels' }).positive({ error: 'must be a number > 0' }),
  mime: z.string().regex(IMAGE_MIME, { error: 'must be an image MIME type (image/...)' }),
});
imageSizeSchema.register(v1Registry, {
  id: 'ImageSize',
  description:
    'Extension (optional): one encoded size of an image, for srcset. The largest is the original; none is wider than it.',
});

/** A fresh array schema per use, so each field keeps its own description in the JSON Schema. */
const imageSizes = () => z.array(imageSizeSchema).min(1, { error: 'must list at least one size when present' });

export const placeholderSchema = z.looseObject({
  color: z.string().regex(HEX_COLOR, { error: 'must be a #rrggbb colour' }),
  thumbhash: z
    .string()
    .regex(BASE64, { error: 'must be a base64 ThumbHash' })
    .max(200, { error: 'must be at most 200 characters' })
    .optional(),
});
placeholderSchema.register(v1Registry, {
  id: 'Placeholder',
  description:
    'Extension (optional): what to paint until the image loads: its dominant colour and a ThumbHash (base64, https://evanw.github.io/thumbhash/).',
});

// R-SCH-3
export const mediaSchema = z.looseObject({
  url: httpUrl(),
  mime: z.string().regex(MIME, { error: 'must be a MIME type starting with image/, video/ or audio/' }),
  width: positive().optional(),
  height: positive().optional(),
  durationSec: positive().optional(),
  bytes: doc(
    z.number().int().positive({ error: 'must be a whole number > 0' }),
    "extension (optional): the file's size in bytes (a mirrored video)",
  ).optional(),
  alt: z.string().optional(),
  sizes: doc(imageSizes(), 'extension (optional): the sizes of a mirrored photo, smallest first').optional(),
  placeholder: placeholderSchema.optional(),
});
mediaSchema.register(v1Registry, { id: 'Media', description: 'One picture, video or sound of a post.' });

const requiredWhen = (what: string) => (iss: { input: unknown }) =>
  iss.input === undefined ? `required when type is ${what}` : undefined;

// R-SCH-4. A link is required only on link posts (optional elsewhere, where undefined never
// reaches this error), so the "missing" message can name that condition (R-SCH-8).
export const linkSchema = z.looseObject(
  {
    url: httpUrl(),
    title: z.string().optional(),
    description: z.string().optional(),
    imageUrl: httpUrl().optional(),
    domain: z.string().optional(),
  },
  { error: requiredWhen('link') },
);
linkSchema.register(v1Registry, { id: 'Link', description: 'The page a link post points at.' });

// R-SCH-5: closed object, every count optional and >= 0; a missing count is unknown, not zero.
export const statsSchema = z.strictObject({
  likes: nonNegative().optional(),
  comments: nonNegative().optional(),
  views: nonNegative().optional(),
  shares: nonNegative().optional(),
});
statsSchema.register(v1Registry, { id: 'Stats', description: 'Counts, only those the source returned.' });

/** Fields every post has, whatever its type (R-SCH-6, R-SCH-9). */
const postCommon = {
  id: nonEmpty(),
  source: nonEmpty(),
  // R-SCH-10: format is for filters and badges only; renderers choose layout from `type`.
  format: doc(nonEmpty(), 'the platform name of the post (post, reel, ...): filters and badges only, never layout'),
  status: z.enum(POST_STATUSES),
  url: httpUrl(),
  text: doc(z.string(), 'caption, description or title; may be empty'),
  media: z.array(mediaSchema),
  embedUrl: httpUrl().optional(),
  aspectRatio: positive().optional(),
  durationSec: positive().optional(),
  publishedAt: dateTime(),
  stats: statsSchema.optional(),
  raw: doc(z.unknown(), 'original platform payload, untouched').optional(),
  thumbnailSizes: doc(
    imageSizes(),
    'extension (optional): the sizes of the mirrored cover (thumbnailUrl), smallest first',
  ).optional(),
  thumbnailPlaceholder: placeholderSchema.optional(),
};

// R-SCH-7: a post that renders a picture carries its cover.
const visualPostSchema = z.looseObject({
  ...postCommon,
  type: z.enum(VISUAL_POST_TYPES),
  thumbnailUrl: z
    .string({ error: requiredWhen('image, video or carousel') })
    .regex(HTTP_URL, { error: 'must be an http:// or https:// URL' }),
  link: linkSchema.optional(),
});

const textPostSchema = z.looseObject({
  ...postCommon,
  type: z.literal('text'),
  thumbnailUrl: httpUrl().optional(),
  link: linkSchema.optional(),
});

// R-SCH-8: a link post carries its link.
const linkPostSchema = z.looseObject({
  ...postCommon,
  type: z.literal('link'),
  thumbnailUrl: httpUrl().optional(),
  link: linkSchema,
});

/**
 * Post: a union discriminated on `type`, so the conditionals (R-SCH-7, R-SCH-8) are part of the
 * generated JSON Schema too (oneOf, one branch per group of types) instead of hidden refinements.
 */
export const postSchema = z.discriminatedUnion('type', [visualPostSchema, textPostSchema, linkPostSchema]);
postSchema.register(v1Registry, { id: 'Post', description: 'One post; `type` says what to render.' });

/**
 * The same post fields with `type` as a plain enum and no conditionals: used to list every other
 * problem of a post whose `type` is missing or unknown (a union cannot pick a branch then).
 */
export const postBaseSchema = z.looseObject({
  ...postCommon,
  type: z.enum(POST_TYPES),
  thumbnailUrl: httpUrl().optional(),
  link: linkSchema.optional(),
});

// R-SCH-1, R-SCH-11
export const feedSchema = z.looseObject({
  schemaVersion: z.literal(1),
  source: nonEmpty(),
  origin: originSchema,
  posts: z.array(postSchema),
  fetchedAt: doc(dateTime(), 'when the feed was fetched from the platform'),
  demo: doc(z.boolean(), 'true until an account is connected; renderers show a demo label'),
  nextCursor: doc(nonEmpty(), 'present when more posts can be requested').optional(),
});

export type Origin = z.infer<typeof originSchema>;
export type Media = z.infer<typeof mediaSchema>;
export type ImageSize = z.infer<typeof imageSizeSchema>;
export type Placeholder = z.infer<typeof placeholderSchema>;
export type Link = z.infer<typeof linkSchema>;
export type Stats = z.infer<typeof statsSchema>;
export type Post = z.infer<typeof postSchema>;
export type PostType = (typeof POST_TYPES)[number];
export type Feed = z.infer<typeof feedSchema>;
