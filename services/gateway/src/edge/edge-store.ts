import type { TenantChanged } from "@th/contracts";
import { LEAD_VIEW_COUNTER_PREFIX } from "@th/quota";
import type { Redis } from "ioredis";

/**
 * The gateway's hot state in Redis, shared by every gateway instance. Each fact here can be
 * rebuilt: key records and tenant records from the keys service (or its events), rate windows
 * simply restart. Layout, under the `th:` prefix:
 * - `key:<hash>`     hash {tenant_id, member_id, key_id, revoked} or {unknown: 1} for 60 s
 * - `tenant:<id>`    hash {tier, status, rate_per_minute, lead_views_per_month, billing_anniversary, revision}, TTL
 * - `rlt:<tenant>` + `rlc:<tenant>` the tenant's rolling minute: a sorted set with one member
 *   per millisecond that saw requests, and a hash of running figures (see SLIDE_LUA)
 * - `rlipt:<scope>:<ip>` + `rlipc:<scope>:<ip>` the same per client IP for public calls and
 *   failed authentication
 * - `session:<id>`   a signed-out dashboard session, until its tokens would have expired
 */

const WINDOW_MS = 60_000;
if (!/^[\w:.-]+$/.test(LEAD_VIEW_COUNTER_PREFIX)) {
  throw new Error("the lead-view counter prefix must be safe to write into a script literal");
}

/**
 * The rolling minute, exact to the millisecond (the clock's resolution) in bounded memory.
 * Every request is counted, refused ones too, so hammering after a 429 pushes the reset further.
 *
 * The hash keeps `n`, the requests counted since the window's keys were created, `m` the newest
 * millisecond counted, `o` the oldest millisecond kept, `b` the requests counted before it, and
 * `e` when the TTL was last pushed. The sorted set has one member per millisecond with requests:
 * score the millisecond, member the value of `n` before its first request. The requests in the
 * minute are then `n` minus the member of the oldest millisecond still in it, so a millisecond
 * leaves with one ZREMRANGEBYSCORE and a request in an existing millisecond touches only the
 * hash. A request stamped earlier than the newest counted one (another gateway's clock a few
 * milliseconds behind) is counted at the newest one's millisecond, so the start counts stay in
 * order; it leaves the minute those few milliseconds late. The window is only as exact as the
 * gateways' clocks agree: a gateway whose clock runs ahead trims the minute by that much (NTP
 * keeps it to milliseconds), which is why the time comes from the caller and not from Redis:
 * tests and the edge share one injectable clock.
 *
 * A request is allowed while fewer than `limit` requests lie in the minute, so only the newest
 * `limit` can ever decide an answer: a millisecond is dropped as soon as the newer ones alone
 * hold `limit` requests. A window holds at most min(limit, 60,000) members however large the
 * cap or however hard the tenant retries, and over the cap its oldest millisecond holds the
 * limit-th newest request, whose leaving is the moment one more request fits.
 *
 * `slide(times, state, limit)` with ARGV[2] = now (ms) returns the requests in the minute with
 * this one (exact up to the limit, capped above it), whether this one is allowed, and the oldest
 * kept millisecond.
 */
const SLIDE_LUA = `
local function slide(times, state, limit)
  local now = tonumber(ARGV[2])
  local window = ${WINDOW_MS}
  local edge = now - window
  local s = redis.call('HMGET', state, 'n', 'm', 'o', 'b', 'e')
  local total = tonumber(s[1]) or 0
  local newest = tonumber(s[2])
  local oldest = tonumber(s[3])
  local base = tonumber(s[4]) or total
  local extended = tonumber(s[5]) or 0
  if oldest and oldest <= edge then
    redis.call('ZREMRANGEBYSCORE', times, '-inf', edge)
    local head = redis.call('ZRANGE', times, 0, 0, 'WITHSCORES')
    if head[1] then
      base = tonumber(head[1])
      oldest = tonumber(head[2])
    else
      base = total
      oldest = nil
    end
  end
  local before = total - base
  if not newest or now > newest then
    redis.call('ZADD', times, now, total)
    newest = now
    if not oldest then
      oldest = now
      base = total
    end
  end
  total = total + 1
  local keep = math.max(limit, 1)
  if total - base > keep then
    while true do
      local two = redis.call('ZRANGE', times, 0, 1, 'WITHSCORES')
      if not two[3] or total - tonumber(two[3]) < keep then break end
      redis.call('ZREMRANGEBYRANK', times, 0, 0)
      base = tonumber(two[3])
      oldest = tonumber(two[4])
    end
  end
  -- The TTL only collects idle windows, so it is pushed at most once a second, a second longer
  -- than the minute.
  if now >= extended + 1000 then
    redis.call('HSET', state, 'n', total, 'm', newest, 'o', oldest, 'b', base, 'e', now)
    redis.call('PEXPIRE', times, window + 1000)
    redis.call('PEXPIRE', state, window + 1000)
  else
    redis.call('HSET', state, 'n', total, 'm', newest, 'o', oldest, 'b', base)
  end
  local allowed = 0
  if before < limit then allowed = 1 end
  return total - base, allowed, oldest
end
`;

/**
 * One round trip answers everything the edge needs: which tenant the key belongs to, whether it
 * is revoked, the tenant's tier and caps, and the tenant's rolling minute. ARGV[1] is the key
 * prefix, ARGV[2] now (ms), ARGV[3] today's calendar (see TENANT_WINDOW_LUA). The answer is one
 * line-separated string: one bulk reply decodes for less than thirteen (every field is an id,
 * an enum, a number or a date, none can hold a line break, and the reader checks the count).
 */
const KEY_LOOKUP_LUA = `
local rec = redis.call('HMGET', KEYS[1], 'tenant_id', 'member_id', 'key_id', 'revoked', 'unknown')
if rec[5] == '1' then return 'unknown' end
if not rec[1] then return 'miss' end
if rec[4] == '1' then return 'revoked' end
`;

/**
 * A dashboard session names its tenant and member in a signed token, so there is no key to look
 * up: KEYS[1] is the session's revocation mark (set at sign-out), ARGV[4..6] the tenant,
 * member and session id. Everything after is the same tenant window and quota read as for keys.
 */
const SESSION_LOOKUP_LUA = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 'revoked' end
local rec = {ARGV[4], ARGV[5], ARGV[6]}
`;

const TENANT_WINDOW_LUA = `
local t = redis.call('HMGET', ARGV[1] .. 'tenant:' .. rec[1], 'tier', 'status', 'rate_per_minute', 'lead_views_per_month', 'billing_anniversary')
if not t[1] then return 'miss' end
if t[2] ~= 'trialing' and t[2] ~= 'active' then return 'inactive\\n' .. rec[1] .. '\\n' .. t[2] end
local limit = tonumber(t[3])
local count, allowed, oldest = slide(ARGV[1] .. 'rlt:' .. rec[1], ARGV[1] .. 'rlc:' .. rec[1], limit)
-- The month's lead-view counter, so the quota headers need no second round trip. The period
-- starts on the anniversary's day of this month (clamped to the month's length) or, before that
-- day, of the previous month. ARGV[3]: year, month, day, days in this month, days in the
-- previous month, space-separated.
local used = ''
if t[5] and string.len(t[5]) == 10 then
  local anniversary = tonumber(string.sub(t[5], 9, 10))
  local ys, ms, ds, dim, dpm = string.match(ARGV[3], '(%d+) (%d+) (%d+) (%d+) (%d+)')
  local y, m, d = tonumber(ys), tonumber(ms), tonumber(ds)
  local startDay = math.min(anniversary, tonumber(dim))
  if d < startDay then
    m = m - 1
    if m == 0 then m = 12; y = y - 1 end
    startDay = math.min(anniversary, tonumber(dpm))
  end
  used = redis.call('GET', ARGV[1] .. '${LEAD_VIEW_COUNTER_PREFIX}' .. rec[1] .. ':' .. string.format('%04d-%02d-%02d', y, m, startDay)) or ''
end
return table.concat({'ok', rec[1], rec[2], rec[3], t[1], t[2], string.format('%.0f', limit),
  string.format('%.0f', count), string.format('%.0f', oldest), allowed, t[4] or '', t[5] or '', used}, '\\n')
`;

const AUTHORIZE_LUA = SLIDE_LUA + KEY_LOOKUP_LUA + TENANT_WINDOW_LUA;
const AUTHORIZE_SESSION_LUA = SLIDE_LUA + SESSION_LOOKUP_LUA + TENANT_WINDOW_LUA;

/** The same rolling minute per client IP: KEYS[1..2] the window, ARGV[2] now, ARGV[3] the limit. */
const IP_LIMIT_LUA = `${SLIDE_LUA}
local limit = tonumber(ARGV[3])
local count, allowed, oldest = slide(KEYS[1], KEYS[2], limit)
return {limit, count, oldest, allowed}
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
  /** Requests in the rolling minute, this one included; exact up to `limit`, capped above it. */
  count: number;
  remaining: number;
  /**
   * Unix ms when the oldest request in the window leaves it; over the cap, when the limit-th
   * newest leaves (the older ones no longer change any answer).
   */
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
  thAuthorize(key: string, ...args: (string | number)[]): Promise<string>;
  thAuthorizeSession(key: string, ...args: (string | number)[]): Promise<string>;
  thIpLimit(
    times: string,
    state: string,
    prefix: string,
    now: number,
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

function rateWindow(limit: number, count: number, oldest: number, allowed: boolean): RateWindow {
  // Over the cap the oldest kept millisecond holds the limit-th newest request, so its leaving
  // is both when the minute resets and when one more request fits.
  const resetAtMs = oldest + WINDOW_MS;
  return {
    limit,
    count,
    remaining: limit > count ? limit - count : 0,
    resetAtMs,
    allowed,
    retryAtMs: allowed ? 0 : resetAtMs,
  };
}

export function createEdgeStore(redis: Redis, options: { tenantTtlSeconds: number }) {
  const edge = redis as EdgeRedis;
  if (!("thAuthorize" in edge)) {
    redis.defineCommand("thAuthorize", { numberOfKeys: 1, lua: AUTHORIZE_LUA });
    redis.defineCommand("thAuthorizeSession", { numberOfKeys: 1, lua: AUTHORIZE_SESSION_LUA });
    redis.defineCommand("thIpLimit", { numberOfKeys: 2, lua: IP_LIMIT_LUA });
    redis.defineCommand("thPutKey", { numberOfKeys: 1, lua: PUT_KEY_LUA });
    redis.defineCommand("thPutTenant", { numberOfKeys: 1, lua: PUT_TENANT_LUA });
  }
  // Keys built inside a script are not prefixed by ioredis, so the script is told the prefix.
  const prefix = `${redis.options.keyPrefix ?? ""}th:`;

  // The calendar facts of the lead-view lookup change once a UTC day, not once a request.
  let calendarDay = Number.NaN;
  let calendar = "";
  function calendarOf(now: number): string {
    const day = Math.floor(now / 86_400_000);
    if (day !== calendarDay) {
      const today = new Date(now);
      const year = today.getUTCFullYear();
      const month = today.getUTCMonth();
      calendar = [
        year,
        month + 1,
        today.getUTCDate(),
        new Date(Date.UTC(year, month + 1, 0)).getUTCDate(),
        new Date(Date.UTC(year, month, 0)).getUTCDate(),
      ].join(" ");
      calendarDay = day;
    }
    return calendar;
  }

  function windowArgs(now: number): (string | number)[] {
    return [prefix, Math.floor(now), calendarOf(now)];
  }

  function authorization(reply: string): Authorization {
    const fields = reply.split("\n");
    const kind = fields[0];
    if (kind === "miss" || kind === "unknown" || kind === "revoked") {
      return { kind };
    }
    if (kind === "inactive" && fields.length === 3) {
      return { kind, tenantId: fields[1] as string, status: fields[2] as string };
    }
    if (kind !== "ok" || fields.length !== 13) {
      throw new Error(`unexpected authorization answer of ${fields.length} fields`);
    }
    const used = fields[12] as string;
    return {
      kind: "ok",
      tenantId: fields[1] as string,
      memberId: fields[2] as string,
      keyId: fields[3] as string,
      tier: fields[4] as string,
      status: fields[5] as string,
      window: rateWindow(
        Number(fields[6]),
        Number(fields[7]),
        Number(fields[8]),
        fields[9] === "1",
      ),
      leadViewsPerMonth: Number(fields[10]),
      billingAnniversary: fields[11] as string,
      leadViewsUsed: used === "" ? undefined : Number(used),
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
      const [max, count, oldest, allowed] = (
        await edge.thIpLimit(
          `th:rlipt:${scope}:${ip}`,
          `th:rlipc:${scope}:${ip}`,
          "",
          Math.floor(now),
          limit,
        )
      ).map(Number);
      return rateWindow(max as number, count as number, oldest as number, allowed === 1);
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
