/*
 * The widget document: the contract of `widgets/<id>.json`, which the embed script
 * (src/embed/script/, type-only imports of this module) and the static markup (src/embed/markup.ts)
 * read, and src/widgets/ writes. It sits beside schema v1 (a published format too) and imports only
 * zod and schema v1, so every layer that reads or writes it imports it downwards.
 * - Beyond the agreed shape: `demo` (true when every source account still shows the demo feed:
 *   show the demo label, R-SCH-11), `accounts[].displayName`, `options.maxPosts` (how many posts
 *   the document carries at most), `viewsUrl` (null unless the operator set WIDGET_VIEWS_URL or
 *   PUBLIC_URL with views on: then one view is reported per page load, R-EMB-4).
 * - posts are schema v1 posts as the source feeds publish them plus `accountId` and `username`;
 *   post ids are unique per account only, so key a post by accountId + id.
 * - The published objects: widgets/<id>.json (application/json) and widgets/<id>.html (the
 *   static fragment), with the feeds' Cache-Control (public, max-age=300 by default).
 * - viewsUrl is `WIDGET_VIEWS_URL/w/<id>/view`: serve answers POST and GET with 204, CORS *, no
 *   cookie. The dashboard's preview uses data-src="/dashboard/widgets/<id>/document.json" (the
 *   published document through the session, viewsUrl set to null) with /dashboard/widget.js.
 */
import { z } from 'zod';
import { POST_TYPES, postSchema } from './v1.ts';

/** `w_` and ten characters of lower-case base32 (RFC 4648 alphabet): short, url-safe, a storage id. */
export const WIDGET_ID_PATTERN = /^w_[a-z2-7]{10}$/;
export const WIDGET_LAYOUTS = ['grid', 'list', 'carousel', 'masonry'] as const;
export const WIDGET_CAPTIONS = ['show', 'hover', 'hide'] as const;
export const WIDGET_THEMES = ['light', 'dark', 'auto'] as const;
/** Filterable post types: schema v1's `type` (R-SCH-10: never `format`). */
export const WIDGET_FILTER_TYPES = POST_TYPES;

export const WIDGET_LIMITS = {
  /** The most posts a document carries (Load more reveals them without a platform request). */
  maxPosts: 200,
  columns: 8,
  radius: 48,
  gap: 64,
  tags: 50,
  tagLength: 100,
  name: 100,
} as const;

export const widgetIdSchema = z
  .string()
  .regex(WIDGET_ID_PATTERN, { error: 'a widget id is w_ followed by 10 characters of a-z and 2-7' });

const int = (what: string, min: number, max: number) =>
  z
    .number({ error: `${what} must be a number` })
    .int({ error: `${what} must be a whole number` })
    .min(min, { error: `${what} must be at least ${min}` })
    .max(max, { error: `${what} must be at most ${max}` });

/** A hashtag as filters compare it: without `#`, lower case, letters, digits and `_` only. */
export const tagSchema = z
  .string()
  .transform((s) => s.trim().replace(/^#+/, '').toLowerCase())
  .pipe(
    z
      .string()
      .min(1, { error: 'a tag must not be empty' })
      .max(WIDGET_LIMITS.tagLength, { error: `a tag must be at most ${WIDGET_LIMITS.tagLength} characters` })
      .regex(/^[\p{L}\p{N}_]+$/u, { error: 'a tag is letters, digits and _ only (without spaces or punctuation)' }),
  );

const tags = (what: string) =>
  z
    .array(tagSchema)
    .max(WIDGET_LIMITS.tags, { error: `${what}: at most ${WIDGET_LIMITS.tags} tags` })
    .transform((list) => [...new Set(list)]);

export const widgetFiltersSchema = z.strictObject({
  /** Post types shown; empty = all. */
  types: z
    .array(z.enum(WIDGET_FILTER_TYPES, { error: `a type filter is one of ${WIDGET_FILTER_TYPES.join(', ')}` }))
    .transform((list) => [...new Set(list)])
    .default([]),
  /** Shown only when the caption has any of these hashtags (empty = no such condition). */
  includeTags: tags('includeTags').default([]),
  /** Never shown when the caption has one of these hashtags. */
  excludeTags: tags('excludeTags').default([]),
});

export const widgetColumnsSchema = z.strictObject({
  phone: int('columns.phone', 1, WIDGET_LIMITS.columns).default(2),
  tablet: int('columns.tablet', 1, WIDGET_LIMITS.columns).default(3),
  desktop: int('columns.desktop', 1, WIDGET_LIMITS.columns).default(4),
});

/**
 * A widget's options, every one with its default: parse({}) is the default widget. Strict: an
 * unknown option is an error naming it, never silently dropped.
 */
export const widgetOptionsSchema = z
  .strictObject({
    /** Posts shown before "Load more". */
    limit: int('limit', 1, WIDGET_LIMITS.maxPosts).default(12),
    /** Posts the document carries at most (what Load more can reveal). */
    maxPosts: int('maxPosts', 1, WIDGET_LIMITS.maxPosts).default(60),
    columns: widgetColumnsSchema.default({ phone: 2, tablet: 3, desktop: 4 }),
    header: z.boolean({ error: 'header must be true or false' }).default(true),
    captions: z
      .enum(WIDGET_CAPTIONS, { error: `captions must be one of ${WIDGET_CAPTIONS.join(', ')}` })
      .default('hover'),
    date: z.boolean({ error: 'date must be true or false' }).default(true),
    badges: z.boolean({ error: 'badges must be true or false' }).default(true),
    radius: int('radius', 0, WIDGET_LIMITS.radius).default(8),
    gap: int('gap', 0, WIDGET_LIMITS.gap).default(8),
    theme: z.enum(WIDGET_THEMES, { error: `theme must be one of ${WIDGET_THEMES.join(', ')}` }).default('auto'),
    filters: widgetFiltersSchema.default({ types: [], includeTags: [], excludeTags: [] }),
  })
  .refine((o) => o.limit <= o.maxPosts, { error: 'limit must not be more than maxPosts', path: ['limit'] });

export const widgetDocumentAccountSchema = z.looseObject({
  id: z.string().min(1),
  username: z.string().min(1),
  displayName: z.string().min(1),
  profileUrl: z.string().regex(/^https?:\/\//),
  avatarUrl: z
    .string()
    .regex(/^https?:\/\//)
    .nullable(),
});

/** A schema v1 post as its account's feed publishes it, plus which account it comes from. */
export const widgetPostSchema = z.intersection(
  postSchema,
  z.looseObject({ accountId: z.string().min(1), username: z.string().min(1) }),
);

const isoDateTime = () => z.iso.datetime({ offset: true });

export const widgetDocumentSchema = z.looseObject({
  version: z.literal(1),
  id: widgetIdSchema,
  name: z.string().min(1),
  generatedAt: isoDateTime(),
  /** The earliest time since which a source account's syncs fail; null when every source is fine. */
  staleSince: isoDateTime().nullable(),
  /** true while every source account still shows the demo feed (R-SCH-11: show a demo label). */
  demo: z.boolean(),
  layout: z.enum(WIDGET_LAYOUTS),
  options: widgetOptionsSchema,
  accounts: z.array(widgetDocumentAccountSchema),
  /** Newest first, hidden posts and filtered ones removed, at most options.maxPosts. */
  posts: z.array(widgetPostSchema),
  /** Where the script reports a view (navigator.sendBeacon), or null when views are not counted. */
  viewsUrl: z
    .string()
    .regex(/^https?:\/\//)
    .nullable()
    .optional(),
});

export type WidgetLayout = (typeof WIDGET_LAYOUTS)[number];
export type WidgetOptions = z.output<typeof widgetOptionsSchema>;
/** Options as an operator may give them: any subset, the rest defaulted. */
export type WidgetOptionsInput = z.input<typeof widgetOptionsSchema>;
export type WidgetDocumentAccount = z.infer<typeof widgetDocumentAccountSchema>;
export type WidgetPost = z.infer<typeof widgetPostSchema>;
export type WidgetDocument = z.output<typeof widgetDocumentSchema>;

/** The default options (every option at its default). */
export function defaultWidgetOptions(): WidgetOptions {
  return widgetOptionsSchema.parse({});
}
