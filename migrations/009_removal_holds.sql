-- 009: removals held back from a published feed. A complete listing that would remove more than
-- half of a feed's posts is not trusted on its own (an empty page from a platform glitch looks the
-- same as an account that deleted everything): nothing is pruned, and the removal waits here until
-- a second complete listing at least an hour later agrees, or the operator confirms it.
CREATE TABLE removal_holds (
  account_id      text PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
  -- When a listing first asked for this removal.
  since           timestamptz NOT NULL,
  -- The latest complete listing that asked for it again.
  last_seen_at    timestamptz NOT NULL,
  -- The media ids the listing would remove (published posts and stored ones).
  removing        text[] NOT NULL,
  -- Posts in the listing that asked for it, and posts in the feed it would shrink.
  listed_posts    integer NOT NULL CHECK (listed_posts >= 0),
  published_posts integer NOT NULL CHECK (published_posts >= 0)
);
