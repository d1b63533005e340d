-- compatible-with: 018_compact_posts_and_copies.sql
-- 024: several platform apps in one deployment (Standard Access: one app per client). An app is
-- a name the operator chose, the platform's app id and its secret, sealed like the tokens with
-- TOKEN_ENCRYPTION_KEY (AES-256-GCM, bound to `app:<name>`) and re-encrypted by `feedmirror keys
-- rotate`. APP_ID/APP_SECRET from the environment stay the default app, which has no row: an
-- account, an invitation or a login with app_name NULL belongs to it, so every row the previous
-- release wrote keeps meaning what it meant.
--
-- fault*: what the platform last said against the app itself (its secret refused, the app
-- restricted), cleared when the app works again or its secret is replaced; the accounts' health
-- names the app while it stands.
--
-- New table and nullable columns only: the previous release neither reads nor writes them and
-- runs on unchanged (its accounts are the default app's).

CREATE TABLE IF NOT EXISTS apps (
  name           text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,39}$'),
  app_id         text NOT NULL UNIQUE CHECK (app_id ~ '^[0-9A-Za-z_-]{1,64}$'),
  secret_key_id  text NOT NULL,
  secret         bytea NOT NULL,
  created_at     timestamptz NOT NULL,
  updated_at     timestamptz NOT NULL,
  fault_kind     text CHECK (fault_kind IS NULL OR fault_kind IN ('app_secret_refused', 'app_restricted')),
  fault          text,
  fault_at       timestamptz
);

-- RESTRICT: `feedmirror apps remove` refuses an app its accounts use (and says which); the
-- constraint holds the same line against anything else.
ALTER TABLE accounts ADD COLUMN IF NOT EXISTS app_name text REFERENCES apps (name) ON DELETE RESTRICT;
CREATE INDEX IF NOT EXISTS accounts_app_name_idx ON accounts (app_name) WHERE app_name IS NOT NULL;
-- An invitation for a removed app is void.
ALTER TABLE invitations ADD COLUMN IF NOT EXISTS app_name text REFERENCES apps (name) ON DELETE CASCADE;
-- The app a login was started with: the one callback knows whose code it holds.
ALTER TABLE login_states ADD COLUMN IF NOT EXISTS app_name text;
