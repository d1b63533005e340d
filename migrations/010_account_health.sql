-- 010: what an account's health needs that nothing recorded before: the copies that fail (per
-- image slot, cleared when the copy succeeds), how the last sync ended and when a listing last
-- read to its end, and which account each webhook delivery is about. Never edit once released.

-- One row per image slot whose copy is failing: the mirror-media job and `sync --wait` record
-- each failed attempt; saving the copy deletes the row. A row whose post is no longer stored is
-- ignored by the health (the post was pruned) and goes with its account.
CREATE TABLE media_copy_failures (
  account_id       text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  media_id         text NOT NULL,
  slot             text NOT NULL,
  -- src/util/error-kinds.ts; the text is redacted and cut to 500 characters.
  error_kind       text NOT NULL,
  error            text NOT NULL,
  attempts         integer NOT NULL DEFAULT 1 CHECK (attempts > 0),
  -- false while the job still has retries left; true once it gave up (the next sync tries again).
  gave_up          boolean NOT NULL DEFAULT false,
  first_failed_at  timestamptz NOT NULL,
  last_failed_at   timestamptz NOT NULL,
  PRIMARY KEY (account_id, media_id, slot)
);

ALTER TABLE accounts
  -- 'complete' (the listing reached its end), 'incomplete' (it stopped early: nothing pruned),
  -- 'failed' (nothing read); NULL before the first sync or for rows synced before this migration.
  ADD COLUMN last_sync_outcome text CHECK (last_sync_outcome IN ('complete', 'incomplete', 'failed')),
  -- The last listing read to its end: what the published feed is as fresh as.
  ADD COLUMN last_complete_sync_at timestamptz;
UPDATE accounts SET last_sync_outcome = CASE WHEN last_sync_error IS NULL THEN 'complete' ELSE 'failed' END,
                    last_complete_sync_at = CASE WHEN last_sync_error IS NULL THEN last_sync_at END
 WHERE last_sync_at IS NOT NULL;

-- The account an event is about (data.accountId of its body): the account's health and page list
-- the deliveries of its events without parsing every body.
ALTER TABLE webhook_deliveries ADD COLUMN account_id text;
UPDATE webhook_deliveries SET account_id = (body::jsonb) -> 'data' ->> 'accountId';
CREATE INDEX webhook_deliveries_account ON webhook_deliveries (account_id, id DESC) WHERE account_id IS NOT NULL;

-- The last syncs of each account (its page lists them): when, how it ended, why not, and how many
-- posts the listing held. markSynced writes a row and keeps the latest 20 per account.
CREATE TABLE sync_runs (
  id          bigserial PRIMARY KEY,
  account_id  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  at          timestamptz NOT NULL,
  outcome     text NOT NULL CHECK (outcome IN ('complete', 'incomplete', 'failed')),
  error_kind  text,
  -- Redacted, at most 500 characters.
  error       text,
  posts       integer CHECK (posts >= 0),
  skipped     integer CHECK (skipped >= 0)
);
CREATE INDEX sync_runs_account ON sync_runs (account_id, id DESC);
