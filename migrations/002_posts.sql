-- 002: the feed pipeline's state: posts read from the media edge, the mirrored copies of their
-- images, and what was last published per account. Never edit once released: add 003_... instead.

CREATE TABLE posts (
  account_id    text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  -- The platform's media id: the key for merging pages and listings (R-MED-7).
  media_id      text NOT NULL CHECK (media_id ~ '^[A-Za-z0-9_-]{1,128}$'),
  -- The converted schema v1 post as read, platform links included (raw untouched, R-CNV-10). The
  -- links are the latest signed ones: mirror jobs copy from them, publishing rewrites them.
  post          jsonb NOT NULL,
  -- sha256 of the post with the signed query strings removed: links are re-signed on every read,
  -- so only a change of content (caption, counts, a new file) changes the hash.
  content_hash  text NOT NULL,
  -- Earliest oe among the item's links (R-LNK-1, R-LNK-4); null when no link carries one.
  earliest_oe   timestamptz,
  first_seen_at timestamptz NOT NULL,
  last_seen_at  timestamptz NOT NULL,
  PRIMARY KEY (account_id, media_id)
);

-- One row per copied image of a post (the cover, each photo slide). No foreign key to posts on
-- purpose: when a post is pruned (R-LNK-6) its copies stay listed here until the feed without it
-- is published and the objects are deleted; a row without its post means "delete my objects".
CREATE TABLE media_copies (
  account_id   text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  media_id     text NOT NULL,
  -- 'cover', 'slide-1', ...: one image of the media item.
  slot         text NOT NULL CHECK (slot ~ '^[a-z0-9][a-z0-9-]{0,63}$'),
  -- What was copied: the source link without its signature (scheme, host, path). Re-signed links
  -- of the same file keep it; a new file (an edited post) changes it and is copied again.
  source_id    text NOT NULL,
  key          text NOT NULL,
  width        integer NOT NULL CHECK (width > 0),
  height       integer NOT NULL CHECK (height > 0),
  bytes        bigint NOT NULL CHECK (bytes >= 0),
  content_type text NOT NULL,
  -- [{key, width, height}] of the resized variants.
  variants     jsonb NOT NULL DEFAULT '[]',
  copied_at    timestamptz NOT NULL,
  PRIMARY KEY (account_id, media_id, slot)
);

-- What is in feeds/<account_id>.json, so an unchanged feed is not written again.
CREATE TABLE feed_publications (
  account_id   text PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
  -- sha256 of the feed without fetchedAt and without link signatures.
  feed_hash    text NOT NULL,
  published_at timestamptz NOT NULL,
  post_count   integer NOT NULL,
  -- R-SCH-11: true while the account has not had a successful sync yet.
  demo         boolean NOT NULL,
  -- Earliest oe among the platform links still in the feed (video files): the feed is written
  -- again before they die, even when nothing else changed.
  earliest_oe  timestamptz
);
