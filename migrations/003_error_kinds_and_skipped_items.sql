-- 003: every recorded error keeps its kind (src/util/error-kinds.ts), and each account records
-- the items its last sync skipped. Never edit once released: add a new migration instead.

ALTER TABLE accounts
  -- The kind of status_reason (why the account waits for its owner) and of last_sync_error.
  ADD COLUMN status_reason_kind   text,
  ADD COLUMN last_sync_error_kind text,
  -- Items of the last sync that could not be used (malformed id, no timestamp, unknown type, a
  -- broken child...): skipped, the rest published. The last reasons: [{id, reason}], at most 20.
  ADD COLUMN skipped_items        integer NOT NULL DEFAULT 0 CHECK (skipped_items >= 0),
  ADD COLUMN skipped_reasons      jsonb NOT NULL DEFAULT '[]';

ALTER TABLE tokens ADD COLUMN last_refresh_error_kind text;
ALTER TABLE token_events ADD COLUMN error_kind text;

-- 'disabled' was never set by anything: the lifecycle knows active and reauth_required only.
UPDATE accounts SET status = 'reauth_required' WHERE status = 'disabled';
ALTER TABLE accounts DROP CONSTRAINT accounts_status_check;
ALTER TABLE accounts ADD CONSTRAINT accounts_status_check CHECK (status IN ('active', 'reauth_required'));
