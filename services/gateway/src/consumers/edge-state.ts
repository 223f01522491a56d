import { on, type Subscription } from "@th/bus";
import { contracts } from "@th/contracts";
import type { EdgeStore } from "../edge/edge-store.ts";

/**
 * Keeps the edge's cached keys and tenants in step with the keys service. Every write is
 * idempotent (revocation is final, tenant snapshots carry revisions), so redelivery is harmless.
 */
export function edgeStateSubscriptions(store: EdgeStore): Subscription[] {
  return [
    on(contracts.keyIssued, async ({ value }) => {
      await store.putKey(value.key_hash, {
        tenantId: value.tenant_id,
        memberId: value.member_id,
        keyId: value.key_id,
        revoked: false,
      });
      return undefined;
    }),
    on(contracts.keyRevoked, async ({ value }) => {
      await store.markRevoked(value.key_hash, {
        tenantId: value.tenant_id,
        memberId: value.member_id,
        keyId: value.key_id,
      });
      return undefined;
    }),
    on(contracts.tenantChanged, async ({ value }) => {
      await store.putTenant(value);
      return undefined;
    }),
  ];
}
