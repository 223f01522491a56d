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
import {
  findPendingTrial,
  holdsCardClaim,
  insertPendingTrial,
  markPendingTrialActivated,
} from "./pending-trials.ts";
import { type AccountsDeps, loadTenant } from "./tenant-rows.ts";

export interface TrialInput {
  tier: Tier;
  company: string;
  admin_email: string;
  payment_method: string;
  admin_password?: string | undefined;
}

/** A trial whose card asks for authentication: the browser completes it with this secret. */
interface PendingSetUp {
  clientSecret: string;
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

/** How long a trial waits for its card's authentication: as long as a card's claim holds. */
export const PENDING_TRIAL_MS = 3_600_000;
const NO_PENDING_TRIAL =
  "no trial is waiting for this card authentication (it expired after an hour, or the secret is wrong); start the sign-up again";
const TRIAL_ACTIVE_ALREADY =
  "this trial is active already; its first key was shown once: sign in to the dashboard to issue another";

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

/** The steps of a trial start, shared by a start and by the confirmation after 3-D Secure. */
function trialSteps(deps: AccountsDeps) {
  const { pool, payments, now } = deps;

  /** The subscription of a trial whose card is confirmed, trialing until day 14 from now. */
  async function subscribeTrial(
    input: TrialInput,
    tenantId: string,
    card: CardFacts,
    customerRef: string,
  ): Promise<TrialSetUp> {
    const activatedAt = now();
    const subscription = await payments.subscribe({
      tenantId,
      customerRef,
      paymentMethod: input.payment_method,
      tier: input.tier,
      trialEndsAt: trialEndsAt(activatedAt),
      anchorAt: firstPaidAnniversary(activatedAt),
    });
    return { tenantId, card, customerRef, subscription, activatedAt };
  }

  /**
   * The processor's part of a trial start: the card is read and claimed, the customer created and
   * the card confirmed (nothing charged), and the subscription created, trialing until day 14.
   * A refused card creates nothing here and gives its claim back.
   */
  async function setUpTrial(
    input: TrialInput,
    passwordHash: string | null,
  ): Promise<TrialSetUp | PendingSetUp> {
    const inspected = await payments.inspectCard(input.payment_method);
    if (!inspected.ok) {
      throw new ApiError("payment_declined", `payment method refused: ${inspected.reason}`);
    }
    const { card } = inspected;
    const claimedAt = now();
    if (!(await claimCard(pool, card.fingerprint, claimedAt))) {
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
      if (customer.ok === false) {
        throw new ApiError("payment_declined", `payment method refused: ${customer.reason}`);
      }
      if (customer.ok === "requires_action") {
        // The card's claim stays held for the confirmation (decision 0364).
        await insertPendingTrial(pool, {
          setupIntentRef: customer.setupIntentRef,
          clientSecret: customer.clientSecret,
          tenantId,
          tier: input.tier,
          company: input.company,
          adminEmail: input.admin_email,
          passwordHash,
          paymentMethod: input.payment_method,
          customerRef: customer.customerRef,
          card,
          cardClaimedAt: claimedAt,
          createdAt: now(),
        });
        return { clientSecret: customer.clientSecret };
      }
      return await subscribeTrial(input, tenantId, card, customer.customerRef);
    } catch (error) {
      await releaseCard(pool, card.fingerprint);
      throw error;
    }
  }

  /** Stores a trial the processor set up: tenant, first admin and first key, in the caller's transaction. */
  async function storeTrialIn(
    client: PoolClient,
    input: TrialInput,
    setUp: TrialSetUp,
    passwordHash: string | null,
  ) {
    const { activatedAt } = setUp;
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
  }

  /**
   * Stores the trial in one transaction. Should that fail after the processor subscribed, the
   * subscription is cancelled so nothing is ever charged for it, and a claim taken by this call
   * is given back; unless `keepsTrial` says a trial stored by someone else holds both.
   */
  async function storeOrUndo<T>(
    setUp: TrialSetUp,
    store: (client: PoolClient) => Promise<T>,
    undo: { releasesClaim: boolean; keepsTrial?: () => boolean },
  ): Promise<T> {
    try {
      return await inTransaction(pool, store);
    } catch (error) {
      if (!undo.keepsTrial?.()) {
        await payments
          .cancel({ tenantId: setUp.tenantId, subscriptionRef: setUp.subscription.ref })
          .catch(() => {});
        if (undo.releasesClaim) {
          await releaseCard(pool, setUp.card.fingerprint);
        }
      }
      throw error;
    }
  }

  return { subscribeTrial, setUpTrial, storeTrialIn, storeOrUndo };
}

/**
 * Activates a trial whose card asked for 3-D Secure, once the browser completed it (decision
 * 0364). The client secret proves the caller started the sign-up; the SetupIntent's state is
 * read back from the processor, never taken from the caller, so a client that only claims
 * success changes nothing. The first key is issued here, once: a repeat is 409.
 */
async function confirmPendingTrial(
  deps: AccountsDeps,
  steps: ReturnType<typeof trialSteps>,
  clientSecret: string,
) {
  const { pool, payments, now } = deps;
  const { subscribeTrial, storeOrUndo, storeTrialIn } = steps;
  const pending = await findPendingTrial(pool, clientSecret);
  if (!pending || pending.created_at.getTime() < now().getTime() - PENDING_TRIAL_MS) {
    throw new ApiError("not_found", NO_PENDING_TRIAL);
  }
  if (pending.activated_at) {
    throw new ApiError("conflict", TRIAL_ACTIVE_ALREADY);
  }
  const confirmed = await payments.setUpStatus(pending.setup_intent_ref);
  if (
    confirmed.status !== "succeeded" ||
    confirmed.customerRef !== pending.customer_ref ||
    confirmed.paymentMethod !== pending.payment_method
  ) {
    throw new ApiError(
      "payment_declined",
      `the card is not confirmed: ${confirmed.reason || "its authentication did not complete"}`,
    );
  }
  const input: TrialInput = {
    tier: pending.tier,
    company: pending.company,
    admin_email: pending.admin_email,
    payment_method: pending.payment_method,
  };
  const card = {
    fingerprint: pending.card_fingerprint,
    brand: pending.card_brand,
    last4: pending.card_last4,
  };
  const setUp = await subscribeTrial(input, pending.tenant_id, card, pending.customer_ref);
  let activeAlready = false;
  return storeOrUndo(
    setUp,
    async (client) => {
      const locked = await findPendingTrial(client, clientSecret, true);
      if (!locked || locked.activated_at) {
        // A confirmation racing this one activated it, on the same subscription (one
        // idempotency key per tenant): nothing is undone.
        activeAlready = true;
        throw new ApiError("conflict", TRIAL_ACTIVE_ALREADY);
      }
      if (!(await holdsCardClaim(client, locked))) {
        throw new ApiError("conflict", CARD_USED);
      }
      const stored = await storeTrialIn(client, input, setUp, locked.password_hash);
      await markPendingTrialActivated(client, locked, setUp.activatedAt);
      return stored;
    },
    // The claim is given back only by its lapse: by now it may be another sign-up's.
    { releasesClaim: false, keepsTrial: () => activeAlready },
  );
}

/** Trials: starting one with a confirmed card, and charging the ones that ended (built-in processor). */
export function createTrials(deps: AccountsDeps) {
  const { pool, payments, now } = deps;
  const steps = trialSteps(deps);
  const { setUpTrial, storeOrUndo, storeTrialIn } = steps;

  return {
    /**
     * Starts a 14-day trial (decision 0361). One trial per card: a card whose fingerprint started
     * one already is 409. The trial activates when the processor confirms the card, and the first
     * key is issued with it; a refused card is 402 and creates nothing. Should storing fail after
     * the processor subscribed, the subscription is cancelled so nothing is ever charged for it.
     */
    async startTrial(input: TrialInput) {
      const passwordHash = input.admin_password ? await hashPassword(input.admin_password) : null;
      const setUp = await setUpTrial(input, passwordHash);
      if ("clientSecret" in setUp) {
        return { status: "requires_action" as const, client_secret: setUp.clientSecret };
      }
      return storeOrUndo(setUp, (client) => storeTrialIn(client, input, setUp, passwordHash), {
        releasesClaim: true,
      });
    },

    /** Activates a trial waiting for its card's 3-D Secure (confirmPendingTrial). */
    confirmTrial: (clientSecret: string) => confirmPendingTrial(deps, steps, clientSecret),

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
