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
 * - `member-sessions-ended:<member id>`  a removed member, until their access tokens expire
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
 * A script may judge many requests (see AUTHORIZE_BATCH_LUA): `windowOf` reads a window's hash
 * once per script, `slide(w, limit, now)` judges one request against it in order, and
 * `saveWindows()` writes each touched hash back once at the end. `slide` returns the requests in
 * the minute with this one (exact up to the limit, capped above it), whether this one is
 * allowed, and the oldest kept millisecond.
 */
const SLIDE_LUA = `
local windowByState = {}
local touchedWindows = {}
local function windowOf(times, state)
  local w = windowByState[state]
  if w then return w end
  local s = redis.call('HMGET', state, 'n', 'm', 'o', 'b', 'e')
  local total = tonumber(s[1]) or 0
  w = {times = times, state = state, total = total, newest = tonumber(s[2]),
    oldest = tonumber(s[3]), base = tonumber(s[4]) or total, extended = tonumber(s[5]) or 0,
    latest = 0}
  windowByState[state] = w
  touchedWindows[#touchedWindows + 1] = w
  return w
end
local function slide(w, limit, now)
  local edge = now - ${WINDOW_MS}
  if w.oldest and w.oldest <= edge then
    redis.call('ZREMRANGEBYSCORE', w.times, '-inf', edge)
    local head = redis.call('ZRANGE', w.times, 0, 0, 'WITHSCORES')
    if head[1] then
      w.base = tonumber(head[1])
      w.oldest = tonumber(head[2])
    else
      w.base = w.total
      w.oldest = nil
    end
  end
  local before = w.total - w.base
  if not w.newest or now > w.newest then
    redis.call('ZADD', w.times, now, w.total)
    w.newest = now
    if not w.oldest then
      w.oldest = now
      w.base = w.total
    end
  end
  w.total = w.total + 1
  local keep = math.max(limit, 1)
  if w.total - w.base > keep then
    while true do
      local two = redis.call('ZRANGE', w.times, 0, 1, 'WITHSCORES')
      if not two[3] or w.total - tonumber(two[3]) < keep then break end
      redis.call('ZREMRANGEBYRANK', w.times, 0, 0)
      w.base = tonumber(two[3])
      w.oldest = tonumber(two[4])
    end
  end
  if now > w.latest then w.latest = now end
  local allowed = 0
  if before < limit then allowed = 1 end
  return w.total - w.base, allowed, w.oldest
end
-- The TTL only collects idle windows, so it is pushed at most once a second, a second longer
-- than the minute.
local function saveWindows()
  for _, w in ipairs(touchedWindows) do
    if w.latest >= w.extended + 1000 then
      redis.call('HSET', w.state, 'n', w.total, 'm', w.newest, 'o', w.oldest, 'b', w.base, 'e', w.latest)
      redis.call('PEXPIRE', w.times, ${WINDOW_MS + 1000})
      redis.call('PEXPIRE', w.state, ${WINDOW_MS + 1000})
    else
      redis.call('HSET', w.state, 'n', w.total, 'm', w.newest, 'o', w.oldest, 'b', w.base)
    end
  end
end
`;

/**
 * What the edge needs about one caller: the tenant's tier and caps, the tenant's rolling minute,
 * and the month's lead-view counter. `rec` is {tenant id, member id, key id}; `prefix` the key
 * prefix; `calendar` today's "year month day days-in-month days-in-previous-month". Tenant
 * records and counters are read once per script. The answer is one line-separated string: one
 * bulk reply decodes for less than thirteen (every field is an id, an enum, a number or a date,
 * none can hold a line break, and the reader checks the count).
 */
const TENANT_WINDOW_LUA = `
local tenantById = {}
local function tenantOf(id, prefix, calendar, refreshBelow)
  local cached = tenantById[id]
  if cached then return cached end
  local t = redis.call('HMGET', prefix .. 'tenant:' .. id, 'tier', 'status', 'rate_per_minute', 'lead_views_per_month', 'billing_anniversary')
  local tenant = {record = t}
  tenantById[id] = tenant
  -- A record without a readable cap counts as missing, so the edge fetches it afresh; judging
  -- by it would fail the script, and with it every request of the batch.
  if not t[1] or not tonumber(t[3]) then
    tenant.missing = true
    return tenant
  end
  if t[2] ~= 'trialing' and t[2] ~= 'active' then return tenant end
  tenant.limit = tonumber(t[3])
  tenant.window = windowOf(prefix .. 'rlt:' .. id, prefix .. 'rlc:' .. id)
  -- The month's lead-view counter. The period starts on the anniversary's day of this month
  -- (clamped to the month's length) or, before that day, of the previous month.
  local used = ''
  if t[5] and string.len(t[5]) == 10 then
    local anniversary = tonumber(string.sub(t[5], 9, 10))
    local ys, ms, ds, dim, dpm = string.match(calendar, '(%d+) (%d+) (%d+) (%d+) (%d+)')
    local y, m, d = tonumber(ys), tonumber(ms), tonumber(ds)
    local startDay = math.min(anniversary, tonumber(dim))
    if d < startDay then
      m = m - 1
      if m == 0 then m = 12; y = y - 1 end
      startDay = math.min(anniversary, tonumber(dpm))
    end
    used = redis.call('GET', prefix .. '${LEAD_VIEW_COUNTER_PREFIX}' .. id .. ':' .. string.format('%04d-%02d-%02d', y, m, startDay)) or ''
  end
  -- A record near its expiry asks the edge to fetch it afresh in the background, so a busy
  -- tenant's requests never wait for the lookup its expiry would otherwise cost.
  local ttl = redis.call('PTTL', prefix .. 'tenant:' .. id)
  local refresh = '0'
  if ttl >= 0 and ttl < refreshBelow then refresh = '1' end
  -- Integers print exactly through string concatenation (Lua's %.14g covers millisecond times).
  tenant.tail = '\\n' .. (t[4] or '') .. '\\n' .. (t[5] or '') .. '\\n' .. used .. '\\n' .. refresh
  return tenant
end
local function authorizeTenant(rec, now, prefix, calendar, refreshBelow)
  local tenant = tenantOf(rec[1], prefix, calendar, refreshBelow)
  local t = tenant.record
  if tenant.missing then return 'miss' end
  if not tenant.window then return 'inactive\\n' .. rec[1] .. '\\n' .. t[2] end
  local count, allowed, oldest = slide(tenant.window, tenant.limit, now)
  return 'ok\\n' .. rec[1] .. '\\n' .. rec[2] .. '\\n' .. rec[3] .. '\\n' .. t[1] .. '\\n' .. t[2] .. '\\n' ..
    t[3] .. '\\n' .. count .. '\\n' .. oldest .. '\\n' .. allowed .. tenant.tail
end
`;

/**
 * Every API-key request that reached the edge in one turn of the event loop, judged in one
 * script and in arrival order: KEYS are the key records, ARGV[1] the key prefix, ARGV[2] today's
 * calendar, ARGV[3] how close to its expiry (ms) a tenant record asks for a refresh, ARGV[3 + i]
 * the time (ms) of request i. Each request still waits for exactly one
 * round trip; the tenant's window, tier record and counter are read and written once per batch
 * instead of once per request.
 */
const AUTHORIZE_BATCH_LUA = `${SLIDE_LUA}${TENANT_WINDOW_LUA}
local answers = {}
local recordByKey = {}
for i = 1, #KEYS do
  local rec = recordByKey[KEYS[i]]
  if not rec then
    rec = redis.call('HMGET', KEYS[i], 'tenant_id', 'member_id', 'key_id', 'revoked', 'unknown')
    recordByKey[KEYS[i]] = rec
  end
  if rec[5] == '1' then answers[i] = 'unknown'
  elseif not rec[1] then answers[i] = 'miss'
  elseif rec[4] == '1' then answers[i] = 'revoked'
  else answers[i] = authorizeTenant(rec, tonumber(ARGV[3 + i]), ARGV[1], ARGV[2], tonumber(ARGV[3])) end
end
saveWindows()
return answers
`;

/**
 * A dashboard session names its tenant and member in a signed token, so there is no key to look
 * up: KEYS[1] is the session's revocation mark (set at sign-out); ARGV[1] the key prefix, ARGV[2]
 * now (ms), ARGV[3] today's calendar, ARGV[4..6] the tenant, member and session id, ARGV[7]
 * how close to its expiry (ms) a tenant record asks for a refresh (reported, not acted on: a
 * session that misses fetches the tenant itself).
 */
const AUTHORIZE_SESSION_LUA = `${SLIDE_LUA}${TENANT_WINDOW_LUA}
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then return 'revoked' end
local answer = authorizeTenant({ARGV[4], ARGV[5], ARGV[6]}, tonumber(ARGV[2]), ARGV[1], ARGV[3], tonumber(ARGV[7]))
saveWindows()
return answer
`;

/** The same rolling minute per client IP: KEYS[1..2] the window, ARGV[1] now, ARGV[2] the limit. */
const IP_LIMIT_LUA = `${SLIDE_LUA}
local limit = tonumber(ARGV[2])
local count, allowed, oldest = slide(windowOf(KEYS[1], KEYS[2]), limit, tonumber(ARGV[1]))
saveWindows()
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
      /** The tenant's cached record is near its expiry: fetch it afresh, without waiting. */
      refreshDue: boolean;
    };

type EdgeRedis = Redis & {
  /** numkeys, the key records, then ARGV (see AUTHORIZE_BATCH_LUA). */
  thAuthorizeBatch(...args: (string | number)[]): Promise<string[]>;
  thAuthorizeSession(key: string, ...args: (string | number)[]): Promise<string>;
  thIpLimit(times: string, state: string, now: number, limit: number): Promise<number[]>;
  thPutKey(
    key: string,
    tenantId: string,
    memberId: string,
    keyId: string,
    revoked: string,
  ): Promise<number>;
  thPutTenant(key: string, ...args: string[]): Promise<number>;
};

interface PendingAuthorization {
  keyHash: string;
  now: number;
  resolve: (answer: Authorization) => void;
  reject: (error: unknown) => void;
}

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

/**
 * Options for the edge's own Redis connection: auto-pipelining for the calls requests make one by
 * one, but not for the batch, which is already one call per turn of the event loop and is
 * written as soon as it is flushed instead of waiting another turn for the pipeline.
 */
export const EDGE_REDIS_OPTIONS = {
  enableAutoPipelining: true,
  autoPipeliningIgnoredCommands: ["thAuthorizeBatch"],
};

export interface EdgeStoreOptions {
  tenantTtlSeconds: number;
  /** Called with the number of key authorizations each script call judged. */
  onAuthorizeBatch?: (size: number) => void;
}

export function createEdgeStore(redis: Redis, options: EdgeStoreOptions) {
  const edge = redis as EdgeRedis;
  if (!("thAuthorizeBatch" in edge)) {
    // Without numberOfKeys the first argument says how many keys follow.
    redis.defineCommand("thAuthorizeBatch", { lua: AUTHORIZE_BATCH_LUA });
    redis.defineCommand("thAuthorizeSession", { numberOfKeys: 2, lua: AUTHORIZE_SESSION_LUA });
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

  // A tenant record in its last third asks for a background refresh (see TENANT_WINDOW_LUA).
  const refreshBelowMs = Math.floor((options.tenantTtlSeconds * 1000) / 3);

  function windowArgs(now: number): (string | number)[] {
    return [prefix, Math.floor(now), calendarOf(now)];
  }

  /**
   * Key authorizations wait here until the event loop's check phase and then go to Redis as one
   * script call, in arrival order: under load a turn of the loop brings many requests, and one
   * call costs Redis and the client far less than one per request. No request waits longer than
   * it would have for its own call, which the pipelined connection would send at the same moment
   * (the batch itself skips the pipeline: see EDGE_REDIS_OPTIONS).
   */
  const MAX_BATCH = 512;
  let pending: PendingAuthorization[] = [];
  let pendingCalendar = "";

  function flush(): void {
    if (pending.length === 0) {
      return;
    }
    const batch = pending;
    pending = [];
    const args: (string | number)[] = [batch.length];
    for (const entry of batch) {
      args.push(`th:key:${entry.keyHash}`);
    }
    args.push(prefix, pendingCalendar, refreshBelowMs);
    for (const entry of batch) {
      args.push(entry.now);
    }
    options.onAuthorizeBatch?.(batch.length);
    edge.thAuthorizeBatch(...args).then(
      (answers) => {
        for (let index = 0; index < batch.length; index++) {
          const entry = batch[index] as PendingAuthorization;
          try {
            entry.resolve(authorization(answers[index] as string));
          } catch (error) {
            entry.reject(error);
          }
        }
      },
      (error: unknown) => {
        for (const entry of batch) {
          entry.reject(error);
        }
      },
    );
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
    if (kind !== "ok" || fields.length !== 14) {
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
      refreshDue: fields[13] === "1",
    };
  }

  return {
    // Not async: an async function returning this promise would wrap it in a second one and
    // cost each request two more microtask turns before its answer is seen.
    authorize(keyHash: string, now = Date.now()): Promise<Authorization> {
      return new Promise((resolve, reject) => {
        const calendar = calendarOf(now);
        if (pending.length > 0 && (pending.length >= MAX_BATCH || calendar !== pendingCalendar)) {
          flush();
        }
        if (pending.length === 0) {
          pendingCalendar = calendar;
          setImmediate(flush);
        }
        pending.push({ keyHash, now: Math.floor(now), resolve, reject });
      });
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
          `th:member-sessions-ended:${session.memberId}`,
          ...windowArgs(now),
          session.tenantId,
          session.memberId,
          session.sessionId,
          refreshBelowMs,
        ),
      );
    },

    /** Sign-out: the session's tokens stop working on every instance until they expire. */
    async revokeSession(sessionId: string, ttlSeconds: number) {
      await redis.set(`th:session:${sessionId}`, "revoked", "EX", Math.max(1, ttlSeconds));
    },

    /**
     * A removed member: every session of theirs stops working on every instance at once, not when
     * its access token would next be refreshed.
     */
    async endMemberSessions(memberId: string, ttlSeconds: number) {
      await redis.set(`th:member-sessions-ended:${memberId}`, "1", "EX", Math.max(1, ttlSeconds));
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
