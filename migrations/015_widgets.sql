-- 015: widgets, configured in the dashboard or the CLI and embedded by id: which accounts they
-- merge (an account's removal takes it out of every widget), their layout and options, the posts
-- an operator hid (by post id, so a hidden post stays hidden through re-syncs and reconnects),
-- what was last published, and the views counted per day. Never edit once released.

CREATE TABLE widgets (
  -- w_ and ten characters of base32: public (it is in every embed), never a secret.
  id           text PRIMARY KEY CHECK (id ~ '^w_[a-z2-7]{10}$'),
  name         text NOT NULL CHECK (name <> '' AND length(name) <= 100),
  layout       text NOT NULL CHECK (layout IN ('grid', 'list', 'carousel', 'masonry')),
  -- Validated by src/widgets/document.ts (widgetOptionsSchema) before it is written.
  options      jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at   timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL,
  -- The content hash of the published document (generatedAt left out): an unchanged widget is
  -- not written again. NULL until first published.
  published_hash text,
  published_at   timestamptz,
  -- The accounts the published document shows: a removed account's widgets are found (and
  -- republished without it) after its widget_accounts rows went with it.
  published_accounts text[] NOT NULL DEFAULT '{}'
);

CREATE TABLE widget_accounts (
  widget_id  text NOT NULL REFERENCES widgets (id) ON DELETE CASCADE,
  account_id text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  position   integer NOT NULL CHECK (position >= 0),
  PRIMARY KEY (widget_id, account_id)
);
CREATE INDEX widget_accounts_account ON widget_accounts (account_id);
CREATE INDEX widgets_published_accounts ON widgets USING gin (published_accounts);

-- No reference to accounts: a hidden post stays hidden when its account is removed and connected again.
CREATE TABLE widget_hidden_posts (
  widget_id  text NOT NULL REFERENCES widgets (id) ON DELETE CASCADE,
  post_id    text NOT NULL CHECK (post_id ~ '^[A-Za-z0-9_-]{1,128}$'),
  hidden_at  timestamptz NOT NULL,
  PRIMARY KEY (widget_id, post_id)
);

-- Views per widget and day (UTC), counted by serve without cookies or anything about the viewer.
CREATE TABLE widget_views (
  widget_id text NOT NULL REFERENCES widgets (id) ON DELETE CASCADE,
  day       date NOT NULL,
  count     bigint NOT NULL DEFAULT 0 CHECK (count >= 0),
  PRIMARY KEY (widget_id, day)
);
