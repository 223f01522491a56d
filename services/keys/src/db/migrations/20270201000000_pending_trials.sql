-- Trials whose card asks for authentication (3-D Secure): the processor holds a SetupIntent the
-- customer's browser must complete. Nothing else exists yet: no tenant, member or key. The row
-- keeps what the sign-up form gave, so the confirmation can activate the trial; the client
-- secret is kept only as its SHA-256, compared with the one the browser sends back. The card's
-- claim in trial_cards is held meanwhile (claimed_at names which claim is this trial's).
CREATE TABLE pending_trials (
  setup_intent_ref text PRIMARY KEY,
  client_secret_sha256 text NOT NULL,
  tenant_id text NOT NULL UNIQUE,
  tier text NOT NULL,
  company text NOT NULL,
  admin_email text NOT NULL,
  password_hash text,
  payment_method text NOT NULL,
  customer_ref text NOT NULL,
  card_fingerprint text NOT NULL,
  card_brand text NOT NULL,
  card_last4 text NOT NULL,
  card_claimed_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL,
  activated_at timestamptz
);
