-- 018: posts and media copies in about a third of their bytes (PostgreSQL per account was 2.2x
-- its 40 KB target; docs/capacity.md). Nothing a feed, a copy or a reader sees changes.

-- A post was stored whole: the converted fields next to raw, the platform item they were converted
-- from (R-CNV-10), so caption, permalink and every signed link were there twice. Now a post that is
-- exactly its raw item converted keeps only that item, deflated (src/store/post-pack.ts: a format
-- byte, then the item's JSON compressed with a fixed dictionary), and is converted again when read.
-- Any other post (taken over from a published feed, R-OWN-6) keeps `post` whole, as before. Rows
-- written before this migration are such whole posts: they stay valid as they are, and the next
-- listing of their account writes them compact.
ALTER TABLE posts ALTER COLUMN post DROP NOT NULL;
ALTER TABLE posts ADD COLUMN raw bytea;
ALTER TABLE posts ADD CONSTRAINT posts_post_or_raw CHECK ((post IS NULL) <> (raw IS NULL));

-- A copy's variants were [{key, width, height, contentType}] with each full storage key (about
-- 600 bytes a row). Their keys follow from the original's (src/storage/keys.ts variantKey: the
-- original's key without extension, -w<width>, the format's extension), so a row keeps
-- `variant_sizes`: '<width>x<height>.<ext>' each, comma-separated ('' for none). A row whose
-- variant keys do not follow that rule keeps `variants` whole instead (variant_sizes null).
ALTER TABLE media_copies ADD COLUMN variant_sizes text;
ALTER TABLE media_copies ALTER COLUMN variants DROP NOT NULL, ALTER COLUMN variants DROP DEFAULT;

-- Existing rows: variants without contentType were written before MEDIA_VARIANT_FORMATS and are
-- WebP (as the store reads them).
UPDATE media_copies c
   SET variant_sizes = coalesce(
         (SELECT string_agg((e->>'width') || 'x' || (e->>'height') || '.'
                              || split_part(coalesce(e->>'contentType', 'image/webp'), '/', 2), ',' ORDER BY n)
            FROM jsonb_array_elements(c.variants) WITH ORDINALITY AS x(e, n)),
         ''),
       variants = NULL
 WHERE jsonb_typeof(c.variants) = 'array'
   AND NOT EXISTS (
     SELECT 1 FROM jsonb_array_elements(c.variants) AS e
      WHERE jsonb_typeof(e) <> 'object'
         OR coalesce(e->>'contentType', 'image/webp') NOT IN ('image/webp', 'image/avif')
         OR coalesce(e->>'width', '') !~ '^[1-9][0-9]{0,8}$'
         OR coalesce(e->>'height', '') !~ '^[1-9][0-9]{0,8}$'
         OR e->>'key' IS DISTINCT FROM
              regexp_replace(c.key, '\.[a-z0-9]+$', '') || '-w' || (e->>'width') || '.'
                || split_part(coalesce(e->>'contentType', 'image/webp'), '/', 2));

ALTER TABLE media_copies ADD CONSTRAINT media_copies_variants_one_form
  CHECK ((variants IS NULL) <> (variant_sizes IS NULL));
