import type { Redis } from "ioredis";
import { type RateWindow, rateWindow, SLIDE_LUA } from "./rolling-minute.ts";

/**
 * More calls of one request, charged to its tenant's rolling minute in order, as if each had
 * come alone at this millisecond: KEYS[1..2] the tenant's window (`rlt:`/`rlc:`, as the
 * authorization scripts name it), ARGV[1] now, ARGV[2] the tenant's limit, ARGV[3] how many.
 * Refused calls are counted like refused requests. Returns the window after the last call and
 * how many of the calls were allowed: the first ones, while the minute had room.
 */
const TENANT_CALLS_LUA = `${SLIDE_LUA}
local w = windowOf(KEYS[1], KEYS[2])
local now, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local count, allowed, oldest = 0, 0, now
local granted = 0
for _ = 1, tonumber(ARGV[3]) do
  count, allowed, oldest = slide(w, limit, now)
  granted = granted + allowed
end
saveWindows()
return {limit, count, oldest, allowed, granted}
`;

type TenantCallsRedis = Redis & {
  thTenantCalls(
    times: string,
    state: string,
    now: number,
    limit: number,
    calls: number,
  ): Promise<number[]>;
};

/** The charge of a request's further calls (a JSON-RPC batch's) to its tenant's minute. */
export function tenantCalls(redis: Redis) {
  if (!("thTenantCalls" in redis)) {
    redis.defineCommand("thTenantCalls", { numberOfKeys: 2, lua: TENANT_CALLS_LUA });
  }
  const scripted = redis as TenantCallsRedis;
  return {
    async chargeCalls(
      tenantId: string,
      limit: number,
      calls: number,
      now = Date.now(),
    ): Promise<{ window: RateWindow; allowed: number }> {
      const [max, count, oldest, allowed, granted] = (
        await scripted.thTenantCalls(
          `th:rlt:${tenantId}`,
          `th:rlc:${tenantId}`,
          Math.floor(now),
          limit,
          calls,
        )
      ).map(Number);
      return {
        window: rateWindow(max as number, count as number, oldest as number, allowed === 1),
        allowed: granted as number,
      };
    },
  };
}
