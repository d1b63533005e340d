-- The settings each running worker uses for work that commands queue for it (the media variant
-- ladder and formats, webhook delivery to private addresses). A command acts with the settings the
-- workers run with, or refuses naming the difference, instead of announcing settings no worker
-- uses. seen_at is refreshed while the worker runs (database time); the row is deleted when the
-- worker stops. Never edit once released.
CREATE TABLE worker_settings (
  worker_id  text PRIMARY KEY,
  host       text NOT NULL,
  pid        integer NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  seen_at    timestamptz NOT NULL DEFAULT now(),
  settings   jsonb NOT NULL
);
CREATE INDEX worker_settings_seen_at ON worker_settings (seen_at);
