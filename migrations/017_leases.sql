-- 017: leases, for work that one process of the cluster does at a time (the schedule reconciler).
-- A session-level advisory lock stops excluding anything behind a transaction pooler (PgBouncer in
-- transaction mode hands each statement to any server connection); a row does not.

CREATE TABLE IF NOT EXISTS leases (
  -- What is leased, e.g. 'feedmirror:reconcile'.
  name       text PRIMARY KEY CHECK (name <> ''),
  -- Who holds it (host, process id and a random part), or held it last.
  holder     text NOT NULL CHECK (holder <> ''),
  -- The fencing token: one more each time the lease changes hands (or is taken again after it
  -- lapsed), never reset, so work started under an older token can be told apart.
  fence      bigint NOT NULL CHECK (fence >= 1),
  -- The lease is free from then on unless its holder renews it; a release sets it to now.
  expires_at timestamptz NOT NULL
);
