-- 014: what keeps a listing that never ends from spending an account's hourly budget, and the
-- operator's sync requests kept where a Redis restart cannot lose them.

ALTER TABLE accounts
  -- Items (duplicates included) of the account's last complete listing: a listing that reads
  -- more than twice this plus 100 (doubled for each runaway in a row, never past the ceiling
  -- LISTING_MAX_ITEMS) while the platform still offers a next page is stopped as a runaway.
  ADD COLUMN listing_items_last_complete integer CHECK (listing_items_last_complete >= 0),
  -- Listings stopped as runaways since the last complete one.
  ADD COLUMN listing_runaways integer NOT NULL DEFAULT 0 CHECK (listing_runaways >= 0),
  -- Until then the account's scheduled syncs do not list (an operator's sync still does).
  ADD COLUMN listing_paused_until timestamptz;

-- A sync the operator asked for (`feedmirror sync`, the dashboard's button) until it has run: the
-- reconciler queues it again under the same job id when Redis no longer has it.
CREATE TABLE sync_requests (
  account_id   text PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
  job_id       text NOT NULL CHECK (job_id <> ''),
  requested_at timestamptz NOT NULL,
  requested_by text NOT NULL CHECK (requested_by IN ('cli', 'dashboard'))
);
