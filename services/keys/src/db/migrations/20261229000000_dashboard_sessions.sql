-- Dashboard sessions kept by the keys service (decision 0337). A member's session epoch rises
-- when their password is changed or reset; tokens of an older epoch stop working. A session is
-- one sign-in: its refresh tokens rotate on every refresh and each is stored as a SHA-256 hash,
-- so presenting one that was already used is seen, and ends the whole session.
ALTER TABLE members ADD COLUMN session_epoch integer NOT NULL DEFAULT 0;

CREATE TABLE dashboard_sessions (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id),
  member_id text NOT NULL REFERENCES members (id),
  epoch integer NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  ended_at timestamptz,
  end_reason text CHECK (end_reason IN ('sign_out', 'password', 'reuse'))
);
CREATE INDEX dashboard_sessions_member ON dashboard_sessions (member_id, expires_at);

CREATE TABLE dashboard_refresh_tokens (
  token_hash text PRIMARY KEY,
  session_id text NOT NULL REFERENCES dashboard_sessions (id) ON DELETE CASCADE,
  issued_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX dashboard_refresh_tokens_session ON dashboard_refresh_tokens (session_id);
