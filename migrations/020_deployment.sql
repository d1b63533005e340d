-- compatible-with: 018_compact_posts_and_copies.sql
-- 020: this deployment's id, kept once, and what may prove that a storage without a deployment
-- marker is this deployment's own (R-DEL-1). The marker object feedmirror/deployment.json in
-- storage carries the id; nothing is deleted from a storage whose marker is missing or another's.

CREATE TABLE IF NOT EXISTS deployment (
  -- One row: the table holds this deployment's identity and nothing else.
  singleton      boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  id             text NOT NULL CHECK (id ~ '^[A-Za-z0-9_-]{8,128}$'),
  created_at     timestamptz NOT NULL DEFAULT now(),
  -- The feeds published before this migration ran (the most recent 50 that were not the demo):
  -- an upgraded deployment's storage holds them as recorded (their content hash), so finding one
  -- there, its record unchanged since, proves the storage is this deployment's, and the first
  -- start writes the marker. Feeds published after this moment prove nothing: this version may
  -- have written them into any storage STORAGE_URL named.
  claim_evidence jsonb NOT NULL DEFAULT '[]'::jsonb
);

INSERT INTO deployment (id, claim_evidence)
SELECT md5(random()::text || clock_timestamp()::text || pg_backend_pid()::text),
       COALESCE(
         (SELECT jsonb_agg(jsonb_build_object('accountId', p.account_id, 'feedHash', p.feed_hash,
                                              'publishedAt', p.published_at) ORDER BY p.published_at DESC)
            FROM (SELECT account_id, feed_hash, published_at FROM feed_publications
                   WHERE NOT demo ORDER BY published_at DESC LIMIT 50) p),
         '[]'::jsonb)
ON CONFLICT (singleton) DO NOTHING;
