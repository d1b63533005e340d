-- compatible-with: 018_compact_posts_and_copies.sql
-- 022: how each reconnect link reached the owner. The alerts email theirs; the operator may make a
-- new one on the account's page and either have it emailed or shown to copy and pass on. The
-- account's page says which, so it never claims the owner was emailed a link that only the
-- operator saw.

ALTER TABLE reconnect_links
  ADD COLUMN IF NOT EXISTS delivery text NOT NULL DEFAULT 'email' CHECK (delivery IN ('email', 'copy'));
