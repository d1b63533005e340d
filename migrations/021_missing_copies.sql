-- compatible-with: 018_compact_posts_and_copies.sql
-- 021: copies whose objects are missing from storage although a published feed points at them (a
-- file deleted behind feedmirror's back, a bucket restored from an old backup). Found by
-- `feedmirror verify` (the command or the worker's daily run); the account's health says so until
-- the copy is made again, and the next sync copies it again instead of trusting its record.
-- A new table: the previous release neither reads nor writes it and runs on unchanged.

-- One row per copy (image slot) with an object missing: the original or one of its sizes. Saving
-- the copy again deletes the row; it goes with its copy (a pruned post) and with its account.
CREATE TABLE missing_copies (
  account_id text NOT NULL,
  media_id   text NOT NULL,
  slot       text NOT NULL,
  -- The object found missing (the first one, when several of the copy's were).
  key        text NOT NULL,
  -- What found it: 'verify'.
  found_by   text NOT NULL,
  -- When it was first found missing (the start of the run that found it).
  found_at   timestamptz NOT NULL,
  PRIMARY KEY (account_id, media_id, slot),
  FOREIGN KEY (account_id, media_id, slot) REFERENCES media_copies (account_id, media_id, slot) ON DELETE CASCADE
);
