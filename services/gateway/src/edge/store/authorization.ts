import { LEAD_VIEW_COUNTER_PREFIX } from "@th/quota";
import type { Redis } from "ioredis";
import { type RateWindow, rateWindow, SLIDE_LUA } from "./rolling-minute.ts";

if (!/^[\w:.-]+$/.test(LEAD_VIEW_COUNTER_PREFIX)) {
  throw new Error("the lead-view counter prefix must be safe to write into a script literal");
}

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
  -- A suspended tenant is admitted, its window and quota read: its free operations and its
  -- billing go on; the edge refuses its paid reads (edge/suspension.ts).
  if t[2] ~= 'trialing' and t[2] ~= 'active' and t[2] ~= 'suspended' then return tenant end
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
export const AUTHORIZE_BATCH_LUA = `${SLIDE_LUA}${TENANT_WINDOW_LUA}
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
 * up: KEYS[1] is the session's revocation mark (set at sign-out), KEYS[2] the member's (set at
 * removal), KEYS[3] the member's session epoch mark (raised by a password change or reset);
 * ARGV[1] the key prefix, ARGV[2] now (ms), ARGV[3] today's calendar, ARGV[4..6] the tenant,
 * member and session id, ARGV[7] how close to its expiry (ms) a tenant record asks for a refresh
 * (reported, not acted on: a session that misses fetches the tenant itself), ARGV[8] the epoch
 * the token was issued at.
 */
export const AUTHORIZE_SESSION_LUA = `${SLIDE_LUA}${TENANT_WINDOW_LUA}
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then return 'revoked' end
if tonumber(redis.call('GET', KEYS[3]) or '-1') > tonumber(ARGV[8]) then return 'revoked' end
local answer = authorizeTenant({ARGV[4], ARGV[5], ARGV[6]}, tonumber(ARGV[2]), ARGV[1], ARGV[3], tonumber(ARGV[7]))
saveWindows()
return answer
`;

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

/** The scripts behind `authorize` and `authorizeSession`, on the edge's connection. */
export type AuthorizationRedis = Redis & {
  /** numkeys, the key records, then ARGV (see AUTHORIZE_BATCH_LUA). */
  thAuthorizeBatch(...args: (string | number)[]): Promise<string[]>;
  thAuthorizeSession(key: string, ...args: (string | number)[]): Promise<string>;
};

/** One answer of TENANT_WINDOW_LUA's line-separated form, read back. */
export function authorizationOf(reply: string): Authorization {
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
    window: rateWindow(Number(fields[6]), Number(fields[7]), Number(fields[8]), fields[9] === "1"),
    leadViewsPerMonth: Number(fields[10]),
    billingAnniversary: fields[11] as string,
    leadViewsUsed: used === "" ? undefined : Number(used),
    refreshDue: fields[13] === "1",
  };
}

/** What the authorization scripts are told besides the caller: see AUTHORIZE_BATCH_LUA. */
export interface AuthorizationContext {
  /** The key prefix of the connection and `th:`: keys built inside a script are not prefixed. */
  prefix: string;
  /** How close to its expiry (ms) a tenant record asks for a background refresh. */
  refreshBelowMs: number;
  /** Today's calendar facts (see calendar.ts). */
  calendarOf: (now: number) => string;
}

interface PendingAuthorization {
  keyHash: string;
  now: number;
  resolve: (answer: Authorization) => void;
  reject: (error: unknown) => void;
}

const MAX_BATCH = 512;

/**
 * Key authorizations wait here until the event loop's check phase and then go to Redis as one
 * script call, in arrival order: under load a turn of the loop brings many requests, and one
 * call costs Redis and the client far less than one per request. No request waits longer than
 * it would have for its own call, which the pipelined connection would send at the same moment
 * (the batch itself skips the pipeline: see EDGE_REDIS_OPTIONS).
 */
export function batchedKeyAuthorization(
  redis: AuthorizationRedis,
  context: AuthorizationContext,
  onAuthorizeBatch?: (size: number) => void,
) {
  const { prefix, refreshBelowMs, calendarOf } = context;
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
    onAuthorizeBatch?.(batch.length);
    redis.thAuthorizeBatch(...args).then(
      (answers) => {
        for (let index = 0; index < batch.length; index++) {
          const entry = batch[index] as PendingAuthorization;
          try {
            entry.resolve(authorizationOf(answers[index] as string));
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
  };
}

/** Dashboard sessions, judged one request at a time by AUTHORIZE_SESSION_LUA. */
export function sessionAuthorization(redis: AuthorizationRedis, context: AuthorizationContext) {
  const { prefix, refreshBelowMs, calendarOf } = context;
  return {
    /**
     * The same answer for a dashboard session: no key lookup, the same tenant record, rolling
     * minute and lead-view counter. `keyId` in the answer is the session id.
     */
    async authorizeSession(
      session: { tenantId: string; memberId: string; sessionId: string; epoch: number },
      now = Date.now(),
    ): Promise<Authorization> {
      return authorizationOf(
        await redis.thAuthorizeSession(
          `th:session:${session.sessionId}`,
          `th:member-sessions-ended:${session.memberId}`,
          `th:member-epoch:${session.memberId}`,
          prefix,
          Math.floor(now),
          calendarOf(now),
          session.tenantId,
          session.memberId,
          session.sessionId,
          refreshBelowMs,
          session.epoch,
        ),
      );
    },
  };
}
