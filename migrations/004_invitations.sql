-- Connecting by invitation: the operator creates a one-time, expiring link for an account owner
-- (dashboard or `feedmirror accounts invite`). Only a sha256 of each invitation is stored.
CREATE TABLE invitations (
  token_hash  text PRIMARY KEY,
  created_at  timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  -- Set when a login started from it connected an account: the link works once.
  used_at     timestamptz,
  -- 'dashboard' or 'cli': where it was made.
  created_by  text NOT NULL
);
CREATE INDEX invitations_expires_at_idx ON invitations (expires_at);

-- The invitation a login was started from (NULL: the dashboard or open self-service).
ALTER TABLE login_states ADD COLUMN invitation_hash text;
