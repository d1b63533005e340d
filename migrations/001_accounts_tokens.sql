-- 001: connected accounts, their encrypted tokens, login states, alert deduplication and the
-- token history. Applied in one transaction by src/store/migrate.ts; never edit once released
-- (the checksum is recorded): add 002_... instead.

CREATE TABLE accounts (
  -- The platform's user id: stable across reconnects, so a reconnect updates the same row.
  id              text PRIMARY KEY CHECK (id <> ''),
  username        text NOT NULL,
  display_name    text,
  avatar_url      text,
  account_type    text,
  status          text NOT NULL DEFAULT 'active'
                  CHECK (status IN ('active', 'reauth_required', 'disabled')),
  status_reason   text,
  -- Optional media fields this account refuses (R-MED-4): not asked for again.
  refused_fields  text[] NOT NULL DEFAULT '{}',
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  last_sync_at    timestamptz,
  last_sync_error text
);

CREATE TABLE tokens (
  account_id              text PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
  -- Which key of TOKEN_ENCRYPTION_KEY sealed the ciphertext (rotation re-encrypts by key_id).
  key_id                  text NOT NULL,
  -- AES-256-GCM: iv(12) | tag(16) | ciphertext, bound to account_id as additional data.
  ciphertext              bytea NOT NULL,
  obtained_at             timestamptz NOT NULL,
  -- Absolute expiry, stored next to the token (R-TOK-4).
  expires_at              timestamptz NOT NULL,
  -- Bumped on every replace: refreshes write only if the generation they read is still current.
  generation              bigint NOT NULL DEFAULT 1,
  last_refresh_attempt_at timestamptz,
  last_refresh_error      text,
  refresh_failures        integer NOT NULL DEFAULT 0,
  updated_at              timestamptz NOT NULL DEFAULT now()
);
-- The expiry sweep and the dashboard order by expiry; rotation looks rows up by key.
CREATE INDEX tokens_expires_at_idx ON tokens (expires_at);
CREATE INDEX tokens_key_id_idx ON tokens (key_id);

CREATE TABLE login_states (
  -- sha256 (hex) of the OAuth state: a database leak gives nothing to replay.
  state_hash     text PRIMARY KEY,
  created_at     timestamptz NOT NULL,
  expires_at     timestamptz NOT NULL,
  used_at        timestamptz,
  redirect_after text
);
CREATE INDEX login_states_expires_at_idx ON login_states (expires_at);

CREATE TABLE alerts_sent (
  account_id       text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  kind             text NOT NULL CHECK (kind IN ('expiry', 'reauth')),
  -- 14, 7, 3, 1 for expiry alerts; 0 for reauth alerts.
  threshold_days   integer NOT NULL CHECK (threshold_days >= 0),
  -- Part of the key: a refreshed token (new expiry) starts its thresholds afresh.
  token_expires_at timestamptz NOT NULL,
  sent_at          timestamptz NOT NULL,
  PRIMARY KEY (account_id, kind, threshold_days, token_expires_at)
);

CREATE TABLE token_events (
  id         bigserial PRIMARY KEY,
  -- No foreign key: the history of a removed account outlives it (its 'removed' event included).
  account_id text NOT NULL,
  kind       text NOT NULL CHECK (kind IN ('exchanged', 'refreshed', 'refresh_failed', 'expired',
                                           'reauth_required', 'imported', 'removed')),
  expires_at timestamptz,
  -- Redacted free text; never a token.
  detail     text,
  at         timestamptz NOT NULL
);
CREATE INDEX token_events_account_idx ON token_events (account_id, id);
