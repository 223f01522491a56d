-- Dashboard sign-in: a member's password as an scrypt hash, and one-time tokens that let a member
-- set it (the trial's first admin, an invited member, a reset by an admin). Tokens are stored as
-- SHA-256 hashes; the token itself exists only in the response that issues it.
ALTER TABLE members ADD COLUMN password_hash text;
ALTER TABLE members ADD COLUMN password_set_at timestamptz;
CREATE INDEX members_active_email_any_tenant ON members (lower(email)) WHERE removed_at IS NULL;

CREATE TABLE password_tokens (
  token_hash text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id),
  member_id text NOT NULL REFERENCES members (id),
  purpose text NOT NULL CHECK (purpose IN ('trial', 'invite', 'reset')),
  created_by text,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX password_tokens_member ON password_tokens (member_id) WHERE used_at IS NULL;
