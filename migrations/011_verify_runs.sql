-- 011: the outcome of each `feedmirror verify` (the command, or the worker's daily run), so the
-- health and `doctor` can show when the stores last agreed and what was wrong. Never edit once
-- released: add a new migration instead.
CREATE TABLE verify_runs (
  id          bigserial PRIMARY KEY,
  -- 'cli' (feedmirror verify) or 'worker' (the daily run).
  trigger     text NOT NULL CHECK (trigger IN ('cli', 'worker')),
  -- NULL: every account; otherwise the one account checked (--account).
  account_id  text,
  repair      boolean NOT NULL,
  started_at  timestamptz NOT NULL,
  finished_at timestamptz NOT NULL,
  -- true when nothing was wrong at the end (after the repair, when there was one).
  ok          boolean NOT NULL,
  -- What was checked: {"accounts": n, "feeds": n, "objects": n, ...}.
  counts      jsonb NOT NULL,
  -- What was still wrong at the end: [{kind, accountId, key, detail}], the first 200.
  problems    jsonb NOT NULL DEFAULT '[]',
  problem_count integer NOT NULL CHECK (problem_count >= 0),
  -- What the repair did: [{kind, accountId, key, detail}], the first 200.
  repaired    jsonb NOT NULL DEFAULT '[]'
);
CREATE INDEX verify_runs_finished_idx ON verify_runs (finished_at DESC);
