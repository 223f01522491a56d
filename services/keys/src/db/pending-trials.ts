import { createHash, timingSafeEqual } from "node:crypto";
import type { Tier } from "@th/contracts";
import type { Pool, PoolClient } from "@th/db";
import type { CardFacts } from "../domain/payment-provider.ts";

/** A trial waiting for its card's authentication (3-D Secure) to be completed in the browser. */
export interface PendingTrialRow {
  setup_intent_ref: string;
  client_secret_sha256: string;
  tenant_id: string;
  tier: Tier;
  company: string;
  admin_email: string;
  password_hash: string | null;
  payment_method: string;
  customer_ref: string;
  card_fingerprint: string;
  card_brand: string;
  card_last4: string;
  card_claimed_at: Date;
  created_at: Date;
  activated_at: Date | null;
}

export interface PendingTrialInput {
  setupIntentRef: string;
  clientSecret: string;
  tenantId: string;
  tier: Tier;
  company: string;
  adminEmail: string;
  passwordHash: string | null;
  paymentMethod: string;
  customerRef: string;
  card: CardFacts;
  cardClaimedAt: Date;
  createdAt: Date;
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** Stripe's client secret names its SetupIntent: `seti_…_secret_…`. */
const SETUP_CLIENT_SECRET = /^(seti_[A-Za-z0-9]+)_secret_[A-Za-z0-9]+$/;

export async function insertPendingTrial(pool: Pool, input: PendingTrialInput): Promise<void> {
  await pool.query(
    `INSERT INTO pending_trials (setup_intent_ref, client_secret_sha256, tenant_id, tier, company,
       admin_email, password_hash, payment_method, customer_ref, card_fingerprint, card_brand,
       card_last4, card_claimed_at, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
    [
      input.setupIntentRef,
      sha256(input.clientSecret),
      input.tenantId,
      input.tier,
      input.company,
      input.adminEmail,
      input.passwordHash,
      input.paymentMethod,
      input.customerRef,
      input.card.fingerprint,
      input.card.brand,
      input.card.last4,
      input.cardClaimedAt,
      input.createdAt,
    ],
  );
}

/**
 * The pending trial a client secret belongs to, or null. The secret is the credential: only the
 * browser that started the sign-up was given it, so knowing a SetupIntent id is not enough. The
 * stored digest is compared in constant time.
 */
export async function findPendingTrial(
  db: Pool | PoolClient,
  clientSecret: string,
  forUpdate = false,
): Promise<PendingTrialRow | null> {
  const ref = SETUP_CLIENT_SECRET.exec(clientSecret)?.[1];
  if (!ref) {
    return null;
  }
  const { rows } = await db.query<PendingTrialRow>(
    `SELECT * FROM pending_trials WHERE setup_intent_ref = $1${forUpdate ? " FOR UPDATE" : ""}`,
    [ref],
  );
  const row = rows[0];
  if (!row) {
    return null;
  }
  const given = Buffer.from(sha256(clientSecret), "hex");
  const held = Buffer.from(row.client_secret_sha256, "hex");
  return given.length === held.length && timingSafeEqual(given, held) ? row : null;
}

/**
 * Whether the card's claim is still this pending trial's, locked until the activating
 * transaction ends. False when it lapsed and another sign-up took the card over.
 */
export async function holdsCardClaim(client: PoolClient, row: PendingTrialRow): Promise<boolean> {
  const { rowCount } = await client.query(
    `SELECT 1 FROM trial_cards
     WHERE fingerprint = $1 AND tenant_id IS NULL AND claimed_at = $2 FOR UPDATE`,
    [row.card_fingerprint, row.card_claimed_at],
  );
  return (rowCount ?? 0) > 0;
}

export async function markPendingTrialActivated(
  client: PoolClient,
  row: PendingTrialRow,
  activatedAt: Date,
): Promise<void> {
  await client.query("UPDATE pending_trials SET activated_at = $2 WHERE setup_intent_ref = $1", [
    row.setup_intent_ref,
    activatedAt,
  ]);
}
