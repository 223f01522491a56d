import type { KeyPeppers } from "@th/config";
import { contracts } from "@th/contracts";
import type { Pool, PoolClient } from "@th/db";
import { ApiError, enqueueEvent } from "@th/service-kit";
import type { PaymentProvider } from "../domain/payment-provider.ts";
import { type TenantRow, tenantChangedEvent } from "../domain/tenants.ts";

/** What every part of the accounts store is built from. */
export interface AccountsDeps {
  pool: Pool;
  /** The peppers of API-key hashes: new hashes under the current, lookups under any listed. */
  peppers: KeyPeppers;
  payments: PaymentProvider;
  now: () => Date;
  /** Days a past-due tenant keeps reading after its payment first failed (PAYMENT_GRACE_DAYS). */
  graceDays: number;
}

/** Who is calling, as the gateway authenticated it. */
export interface Caller {
  tenantId: string;
  memberId: string;
  keyId: string;
}

export type Queryable = PoolClient | Pool;

export async function loadTenant(
  client: Queryable,
  tenantId: string,
  forUpdate = false,
): Promise<TenantRow> {
  const { rows } = await client.query<TenantRow>(
    `SELECT * FROM tenants WHERE id = $1${forUpdate ? " FOR UPDATE" : ""}`,
    [tenantId],
  );
  const row = rows[0];
  if (!row) {
    throw new ApiError("not_found", "tenant not found");
  }
  return row;
}

export async function requireAdmin(client: Queryable, caller: Caller): Promise<void> {
  const { rows } = await client.query<{ role: string }>(
    "SELECT role FROM members WHERE id = $1 AND tenant_id = $2 AND removed_at IS NULL",
    [caller.memberId, caller.tenantId],
  );
  if (rows[0]?.role !== "admin") {
    throw new ApiError(
      "forbidden",
      "only the tenant's admins can manage keys, members and the subscription",
    );
  }
}

/** How many members of the tenant are not removed. */
export async function countActiveMembers(client: Queryable, tenantId: string): Promise<number> {
  const { rows } = await client.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM members WHERE tenant_id = $1 AND removed_at IS NULL",
    [tenantId],
  );
  return rows[0]?.n ?? 0;
}

/** Raises the tenant's revision and tells the other services its new snapshot. */
export async function bumpTenant(
  client: PoolClient,
  row: TenantRow,
  now: () => Date,
): Promise<TenantRow> {
  const { rows } = await client.query<TenantRow>(
    "UPDATE tenants SET revision = revision + 1, updated_at = now() WHERE id = $1 RETURNING *",
    [row.id],
  );
  const updated = rows[0] as TenantRow;
  await enqueueEvent(client, contracts.tenantChanged, tenantChangedEvent(updated, now()));
  return updated;
}
