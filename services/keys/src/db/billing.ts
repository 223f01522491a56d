import { TIERS } from "@th/billing";
import { TIERS as TIER_NAMES } from "@th/contracts";
import { inTransaction, type PoolClient } from "@th/db";
import { ApiError } from "@th/service-kit";
import {
  type BillingState,
  billingAfter,
  billingChanged,
  graceEndsAt,
  suspendedAfterGrace,
} from "../domain/billing.ts";
import {
  type BillingNotice,
  NoticeRefused,
  type ProcessorInvoice,
} from "../domain/payment-provider.ts";
import { MONTHLY_PRICE_CENTS } from "../domain/prices.ts";
import { DAY_MS, type TenantRow, tenantView } from "../domain/tenants.ts";
import {
  type AccountsDeps,
  bumpTenant,
  type Caller,
  loadTenant,
  type Queryable,
} from "./tenant-rows.ts";

/**
 * Writes a tenant's new billing state and, when anything changed, raises its revision and
 * publishes `tenant.changed` in the same transaction, as a tier change does: the edge and the
 * dispatcher follow within seconds. The next charge date is kept as the processor last said.
 */
export async function applyBilling(
  deps: Pick<AccountsDeps, "now">,
  client: PoolClient,
  current: TenantRow,
  next: BillingState,
  facts: { nextChargeAt?: Date | null } = {},
): Promise<TenantRow> {
  const nextChargeAt =
    facts.nextChargeAt === undefined ? current.next_charge_at : facts.nextChargeAt;
  const charged = nextChargeAt?.getTime() !== current.next_charge_at?.getTime();
  if (!billingChanged(current, next) && !charged) {
    return current;
  }
  await client.query(
    `UPDATE tenants SET status = $2, standing = $3, past_due_since = $4, next_charge_at = $5,
       cancelled_at = CASE WHEN $2 = 'cancelled' THEN coalesce(cancelled_at, $6) ELSE cancelled_at END
     WHERE id = $1`,
    [current.id, next.status, next.standing, next.past_due_since, nextChargeAt, deps.now()],
  );
  if (!billingChanged(current, next)) {
    // Only the date moved: nothing another service keeps has changed.
    return { ...current, next_charge_at: nextChargeAt };
  }
  return bumpTenant(client, { ...current, ...next }, deps.now);
}

/** Whether this processor event was applied already. */
async function seen(client: Queryable, eventId: string): Promise<boolean> {
  const { rowCount } = await client.query("SELECT 1 FROM billing_events WHERE id = $1", [eventId]);
  return (rowCount ?? 0) > 0;
}

async function tenantOfSubscription(
  client: PoolClient,
  subscriptionRef: string,
): Promise<TenantRow | undefined> {
  const { rows } = await client.query<TenantRow>(
    "SELECT * FROM tenants WHERE payment_subscription_ref = $1 FOR UPDATE",
    [subscriptionRef],
  );
  return rows[0];
}

/** What became of one processor event. */
export type NoticeOutcome =
  | { outcome: "applied"; tenant_id: string; changed: boolean }
  | { outcome: "duplicate" }
  | { outcome: "ignored"; reason: string };

/** Processor events that speak of a subscription's state: trial end, payments, cancellation. */
const SUBSCRIPTION_EVENTS = new Set([
  "customer.subscription.updated",
  "customer.subscription.deleted",
  "customer.subscription.trial_will_end",
  "invoice.paid",
  "invoice.payment_failed",
]);

/** The processor's events (webhooks) and the grace period that follows a failed payment. */
export function createBilling(deps: AccountsDeps) {
  const { pool, payments, now } = deps;

  /**
   * Applies one event, once. The event only says which subscription to look at: its state is
   * read back from the processor, so events arriving out of order or late still leave the
   * tenant as the processor has it now. The event id is recorded in the transaction that applies
   * it; a replay finds it and changes nothing, without asking the processor again.
   */
  async function applyNotice(notice: BillingNotice): Promise<NoticeOutcome> {
    if (!SUBSCRIPTION_EVENTS.has(notice.type) || notice.subscriptionRef === null) {
      return { outcome: "ignored", reason: `${notice.type} does not change a tenant` };
    }
    if (await seen(pool, notice.eventId)) {
      return { outcome: "duplicate" };
    }
    const subscription = await payments.subscription(notice.subscriptionRef);
    return inTransaction(pool, async (client) => {
      const tenant = await tenantOfSubscription(client, subscription.ref);
      if (!tenant) {
        return { outcome: "ignored", reason: "no tenant holds this subscription" } as const;
      }
      const { rowCount } = await client.query(
        `INSERT INTO billing_events (id, type, tenant_id, received_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (id) DO NOTHING`,
        [notice.eventId, notice.type, tenant.id, now()],
      );
      if (rowCount === 0) {
        return { outcome: "duplicate" } as const;
      }
      const next = billingAfter(tenant, subscription.status, now());
      const applied = await applyBilling(deps, client, tenant, next, {
        nextChargeAt: subscription.nextChargeAt,
      });
      return {
        outcome: "applied",
        tenant_id: tenant.id,
        changed: applied.revision !== tenant.revision,
      } as const;
    });
  }

  return {
    /**
     * A webhook delivery from the processor, as the gateway received it: its signature is
     * verified with the processor's SDK before anything is read from it (401 when it fails).
     */
    async receiveBillingEvent(payload: string, signature: string): Promise<NoticeOutcome> {
      let notice: BillingNotice;
      try {
        notice = payments.readNotice(payload, signature, now());
      } catch (error) {
        if (error instanceof NoticeRefused) {
          throw new ApiError(
            "unauthorized",
            "the Stripe-Signature header does not verify: a wrong signing secret, an altered body or a timestamp more than 5 minutes old",
          );
        }
        throw error;
      }
      return applyNotice(notice);
    },

    /**
     * Suspends every past-due tenant whose grace period ran out: paid reads are refused from
     * then on, until a payment succeeds. Safe to run on every replica and to repeat.
     */
    async suspendLapsedGrace(): Promise<string[]> {
      const at = now();
      const graceDays = deps.graceDays;
      const { rows } = await pool.query<{ id: string }>(
        `SELECT id FROM tenants WHERE standing = 'past_due' AND status <> 'cancelled'
           AND past_due_since <= $1 ORDER BY past_due_since`,
        [new Date(at.getTime() - graceDays * DAY_MS)],
      );
      const suspended: string[] = [];
      for (const { id } of rows) {
        const done = await inTransaction(pool, async (client) => {
          const tenant = await loadTenant(client, id, true);
          if (!suspendedAfterGrace(tenant, at, graceDays)) {
            return false;
          }
          await applyBilling(deps, client, tenant, { ...tenant, standing: "suspended" });
          return true;
        });
        if (done) {
          suspended.push(id);
        }
      }
      return suspended;
    },

    /** The billing page: tier and limits, dates, card, invoices and what each tier costs. */
    async getBilling(caller: Caller) {
      const tenant = await loadTenant(pool, caller.tenantId);
      return {
        ...billingView(tenant, deps.graceDays),
        invoices: await invoicesOf(tenant),
        tiers: TIER_NAMES.map((tier) => ({
          tier,
          label: TIERS[tier].label,
          monthly_price_cents: MONTHLY_PRICE_CENTS[tier],
          limits: TIERS[tier].limits,
        })),
      };
    },
  };

  /** The customer's invoices; null when the processor cannot be reached for them right now. */
  async function invoicesOf(tenant: TenantRow) {
    let invoices: ProcessorInvoice[];
    try {
      invoices = await payments.invoices(tenant.payment_customer_ref);
    } catch {
      return null;
    }
    return invoices.map((invoice) => ({
      id: invoice.id,
      number: invoice.number,
      status: invoice.status,
      amount_due_cents: invoice.amountDueCents,
      amount_paid_cents: invoice.amountPaidCents,
      currency: invoice.currency,
      created_at: invoice.createdAt.toISOString(),
      period_start: invoice.periodStart.toISOString(),
      period_end: invoice.periodEnd.toISOString(),
      hosted_invoice_url: invoice.hostedUrl,
    }));
  }
}

/** The tenant as its billing page shows it, with when a running grace period ends. */
function billingView(tenant: TenantRow, graceDays: number) {
  return {
    tenant: tenantView(tenant),
    grace_ends_at:
      tenant.standing === "past_due" && tenant.past_due_since
        ? graceEndsAt(tenant.past_due_since, graceDays).toISOString()
        : null,
  };
}
