-- compatible-with: 018_compact_posts_and_copies.sql
-- 019: posts the operator hid from their account's published feed (and so from every widget and
-- every site reading the feed), by post id. Hiding never deletes a post's row or its copies: the
-- post stays stored, synced and copied, and comes back in the feed the moment it is unhidden.
-- No reference to accounts: a hidden post stays hidden when its account is removed and connected
-- again, as a post hidden in a widget does. Never edit once released.

CREATE TABLE feed_hidden_posts (
  account_id text NOT NULL CHECK (account_id ~ '^[A-Za-z0-9_-]{1,128}$'),
  post_id    text NOT NULL CHECK (post_id ~ '^[A-Za-z0-9_-]{1,128}$'),
  hidden_at  timestamptz NOT NULL,
  PRIMARY KEY (account_id, post_id)
);
