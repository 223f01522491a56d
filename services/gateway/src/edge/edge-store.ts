import { randomBytes } from "node:crypto";
import type { TenantChanged } from "@th/contracts";
import { LEAD_VIEW_COUNTER_PREFIX } from "@th/quota";
import type { Redis } from "ioredis";

/**
 * The gateway's hot state in Redis, shared by every gateway instance. Each fact here can be
 * rebuilt: key records and tenant records from the keys service (or its events), rate windows
 * simply restart. Layout, under the `th:` prefix:
 * - `key:<hash>`     hash {tenant_id, member_id, key_id, revoked} or {unknown: 1} for 60 s
 * - `tenant:<id>`    hash {tier, status, rate_per_minute, lead_views_per_month, billing_anniversary, revision}, TTL
 * - `rl:<tenant>`    sorted set: the tenant's requests of the rolling minute (a sliding log)
 * - `rlip:<scope>:<ip>` the same per client IP for public calls and failed authentication
 * - `session:<id>`   a signed-out dashboard session, until its tokens would have expired
 */

const WINDOW_MS = 60_000;

/**
 * One round trip answers everything the edge needs: which tenant the key belongs to, whether it
 * is revoked, the tenant's tier and caps, and the tenant's rolling minute. Every request is
 * logged into the window, refused ones too, so hammering after a 429 pushes the reset further.
 */
const KEY_LOOKUP_LUA = `
local rec = redis.call('HMGET', KEYS[1], 'tenant_id', 'member_id', 'key_id', 'revoked', 'unknown')
if rec[5] == '1' then return {'unknown'} end
if not rec[1] then return {'miss'} end
if rec[4] == '1' then return {'revoked'} end
`;

/**
 * A dashboard session names its tenant and member in a signed token, so there is no key to look
 * up: KEYS[1] is the session's revocation mark (set at sign-out), ARGV[11..13] the tenant,
 * member and session id. Everything after is the same tenant window and quota read as for keys.
 */
const SESSION_LOOKUP_LUA = `
if redis.call('EXISTS', KEYS[1]) == 1 then return {'revoked'} end
local rec = {ARGV[11], ARGV[12], ARGV[13]}
`;

const TENANT_WINDOW_LUA = `
local t = redis.call('HMGET', ARGV[1] .. 'tenant:' .. rec[1], 'tier', 'status', 'rate_per_minute', 'lead_views_per_month', 'billing_anniversary')
if not t[1] then return {'miss'} end
if t[2] ~= 'trialing' and t[2] ~= 'active' then return {'inactive', rec[1], t[2]} end
local now = tonumber(ARGV[2])
local window = tonumber(ARGV[4])
local log = ARGV[1] .. 'rl:' .. rec[1]
redis.call('ZREMRANGEBYSCORE', log, '-inf', now - window)
local before = redis.call('ZCARD', log)
redis.call('ZADD', log, now, ARGV[3])
redis.call('PEXPIRE', log, window)
local limit = tonumber(t[3])
local count = before + 1
local allowed = 0
if before < limit then allowed = 1 end
local oldest = redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')[2]
local retryAt = 0
if allowed == 0 then
  local idx = count - limit
  retryAt = tonumber(redis.call('ZRANGE', log, idx, idx, 'WITHSCORES')[2]) + window
end
-- The month's lead-view counter, so the quota headers need no second round trip. The period
-- starts on the anniversary's day of this month (clamped to the month's length) or, before that
-- day, of the previous month. ARGV[5..10]: counter prefix, year, month, day, days in this month,
-- days in the previous month.
local used = ''
if t[5] and string.len(t[5]) == 10 then
  local anniversary = tonumber(string.sub(t[5], 9, 10))
  local y, m, d = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
  local startDay = math.min(anniversary, tonumber(ARGV[9]))
  if d < startDay then
    m = m - 1
    if m == 0 then m = 12; y = y - 1 end
    startDay = math.min(anniversary, tonumber(ARGV[10]))
  end
  used = redis.call('GET', ARGV[1] .. ARGV[5] .. rec[1] .. ':' .. string.format('%04d-%02d-%02d', y, m, startDay)) or ''
end
return {'ok', rec[1], rec[2], rec[3], t[1], t[2], limit, count, oldest, allowed, retryAt, t[4], t[5], used}
`;

const AUTHORIZE_LUA = KEY_LOOKUP_LUA + TENANT_WINDOW_LUA;
const AUTHORIZE_SESSION_LUA = SESSION_LOOKUP_LUA + TENANT_WINDOW_LUA;

/** A sliding log per client IP; the same counting rule as tenants. */
const IP_LIMIT_LUA = `
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[3])
local limit = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local before = redis.call('ZCARD', KEYS[1])
redis.call('ZADD', KEYS[1], now, ARGV[2])
redis.call('PEXPIRE', KEYS[1], window)
local count = before + 1
local allowed = 0
if before < limit then allowed = 1 end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]
local retryAt = 0
if allowed == 0 then
  local idx = count - limit
  retryAt = tonumber(redis.call('ZRANGE', KEYS[1], idx, idx, 'WITHSCORES')[2]) + window
end
return {limit, count, oldest, allowed, retryAt}
`;

/** Revocation is final: a key record already marked revoked is never made active again. */
const PUT_KEY_LUA = `
if redis.call('HGET', KEYS[1], 'revoked') == '1' then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'tenant_id', ARGV[1], 'member_id', ARGV[2], 'key_id', ARGV[3], 'revoked', ARGV[4])
return 1
`;

/** Tenant snapshots carry a revision; an older one never overwrites a newer one. */
const PUT_TENANT_LUA = `
local current = tonumber(redis.call('HGET', KEYS[1], 'revision') or '-1')
if current > tonumber(ARGV[1]) then
  redis.call('EXPIRE', KEYS[1], ARGV[7])
  return 0
end
redis.call('HSET', KEYS[1], 'revision', ARGV[1], 'tier', ARGV[2], 'status', ARGV[3], 'rate_per_minute', ARGV[4], 'lead_views_per_month', ARGV[5], 'billing_anniversary', ARGV[6])
redis.call('EXPIRE', KEYS[1], ARGV[7])
return 1
`;

export interface RateWindow {
  limit: number;
  /** Requests in the rolling minute, this one included. */
  count: number;
  remaining: number;
  /** Unix ms when the oldest request in the window leaves it. */
  resetAtMs: number;
  allowed: boolean;
  /** Unix ms after which a request would be allowed again (only when refused). */
  retryAtMs: number;
}

export type Authorization =
  | { kind: "miss" }
  | { kind: "unknown" }
  | { kind: "revoked" }
  | { kind: "inactive"; tenantId: string; status: string }
  | {
      kind: "ok";
      tenantId: string;
      memberId: string;
      keyId: string;
      tier: string;
      status: string;
      window: RateWindow;
      leadViewsPerMonth: number;
      billingAnniversary: string;
      /** Lead-views used this billing period, when the counter is in Redis. */
      leadViewsUsed: number | undefined;
    };

type EdgeRedis = Redis & {
  thAuthorize(key: string, ...args: (string | number)[]): Promise<string[]>;
  thAuthorizeSession(key: string, ...args: (string | number)[]): Promise<string[]>;
  thIpLimit(
    key: string,
    now: number,
    member: string,
    window: number,
    limit: number,
  ): Promise<number[]>;
  thPutKey(
    key: string,
    tenantId: string,
    memberId: string,
    keyId: string,
    revoked: string,
  ): Promise<number>;
  thPutTenant(key: string, ...args: string[]): Promise<number>;
};

function rateWindow(
  limit: number,
  count: number,
  oldest: number,
  allowed: boolean,
  retryAt: number,
): RateWindow {
  return {
    limit,
    count,
    remaining: Math.max(0, limit - count),
    resetAtMs: oldest + WINDOW_MS,
    allowed,
    retryAtMs: retryAt,
  };
}

export function createEdgeStore(redis: Redis, options: { tenantTtlSeconds: number }) {
  const edge = redis as EdgeRedis;
  if (!("thAuthorize" in edge)) {
    redis.defineCommand("thAuthorize", { numberOfKeys: 1, lua: AUTHORIZE_LUA });
    redis.defineCommand("thAuthorizeSession", { numberOfKeys: 1, lua: AUTHORIZE_SESSION_LUA });
    redis.defineCommand("thIpLimit", { numberOfKeys: 1, lua: IP_LIMIT_LUA });
    redis.defineCommand("thPutKey", { numberOfKeys: 1, lua: PUT_KEY_LUA });
    redis.defineCommand("thPutTenant", { numberOfKeys: 1, lua: PUT_TENANT_LUA });
  }
  // Keys built inside a script are not prefixed by ioredis, so the script is told the prefix.
  const prefix = `${redis.options.keyPrefix ?? ""}th:`;
  const uniqueMember = (now: number) => `${now}-${randomBytes(6).toString("hex")}`;

  function windowArgs(now: number): (string | number)[] {
    const today = new Date(now);
    const year = today.getUTCFullYear();
    const month = today.getUTCMonth();
    return [
      prefix,
      now,
      uniqueMember(now),
      WINDOW_MS,
      LEAD_VIEW_COUNTER_PREFIX,
      year,
      month + 1,
      today.getUTCDate(),
      new Date(Date.UTC(year, month + 1, 0)).getUTCDate(),
      new Date(Date.UTC(year, month, 0)).getUTCDate(),
    ];
  }

  function authorization(reply: string[]): Authorization {
    const [kind] = reply;
    if (kind === "miss" || kind === "unknown" || kind === "revoked") {
      return { kind };
    }
    if (kind === "inactive") {
      return { kind, tenantId: String(reply[1]), status: String(reply[2]) };
    }
    const [
      ,
      tenantId,
      memberId,
      keyId,
      tier,
      status,
      limit,
      count,
      oldest,
      allowed,
      retryAt,
      views,
      anniversary,
      used,
    ] = reply.map(String);
    return {
      kind: "ok",
      tenantId: tenantId as string,
      memberId: memberId as string,
      keyId: keyId as string,
      tier: tier as string,
      status: status as string,
      window: rateWindow(
        Number(limit),
        Number(count),
        Number(oldest),
        allowed === "1",
        Number(retryAt),
      ),
      leadViewsPerMonth: Number(views),
      billingAnniversary: anniversary as string,
      leadViewsUsed: used ? Number(used) : undefined,
    };
  }

  return {
    async authorize(keyHash: string, now = Date.now()): Promise<Authorization> {
      return authorization(await edge.thAuthorize(`th:key:${keyHash}`, ...windowArgs(now)));
    },

    /**
     * The same answer for a dashboard session: no key lookup, the same tenant record, rolling
     * minute and lead-view counter. `keyId` in the answer is the session id.
     */
    async authorizeSession(
      session: { tenantId: string; memberId: string; sessionId: string },
      now = Date.now(),
    ): Promise<Authorization> {
      return authorization(
        await edge.thAuthorizeSession(
          `th:session:${session.sessionId}`,
          ...windowArgs(now),
          session.tenantId,
          session.memberId,
          session.sessionId,
        ),
      );
    },

    /** Sign-out: the session's tokens stop working on every instance until they expire. */
    async revokeSession(sessionId: string, ttlSeconds: number) {
      await redis.set(`th:session:${sessionId}`, "revoked", "EX", Math.max(1, ttlSeconds));
    },

    async isSessionRevoked(sessionId: string): Promise<boolean> {
      return (await redis.exists(`th:session:${sessionId}`)) === 1;
    },

    async limitIp(
      scope: "public" | "authfail",
      ip: string,
      limit: number,
      now = Date.now(),
    ): Promise<RateWindow> {
      const [max, count, oldest, allowed, retryAt] = (
        await edge.thIpLimit(`th:rlip:${scope}:${ip}`, now, uniqueMember(now), WINDOW_MS, limit)
      ).map(Number);
      return rateWindow(
        max as number,
        count as number,
        oldest as number,
        allowed === 1,
        retryAt as number,
      );
    },

    async putKey(
      keyHash: string,
      record: { tenantId: string; memberId: string; keyId: string; revoked: boolean },
    ) {
      await edge.thPutKey(
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

    async putUnknown(keyHash: string) {
      await redis
        .multi()
        .hset(`th:key:${keyHash}`, "unknown", "1")
        .expire(`th:key:${keyHash}`, 60)
        .exec();
    },

    async putTenant(tenant: TenantChanged) {
      await edge.thPutTenant(
        `th:tenant:${tenant.tenant_id}`,
        String(tenant.revision),
        tenant.tier,
        tenant.status,
        String(tenant.limits.rate_per_minute),
        String(tenant.limits.lead_views_per_month),
        tenant.billing_anniversary ?? "",
        String(options.tenantTtlSeconds),
      );
    },

    async forgetTenant(tenantId: string) {
      await redis.del(`th:tenant:${tenantId}`);
    },
  };
}

export type EdgeStore = ReturnType<typeof createEdgeStore>;
