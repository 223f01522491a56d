import type { TenantChanged } from "@th/contracts";
import type { Pool } from "@th/db";

export interface TenantQuota {
  tenantId: string;
  tier: string;
  status: string;
  leadViewsPerMonth: number;
  billingAnniversary: string | null;
}

/** Keeps the latest tenant.changed per tenant; an older revision arriving late changes nothing. */
const UPSERT_SQL = `
INSERT INTO tenants (tenant_id, revision, tier, status, lead_views_per_month,
  billing_anniversary, changed_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (tenant_id) DO UPDATE SET
  revision = EXCLUDED.revision,
  tier = EXCLUDED.tier,
  status = EXCLUDED.status,
  lead_views_per_month = EXCLUDED.lead_views_per_month,
  billing_anniversary = EXCLUDED.billing_anniversary,
  changed_at = EXCLUDED.changed_at
WHERE tenants.revision < EXCLUDED.revision`;

const SELECT_COLUMNS = `tenant_id, tier, status, lead_views_per_month,
  to_char(billing_anniversary, 'YYYY-MM-DD') AS billing_anniversary`;

interface TenantRow {
  tenant_id: string;
  tier: string;
  status: string;
  lead_views_per_month: number;
  billing_anniversary: string | null;
}

function toQuota(row: TenantRow): TenantQuota {
  return {
    tenantId: row.tenant_id,
    tier: row.tier,
    status: row.status,
    leadViewsPerMonth: row.lead_views_per_month,
    billingAnniversary: row.billing_anniversary,
  };
}

export function createTenants(pool: Pool) {
  return {
    /** True when this revision is now the tenant's latest. */
    async apply(change: TenantChanged): Promise<boolean> {
      const result = await pool.query(UPSERT_SQL, [
        change.tenant_id,
        change.revision,
        change.tier,
        change.status,
        change.limits.lead_views_per_month,
        change.billing_anniversary,
        change.changed_at,
      ]);
      return result.rowCount === 1;
    },

    async find(tenantId: string): Promise<TenantQuota | undefined> {
      const { rows } = await pool.query<TenantRow>(
        `SELECT ${SELECT_COLUMNS} FROM tenants WHERE tenant_id = $1`,
        [tenantId],
      );
      return rows[0] ? toQuota(rows[0]) : undefined;
    },

    async all(): Promise<TenantQuota[]> {
      const { rows } = await pool.query<TenantRow>(
        `SELECT ${SELECT_COLUMNS} FROM tenants ORDER BY tenant_id`,
      );
      return rows.map(toQuota);
    },
  };
}

export type Tenants = ReturnType<typeof createTenants>;
