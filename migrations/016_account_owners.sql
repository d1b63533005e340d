-- 016: the owner of each account (who is told when their connection needs them), the one-time
-- reconnect links sent to owners, and which recipient an alert went to.

ALTER TABLE accounts
  -- The owner's contact: set at connect time (from the invitation), from the dashboard or with
  -- `feedmirror accounts set`. NULL: no owner known, alerts go to the operator only.
  ADD COLUMN IF NOT EXISTS owner_name text CHECK (owner_name IS NULL OR length(owner_name) BETWEEN 1 AND 200),
  ADD COLUMN IF NOT EXISTS owner_email text CHECK (owner_email IS NULL OR length(owner_email) BETWEEN 3 AND 254),
  -- Only 'en' for now; kept so an owner's language survives when more are offered.
  ADD COLUMN IF NOT EXISTS owner_language text CHECK (owner_language IS NULL OR owner_language ~ '^[a-z]{2}(-[A-Z]{2})?$'),
  -- Whether this account's owner gets alerts (with OWNER_ALERTS=on for the deployment).
  ADD COLUMN IF NOT EXISTS owner_alerts boolean NOT NULL DEFAULT true;

-- An invitation may carry the owner of the account it will connect.
ALTER TABLE invitations
  ADD COLUMN IF NOT EXISTS owner_name text,
  ADD COLUMN IF NOT EXISTS owner_email text,
  ADD COLUMN IF NOT EXISTS owner_language text;

-- One-time reconnect links, each bound to one account: only a sha256 of the link's token is
-- stored. A new link for an account revokes the ones before it; a link is used by the login it
-- starts only when that login connects the same account.
CREATE TABLE IF NOT EXISTS reconnect_links (
  token_hash  text PRIMARY KEY,
  account_id  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  -- 'expiry' or 'reauth': the alert that sent it.
  reason      text NOT NULL CHECK (reason IN ('expiry', 'reauth')),
  created_at  timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz,
  revoked_at  timestamptz
);
CREATE INDEX IF NOT EXISTS reconnect_links_account_idx ON reconnect_links (account_id);
CREATE INDEX IF NOT EXISTS reconnect_links_expires_at_idx ON reconnect_links (expires_at);

-- The reconnect link a login was started from (NULL: an invitation, the dashboard or self-service).
ALTER TABLE login_states ADD COLUMN IF NOT EXISTS reconnect_hash text;

-- Alerts are claimed per recipient: the owner's copy of a threshold is claimed (and retried) on
-- its own, so neither recipient is emailed twice for one threshold and token life.
ALTER TABLE alerts_sent
  ADD COLUMN IF NOT EXISTS recipient text NOT NULL DEFAULT 'operator' CHECK (recipient IN ('operator', 'owner'));
ALTER TABLE alerts_sent DROP CONSTRAINT IF EXISTS alerts_sent_pkey;
ALTER TABLE alerts_sent ADD PRIMARY KEY (account_id, kind, threshold_days, token_expires_at, recipient);
