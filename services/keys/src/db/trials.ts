import { TIERS } from "@th/billing";
import { contracts, type Tier } from "@th/contracts";
import { inTransaction, type Pool, type PoolClient } from "@th/db";
import { ApiError, enqueueEvent } from "@th/service-kit";
import { billingAfter, firstPaidAnniversary } from "../domain/billing.ts";
import { newId } from "../domain/ids.ts";
import { hashPassword } from "../domain/passwords.ts";
import {
  type CardFacts,
  LocalPaymentProvider,
  type ProcessorSubscription,
} from "../domain/payment-provider.ts";
import { type TenantRow, tenantChangedEvent, tenantView } from "../domain/tenants.ts";
import { firstMonthCharge, trialEndsAt } from "../domain/trials.ts";
import { applyBilling } from "./billing.ts";
import { insertPasswordToken } from "./credentials.ts";
import { insertKey } from "./keys.ts";
import { type AccountsDeps, loadTenant } from "./tenant-rows.ts";

export interface TrialInput {
  tier: Tier;
  company: string;
  admin_email: string;
  payment_method: string;
  admin_password?: string | undefined;
}

/** What the processor set up for a trial before anything is stored. */
interface TrialSetUp {
  tenantId: string;
  card: CardFacts;
  customerRef: string;
  subscription: ProcessorSubscription;
  activatedAt: Date;
}

async function insertTrialTenant(
  client: PoolClient,
  deps: AccountsDeps,
  input: TrialInput,
  setUp: TrialSetUp,
): Promise<TenantRow> {
  const limits = TIERS[input.tier].limits;
  const { rows } = await client.query<TenantRow>(
    `INSERT INTO tenants (id, company, tier, status, seats, lead_views_per_month, rate_per_minute,
       concurrent_webhooks, payment_customer_ref, card_brand, card_last4, activated_at, trial_ends_at,
       payment_provider, payment_subscription_ref, card_fingerprint, next_charge_at)
     VALUES ($1, $2, $3, 'trialing', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
     RETURNING *`,
    [
      setUp.tenantId,
      input.company,
      input.tier,
      limits.seats,
      limits.lead_views_per_month,
      limits.rate_per_minute,
      limits.concurrent_webhooks,
      setUp.customerRef,
      setUp.card.brand,
      setUp.card.last4,
      setUp.activatedAt,
      trialEndsAt(setUp.activatedAt),
      deps.payments.name,
      setUp.subscription.ref,
      setUp.card.fingerprint,
      setUp.subscription.nextChargeAt,
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

/**
 * Claims a card for one trial: false when its fingerprint started a trial already, or is
 * starting one right now. The primary key decides, so sign-ups racing with one card cannot
 * both pass. A claim left by a sign-up that died before finishing is taken over after an hour.
 */
async function claimCard(pool: Pool, fingerprint: string, now: Date): Promise<boolean> {
  const { rowCount } = await pool.query(
    `INSERT INTO trial_cards (fingerprint, claimed_at) VALUES ($1, $2)
     ON CONFLICT (fingerprint) DO UPDATE SET claimed_at = EXCLUDED.claimed_at
     WHERE trial_cards.tenant_id IS NULL AND trial_cards.claimed_at < $2 - interval '1 hour'`,
    [fingerprint, now],
  );
  return (rowCount ?? 0) > 0;
}

/** Gives back a claim whose sign-up failed (a declined card may be tried again). */
async function releaseCard(pool: Pool, fingerprint: string): Promise<void> {
  await pool.query("DELETE FROM trial_cards WHERE fingerprint = $1 AND tenant_id IS NULL", [
    fingerprint,
  ]);
}

const CARD_USED =
  "this card has already started a trial: each card gets one trial; subscribe without a trial through sales, or use another card";

/** Records the built-in processor's charge at the trial's end and applies its outcome. */
async function settleLocalTrial(
  deps: AccountsDeps,
  client: PoolClient,
  tenant: TenantRow,
  paid: boolean,
  providerRef: string | null,
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
      paid ? "succeeded" : "failed",
      providerRef,
    ],
  );
  const next = billingAfter(current, paid ? "active" : "past_due", deps.now());
  await applyBilling(deps, client, current, next, {
    nextChargeAt: firstPaidAnniversary(tenant.activated_at),
  });
  return true;
}

/** Trials: starting one with a confirmed card, and charging the ones that ended (built-in processor). */
export function createTrials(deps: AccountsDeps) {
  const { pool, payments, now } = deps;

  /**
   * The processor's part of a trial start: the card is read and claimed, the customer created and
   * the card confirmed (nothing charged), and the subscription created, trialing until day 14.
   * A refused card creates nothing here and gives its claim back.
   */
  async function setUpTrial(input: TrialInput): Promise<TrialSetUp> {
    const inspected = await payments.inspectCard(input.payment_method);
    if (!inspected.ok) {
      throw new ApiError("payment_declined", `payment method refused: ${inspected.reason}`);
    }
    const { card } = inspected;
    if (!(await claimCard(pool, card.fingerprint, now()))) {
      throw new ApiError("conflict", CARD_USED);
    }
    const tenantId = newId("ten");
    try {
      const customer = await payments.setUpCustomer({
        tenantId,
        paymentMethod: input.payment_method,
        email: input.admin_email,
        company: input.company,
      });
      if (!customer.ok) {
        throw new ApiError("payment_declined", `payment method refused: ${customer.reason}`);
      }
      const activatedAt = now();
      const subscription = await payments.subscribe({
        tenantId,
        customerRef: customer.customerRef,
        paymentMethod: input.payment_method,
        tier: input.tier,
        trialEndsAt: trialEndsAt(activatedAt),
        anchorAt: firstPaidAnniversary(activatedAt),
      });
      return { tenantId, card, customerRef: customer.customerRef, subscription, activatedAt };
    } catch (error) {
      await releaseCard(pool, card.fingerprint);
      throw error;
    }
  }

  /** Stores a trial the processor set up: tenant, first admin and first key in one transaction. */
  async function storeTrial(input: TrialInput, setUp: TrialSetUp, passwordHash: string | null) {
    const { activatedAt } = setUp;
    return inTransaction(pool, async (client) => {
      const tenant = await insertTrialTenant(client, deps, input, setUp);
      await client.query("UPDATE trial_cards SET tenant_id = $2 WHERE fingerprint = $1", [
        setUp.card.fingerprint,
        tenant.id,
      ]);
      const memberId = await insertFirstAdmin(
        client,
        tenant.id,
        input.admin_email,
        passwordHash,
        activatedAt,
      );
      await enqueueEvent(client, contracts.tenantChanged, tenantChangedEvent(tenant, activatedAt));
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
  }

  return {
    /**
     * Starts a 14-day trial (decision 0361). One trial per card: a card whose fingerprint started
     * one already is 409. The trial activates when the processor confirms the card, and the first
     * key is issued with it; a refused card is 402 and creates nothing. Should storing fail after
     * the processor subscribed, the subscription is cancelled so nothing is ever charged for it.
     */
    async startTrial(input: TrialInput) {
      const passwordHash = input.admin_password ? await hashPassword(input.admin_password) : null;
      const setUp = await setUpTrial(input);
      try {
        return await storeTrial(input, setUp, passwordHash);
      } catch (error) {
        await payments
          .cancel({ tenantId: setUp.tenantId, subscriptionRef: setUp.subscription.ref })
          .catch(() => {});
        await releaseCard(pool, setUp.card.fingerprint);
        throw error;
      }
    },

    /**
     * Day 14 with the built-in processor: each trial that ended is charged the rest of its first
     * quota month. Success makes it active; a failed charge makes it past due, and the grace
     * period starts. The charge row's unique (tenant, period) makes this safe to run on every
     * replica and to repeat. Stripe charges by itself and says so by webhook instead.
     */
    async convertEndedTrials(): Promise<{ activated: string[]; pastDue: string[] }> {
      const activated: string[] = [];
      const pastDue: string[] = [];
      if (!(payments instanceof LocalPaymentProvider)) {
        return { activated, pastDue };
      }
      const { rows } = await pool.query<TenantRow>(
        "SELECT * FROM tenants WHERE status = 'trialing' AND trial_ends_at <= $1 ORDER BY trial_ends_at",
        [now()],
      );
      for (const tenant of rows) {
        const charge = firstMonthCharge(tenant);
        const result = await payments.charge({
          customerRef: tenant.payment_customer_ref,
          amountCents: charge.amountCents,
          idempotencyKey: charge.idempotencyKey,
        });
        const settled = await inTransaction(pool, (client) =>
          settleLocalTrial(deps, client, tenant, result.ok, result.ok ? result.providerRef : null),
        );
        if (settled) {
          (result.ok ? activated : pastDue).push(tenant.id);
        }
      }
      return { activated, pastDue };
    },
  };
}
