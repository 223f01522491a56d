import type { TenantChanged } from "@th/contracts";
import type { Pool } from "@th/db";

/**
 * The status kept for a tenant: its subscription's, except `suspended` for one whose payment
 * failed past its grace period, whose deliveries (each a paid read) wait until it pays.
 */
function deliveryStatusOf(value: Pick<TenantChanged, "status" | "standing">): string {
  return value.status !== "cancelled" && value.standing === "suspended"
    ? "suspended"
    : value.status;
}

/**
 * Keeps a tenant's tier, status, cap, anniversary and concurrent-webhooks figure; the highest
 * revision wins. Answers whether this change was newer than the one kept.
 */
export async function applyTenantChange(pool: Pool, value: TenantChanged): Promise<boolean> {
  const applied = await pool.query(
    `INSERT INTO tenants (tenant_id, revision, tier, status, lead_views_per_month,
                          concurrent_webhooks, billing_anniversary, changed_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (tenant_id) DO UPDATE SET
       revision = EXCLUDED.revision, tier = EXCLUDED.tier, status = EXCLUDED.status,
       lead_views_per_month = EXCLUDED.lead_views_per_month,
       concurrent_webhooks = EXCLUDED.concurrent_webhooks,
       billing_anniversary = EXCLUDED.billing_anniversary, changed_at = EXCLUDED.changed_at
     WHERE tenants.revision < EXCLUDED.revision`,
    [
      value.tenant_id,
      value.revision,
      value.tier,
      deliveryStatusOf(value),
      value.limits.lead_views_per_month,
      value.limits.concurrent_webhooks,
      value.billing_anniversary,
      value.changed_at,
    ],
  );
  return (applied.rowCount ?? 0) > 0;
}
