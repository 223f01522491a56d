import type { TenantChanged } from "@th/contracts";
import type { Redis } from "ioredis";

/** Revocation is final: a key record already marked revoked is never made active again. */
export const PUT_KEY_LUA = `
if redis.call('HGET', KEYS[1], 'revoked') == '1' then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'tenant_id', ARGV[1], 'member_id', ARGV[2], 'key_id', ARGV[3], 'revoked', ARGV[4])
return 1
`;

/** Tenant snapshots carry a revision; an older one never overwrites a newer one. */
export const PUT_TENANT_LUA = `
local current = tonumber(redis.call('HGET', KEYS[1], 'revision') or '-1')
if current > tonumber(ARGV[1]) then
  redis.call('EXPIRE', KEYS[1], ARGV[7])
  return 0
end
redis.call('HSET', KEYS[1], 'revision', ARGV[1], 'tier', ARGV[2], 'status', ARGV[3], 'rate_per_minute', ARGV[4], 'lead_views_per_month', ARGV[5], 'billing_anniversary', ARGV[6])
redis.call('EXPIRE', KEYS[1], ARGV[7])
return 1
`;

/**
 * The status the edge keeps for a tenant: its subscription's, except `suspended` for one whose
 * payment failed past the grace period (edge/suspension.ts). A cancelled tenant stays cancelled.
 */
function edgeStatusOf(tenant: Pick<TenantChanged, "status" | "standing">): string {
  return tenant.status !== "cancelled" && tenant.standing === "suspended"
    ? "suspended"
    : tenant.status;
}

/** The scripts behind `putKey` and `putTenant`, on the edge's connection. */
export type RecordRedis = Redis & {
  thPutKey(
    key: string,
    tenantId: string,
    memberId: string,
    keyId: string,
    revoked: string,
  ): Promise<number>;
  thPutTenant(key: string, ...args: string[]): Promise<number>;
};

/**
 * The cached key and tenant records, written from the keys service's answers and events; the
 * authorization scripts read them.
 */
export function cachedRecords(redis: RecordRedis, tenantTtlSeconds: number) {
  return {
    async putKey(
      keyHash: string,
      record: { tenantId: string; memberId: string; keyId: string; revoked: boolean },
    ) {
      await redis.thPutKey(
        `th:key:${keyHash}`,
        record.tenantId,
        record.memberId,
        record.keyId,
        record.revoked ? "1" : "0",
      );
    },

    /** Revocation is written unconditionally and never expires. */
    async markRevoked(
      keyHash: string,
      record?: { tenantId: string; memberId: string; keyId: string },
    ) {
      const fields: Record<string, string> = { revoked: "1" };
      if (record) {
        Object.assign(fields, {
          tenant_id: record.tenantId,
          member_id: record.memberId,
          key_id: record.keyId,
        });
      }
      await redis
        .multi()
        .hdel(`th:key:${keyHash}`, "unknown")
        .hset(`th:key:${keyHash}`, fields)
        .exec();
    },

    /** A key record no hash leads to any more (its key was re-hashed under a newer pepper). */
    async forgetKey(keyHash: string) {
      await redis.del(`th:key:${keyHash}`);
    },

    async putUnknown(keyHash: string) {
      await redis
        .multi()
        .hset(`th:key:${keyHash}`, "unknown", "1")
        .expire(`th:key:${keyHash}`, 60)
        .exec();
    },

    async putTenant(tenant: TenantChanged) {
      await redis.thPutTenant(
        `th:tenant:${tenant.tenant_id}`,
        String(tenant.revision),
        tenant.tier,
        edgeStatusOf(tenant),
        String(tenant.limits.rate_per_minute),
        String(tenant.limits.lead_views_per_month),
        tenant.billing_anniversary ?? "",
        String(tenantTtlSeconds),
      );
    },

    async forgetTenant(tenantId: string) {
      await redis.del(`th:tenant:${tenantId}`);
    },
  };
}
