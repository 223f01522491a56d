-- The outbox as the services' own copies of its migrations left it, now kept by service-kit
-- (decision 0395). Every statement checks what exists: a schema whose earlier migrations made
-- the outbox keeps it unchanged, and a schema without one gets it here.
CREATE TABLE IF NOT EXISTS outbox (
  id bigserial PRIMARY KEY,
  topic text NOT NULL,
  payload jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz,
  headers jsonb,
  shard smallint NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS outbox_unpublished ON outbox (id) WHERE published_at IS NULL;
CREATE INDEX IF NOT EXISTS outbox_unpublished_by_shard ON outbox (shard, id)
  WHERE published_at IS NULL;
