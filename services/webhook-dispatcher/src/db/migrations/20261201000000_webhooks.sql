-- Tenants as last seen on tenant.changed (highest revision wins): tier, status, quota cap,
-- billing anniversary and the concurrent-webhooks figure.
CREATE TABLE tenants (
  tenant_id text PRIMARY KEY,
  revision bigint NOT NULL,
  tier text NOT NULL,
  status text NOT NULL,
  lead_views_per_month integer NOT NULL,
  concurrent_webhooks integer NOT NULL,
  billing_anniversary date,
  changed_at timestamptz NOT NULL
);

CREATE TABLE endpoints (
  id text PRIMARY KEY,
  tenant_id text NOT NULL,
  watchlist_id text NOT NULL,
  url text NOT NULL,
  events text[] NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz
);
CREATE INDEX endpoints_by_watchlist ON endpoints (tenant_id, watchlist_id) WHERE deleted_at IS NULL;

-- Signing secrets, AES-256-GCM encrypted; key_id names the key of SECRET_KEYS that sealed it.
-- A secret signs while retires_at is null or in the future.
CREATE TABLE endpoint_secrets (
  id bigserial PRIMARY KEY,
  endpoint_id text NOT NULL REFERENCES endpoints (id),
  key_id text NOT NULL,
  nonce bytea NOT NULL,
  sealed bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  retires_at timestamptz
);
CREATE INDEX endpoint_secrets_by_endpoint ON endpoint_secrets (endpoint_id, id DESC);

-- One row per (endpoint, match). The id is the X-FLPF-Webhook-Id, the body is fixed at creation.
-- state: pending (due at due_at) | retrying (waiting on its retry topic) | exhausted (5th attempt
-- failed; dead-lettered at due_at) | parked (quota, tier or unknown tenant; released on reset
-- or tenant.changed) | complete | dead_letter.
CREATE TABLE deliveries (
  id uuid PRIMARY KEY,
  endpoint_id text NOT NULL,
  tenant_id text NOT NULL,
  watchlist_id text NOT NULL,
  match_id text NOT NULL,
  folio text NOT NULL,
  event_type text NOT NULL,
  body text NOT NULL,
  state text NOT NULL DEFAULT 'pending',
  attempts integer NOT NULL DEFAULT 0,
  replay_no integer NOT NULL DEFAULT 0,
  due_at timestamptz NOT NULL DEFAULT now(),
  charged_at timestamptz,
  parked_reason text,
  lease_token uuid,
  lease_until timestamptz,
  first_attempted_at timestamptz,
  last_attempted_at timestamptz,
  last_status_code integer,
  last_failure text,
  last_error text,
  completed_at timestamptz,
  dead_lettered_at timestamptz,
  dead_letter_reason text,
  hold_until timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (endpoint_id, match_id)
);
CREATE INDEX deliveries_due ON deliveries (due_at)
  WHERE state IN ('pending', 'retrying', 'exhausted', 'parked');
CREATE INDEX deliveries_by_endpoint ON deliveries (endpoint_id, created_at DESC, id);
CREATE INDEX deliveries_parked ON deliveries (tenant_id) WHERE state = 'parked';

CREATE TABLE attempts (
  delivery_id uuid NOT NULL,
  replay_no integer NOT NULL,
  attempt integer NOT NULL,
  attempted_at timestamptz NOT NULL,
  duration_ms integer,
  status_code integer,
  failure text,
  error text,
  response_excerpt text,
  state text NOT NULL,
  PRIMARY KEY (delivery_id, replay_no, attempt)
);
