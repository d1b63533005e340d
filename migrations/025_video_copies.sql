-- compatible-with: 018_compact_posts_and_copies.sql
-- 025: copies of video files (MIRROR_VIDEOS=on). A video file is recorded as an ordinary copy in
-- media_copies (slot 'video-<index in media[]>', content_type video/mp4, no variants), so pruning,
-- the media sweep, verify and `media rebuild` treat it as any other copy; it adds only its running
-- time, read from the MP4's own header. A video left a platform link because it is over a cap is
-- recorded apart, so the account's health says why instead of nothing. A new nullable column and
-- a new table: the previous release neither reads nor writes them and runs on unchanged (it knows
-- no 'video-' slot and leaves those rows and their objects alone).

ALTER TABLE media_copies ADD COLUMN IF NOT EXISTS duration_sec double precision CHECK (duration_sec IS NULL OR duration_sec > 0);

-- One row per video file not mirrored because of a cap: VIDEO_MAX_BYTES ('file') or
-- VIDEO_MAX_BYTES_PER_ACCOUNT ('account'). Saving the slot's copy deletes the row; it goes with
-- its post (pruned) and with its account.
CREATE TABLE IF NOT EXISTS videos_over_cap (
  account_id text NOT NULL,
  media_id   text NOT NULL,
  slot       text NOT NULL CHECK (slot ~ '^[a-z0-9][a-z0-9-]{0,63}$'),
  cap        text NOT NULL CHECK (cap IN ('file', 'account')),
  -- The cap in bytes when it was met, and the file's size when it was known (announced or read).
  limit_bytes bigint NOT NULL CHECK (limit_bytes >= 0),
  file_bytes  bigint CHECK (file_bytes IS NULL OR file_bytes >= 0),
  noted_at   timestamptz NOT NULL,
  PRIMARY KEY (account_id, media_id, slot),
  FOREIGN KEY (account_id, media_id) REFERENCES posts (account_id, media_id) ON DELETE CASCADE
);
