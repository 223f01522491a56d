-- A tenant's stages, in board order. A retired stage takes no new items and keeps its items.
CREATE TABLE stages (
  tenant_id text NOT NULL,
  id text NOT NULL,
  name text NOT NULL,
  position integer NOT NULL,
  retired boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
-- Two live stages may not share a name, whatever its case.
CREATE UNIQUE INDEX stages_live_name ON stages (tenant_id, lower(name)) WHERE NOT retired;

-- The current state of each item: the fold of its events in item_events, written in the same
-- transaction as each event, so reads need not fold.
CREATE TABLE items (
  tenant_id text NOT NULL,
  id text NOT NULL,
  folio text NOT NULL,
  stage_id text NOT NULL,
  assignee_id text,
  tags text[] NOT NULL DEFAULT '{}',
  follow_up_on date,
  notes_count integer NOT NULL DEFAULT 0,
  version integer NOT NULL,
  added_by text NOT NULL,
  added_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  -- What the list shows of the lead, taken from the snapshot when the item was added.
  lead jsonb NOT NULL,
  -- The whole lead as read when added, kept as the text the gateway sent.
  snapshot text NOT NULL,
  -- Folio, address and owner in lower case, for the listing's text search.
  search_text text NOT NULL,
  PRIMARY KEY (tenant_id, id),
  -- A folio appears at most once in a tenant's pipeline.
  UNIQUE (tenant_id, folio),
  FOREIGN KEY (tenant_id, stage_id) REFERENCES stages (tenant_id, id)
);
-- The board and the list: a stage's column, newest change first (the default sort).
CREATE INDEX items_by_stage ON items (tenant_id, stage_id, updated_at DESC, id DESC);
CREATE INDEX items_by_update ON items (tenant_id, updated_at DESC, id DESC);
CREATE INDEX items_by_added ON items (tenant_id, added_at DESC, id DESC);
CREATE INDEX items_by_assignee ON items (tenant_id, assignee_id, updated_at DESC, id DESC);
CREATE INDEX items_by_follow_up ON items (tenant_id, follow_up_on, id) WHERE follow_up_on IS NOT NULL;
CREATE INDEX items_by_tag ON items USING gin (tags);

-- Every change of every item, as published on pipeline.item-changed: an item's history. Rows
-- stay when the item is removed, so a removal keeps its record.
CREATE TABLE item_events (
  tenant_id text NOT NULL,
  item_id text NOT NULL,
  version integer NOT NULL,
  event_id text NOT NULL UNIQUE,
  type text NOT NULL,
  occurred_at timestamptz NOT NULL,
  -- The event as published (the PipelineItemChanged record), without the lead snapshot, which
  -- the item keeps.
  event jsonb NOT NULL,
  PRIMARY KEY (tenant_id, item_id, version)
);
