-- Billing through a card processor (decisions 0360 to 0362). The tenant keeps the processor's
-- references, the card's fingerprint and its payment standing; status stays the subscription's
-- lifecycle (trialing, active, cancelled) and standing says whether its payments are in order.
ALTER TABLE tenants
  ADD COLUMN payment_provider text NOT NULL DEFAULT 'local',
  ADD COLUMN payment_subscription_ref text,
  ADD COLUMN card_fingerprint text,
  ADD COLUMN standing text NOT NULL DEFAULT 'good'
    CHECK (standing IN ('good', 'past_due', 'suspended')),
  ADD COLUMN past_due_since timestamptz,
  ADD COLUMN next_charge_at timestamptz;

CREATE UNIQUE INDEX tenants_subscription_ref ON tenants (payment_subscription_ref)
  WHERE payment_subscription_ref IS NOT NULL;
CREATE INDEX tenants_past_due ON tenants (past_due_since) WHERE standing = 'past_due';

-- One trial per card: the fingerprint of every card that started a trial, or is starting one
-- (tenant_id still null). The primary key is the rule; a claim is taken before the processor
-- is asked to set the card up, so two sign-ups with one card cannot both pass.
CREATE TABLE trial_cards (
  fingerprint text PRIMARY KEY,
  tenant_id text REFERENCES tenants (id),
  claimed_at timestamptz NOT NULL
);

-- The processor's events already applied, by the processor's event id: each is applied once.
CREATE TABLE billing_events (
  id text PRIMARY KEY,
  type text NOT NULL,
  tenant_id text REFERENCES tenants (id),
  received_at timestamptz NOT NULL
);
