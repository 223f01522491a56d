import { TIERS } from "@th/billing";
import { contracts, type Tier } from "@th/contracts";
import { inTransaction, type PoolClient } from "@th/db";
import { ApiError, enqueueEvent } from "@th/service-kit";
import { newId } from "../domain/ids.ts";
import { hashPassword } from "../domain/passwords.ts";
import type { CardVerification, ChargeResult } from "../domain/payment-provider.ts";
import { type TenantRow, tenantChangedEvent, tenantView } from "../domain/tenants.ts";
import { firstMonthCharge, statusAfterTrial, trialEndsAt } from "../domain/trials.ts";
import { insertPasswordToken } from "./credentials.ts";
import { insertKey } from "./keys.ts";
import { type AccountsDeps, bumpTenant, loadTenant } from "./tenant-rows.ts";

export interface TrialInput {
  tier: Tier;
  company: string;
  admin_email: string;
  payment_method: string;
  admin_password?: string | undefined;
}

type VerifiedCard = Extract<CardVerification, { ok: true }>;

async function insertTrialTenant(
  client: PoolClient,
  input: TrialInput,
  card: VerifiedCard,
  activatedAt: Date,
): Promise<TenantRow> {
  const limits = TIERS[input.tier].limits;
  const { rows } = await client.query<TenantRow>(
    `INSERT INTO tenants (id, company, tier, status, seats, lead_views_per_month, rate_per_minute,
       concurrent_webhooks, payment_customer_ref, card_brand, card_last4, activated_at, trial_ends_at)
     VALUES ($1, $2, $3, 'trialing', $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING *`,
    [
      newId("ten"),
      input.company,
      input.tier,
      limits.seats,
      limits.lead_views_per_month,
      limits.rate_per_minute,
      limits.concurrent_webhooks,
      card.customerRef,
      card.brand,
      card.last4,
      activatedAt,
      trialEndsAt(activatedAt),
    ],
  );
  return rows[0] as TenantRow;
}

async function insertFirstAdmin(
  client: PoolClient,
  tenantId: string,
  email: string,
  passwordHash: string | null,
  createdAt: Date,
): Promise<string> {
  const memberId = newId("mem");
  await client.query(
    `INSERT INTO members (id, tenant_id, email, role, created_at, password_hash, password_set_at)
     VALUES ($1, $2, $3, 'admin', $4, $5, $6)`,
    [memberId, tenantId, email, createdAt, passwordHash, passwordHash ? createdAt : null],
  );
  return memberId;
}

/** Records the first month's charge and its outcome; false when the trial was already settled. */
async function settleTrial(
  deps: AccountsDeps,
  client: PoolClient,
  tenant: TenantRow,
  result: ChargeResult,
): Promise<boolean> {
  const current = await loadTenant(client, tenant.id, true);
  if (current.status !== "trialing") {
    return false;
  }
  const charge = firstMonthCharge(tenant);
  await client.query(
    `INSERT INTO charges (id, tenant_id, amount_cents, period_start, status, provider_ref)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, period_start) DO NOTHING`,
    [
      newId("chg"),
      tenant.id,
      charge.amountCents,
      charge.periodStart,
      result.ok ? "succeeded" : "failed",
      result.ok ? result.providerRef : null,
    ],
  );
  const status = statusAfterTrial(result.ok);
  await client.query("UPDATE tenants SET status = $2 WHERE id = $1", [tenant.id, status]);
  await bumpTenant(client, { ...current, status }, deps.now);
  return true;
}

/** Trials: starting one with a verified card, and converting the ones that ended. */
export function createTrials(deps: AccountsDeps) {
  const { pool, payments, now } = deps;

  return {
    /**
     * Starts a 14-day trial: the card is verified (not charged), and tenant, first admin and
     * first key are created together. A declined card creates nothing.
     */
    async startTrial(input: TrialInput) {
      const passwordHash = input.admin_password ? await hashPassword(input.admin_password) : null;
      const card = await payments.verifyCard(input.payment_method, {
        email: input.admin_email,
        company: input.company,
      });
      if (!card.ok) {
        throw new ApiError("payment_declined", `payment method refused: ${card.reason}`);
      }
      const activatedAt = now();
      return inTransaction(pool, async (client) => {
        const tenant = await insertTrialTenant(client, input, card, activatedAt);
        const memberId = await insertFirstAdmin(
          client,
          tenant.id,
          input.admin_email,
          passwordHash,
          activatedAt,
        );
        await enqueueEvent(
          client,
          contracts.tenantChanged,
          tenantChangedEvent(tenant, activatedAt),
        );
        const apiKey = await insertKey(deps, client, tenant.id, memberId, "first key");
        const passwordSetup = passwordHash
          ? null
          : await insertPasswordToken(deps, client, tenant.id, memberId, "trial", null);
        return {
          tenant: tenantView(tenant),
          member: {
            id: memberId,
            email: input.admin_email,
            role: "admin" as const,
            created_at: activatedAt.toISOString(),
          },
          api_key: apiKey,
          password_setup: passwordSetup,
        };
      });
    },

    /**
     * Day 14: each trial that ended is charged its first month. Success makes it active; a
     * failed charge cancels it. The charge row's unique (tenant, period) makes this safe to run
     * on every replica and to repeat.
     */
    async convertEndedTrials(): Promise<{ activated: string[]; cancelled: string[] }> {
      const { rows } = await pool.query<TenantRow>(
        "SELECT * FROM tenants WHERE status = 'trialing' AND trial_ends_at <= $1 ORDER BY trial_ends_at",
        [now()],
      );
      const activated: string[] = [];
      const cancelled: string[] = [];
      for (const tenant of rows) {
        const charge = firstMonthCharge(tenant);
        const result = await payments.charge({
          customerRef: tenant.payment_customer_ref,
          amountCents: charge.amountCents,
          idempotencyKey: charge.idempotencyKey,
        });
        if (await inTransaction(pool, (client) => settleTrial(deps, client, tenant, result))) {
          (result.ok ? activated : cancelled).push(tenant.id);
        }
      }
      return { activated, cancelled };
    },
  };
}
