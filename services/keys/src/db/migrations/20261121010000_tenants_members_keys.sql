CREATE TABLE tenants (
  id text PRIMARY KEY,
  company text NOT NULL,
  tier text NOT NULL CHECK (tier IN ('starter', 'operator', 'team', 'custom')),
  status text NOT NULL CHECK (status IN ('trialing', 'active', 'past_due', 'cancelled')),
  seats int NOT NULL,
  lead_views_per_month int NOT NULL,
  rate_per_minute int NOT NULL,
  concurrent_webhooks int NOT NULL,
  payment_customer_ref text NOT NULL,
  card_brand text,
  card_last4 text,
  activated_at timestamptz NOT NULL,
  trial_ends_at timestamptz NOT NULL,
  cancelled_at timestamptz,
  revision int NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE members (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id),
  email text NOT NULL,
  role text NOT NULL CHECK (role IN ('admin', 'member')),
  created_at timestamptz NOT NULL DEFAULT now(),
  removed_at timestamptz
);
CREATE UNIQUE INDEX members_active_email ON members (tenant_id, lower(email)) WHERE removed_at IS NULL;

CREATE TABLE api_keys (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id),
  member_id text NOT NULL REFERENCES members (id),
  label text NOT NULL,
  key_hash text NOT NULL UNIQUE,
  last4 text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz,
  revoked_by text,
  revoke_reason text
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id, created_at);

CREATE TABLE charges (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id),
  amount_cents int NOT NULL,
  period_start timestamptz NOT NULL,
  status text NOT NULL CHECK (status IN ('succeeded', 'failed')),
  provider_ref text,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, period_start)
);

CREATE TABLE contact_requests (
  id text PRIMARY KEY,
  name text NOT NULL,
  email text NOT NULL,
  company text,
  message text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
