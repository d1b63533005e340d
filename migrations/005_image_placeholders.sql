-- Placeholders of each mirrored image: what a page paints until the image has loaded.
-- {"color": "#rrggbb", "thumbhash": "<base64>"}; NULL for copies made before this migration, until
-- `feedmirror media rebuild` re-encodes them. variants entries gain "contentType" (image/webp or
-- image/avif); entries written before it are WebP.
ALTER TABLE media_copies ADD COLUMN placeholder jsonb;
