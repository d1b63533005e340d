-- Outgoing webhooks: endpoints the operator registers, and one row per delivery of
-- one event to one endpoint (the delivery log). Redis only carries the delivery jobs; a lost
-- queue is rebuilt from the pending rows here.
CREATE TABLE webhook_endpoints (
  id             text PRIMARY KEY CHECK (id ~ '^wh_[a-z0-9]{8,32}$'),
  url            text NOT NULL CHECK (url ~ '^https?://'),
  -- Events it receives; empty = all of them.
  events         text[] NOT NULL DEFAULT '{}',
  description    text NOT NULL DEFAULT '',
  -- The signing secret, AES-256-GCM under TOKEN_ENCRYPTION_KEY (as tokens), bound to the id.
  secret_key_id  text NOT NULL,
  secret         bytea NOT NULL,
  -- During a rotation the previous secret signs too, until previous_valid_until.
  previous_key_id      text,
  previous_secret      bytea,
  previous_valid_until timestamptz,
  created_at     timestamptz NOT NULL
);

CREATE TABLE webhook_deliveries (
  id            bigserial PRIMARY KEY,
  endpoint_id   text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  -- One event delivered to several endpoints shares its event id.
  event_id      text NOT NULL,
  event_type    text NOT NULL,
  -- The exact JSON body sent (signed as is).
  body          text NOT NULL,
  status        text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts      integer NOT NULL DEFAULT 0,
  last_http_status integer,
  last_error    text,
  created_at    timestamptz NOT NULL,
  last_attempt_at timestamptz,
  delivered_at  timestamptz,
  UNIQUE (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id DESC);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (id) WHERE status = 'pending';

-- What each published feed held, per post id: its content hash, so feed.updated can name the
-- posts added, changed and removed since the previous publication.
ALTER TABLE feed_publications ADD COLUMN post_hashes jsonb;
