import type { Redis } from "ioredis";

/**
 * Lead-view metering in Redis. A lead-view is one unique (tenant, folio, UTC day); the cap counts
 * lead-views per billing period. Layout, under the `th:` prefix:
 * - `lv:used:<tenant>:<period start day>`  lead-views used in the period (TTL: period end + 7 d)
 * - `lv:day:<tenant>:<UTC day>`            folios already charged that day (TTL: 2 days)
 * Both are a cache of the quota ledger: when the period's counter is missing (first use, expiry,
 * a flushed Redis) the meter seeds it from the ledger before it reserves anything.
 */

const RESERVE_LUA = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {'unseeded'} end
local used = tonumber(redis.call('GET', KEYS[1]))
local cap = tonumber(ARGV[1])
local fresh = {}
local seen = {}
for i = 3, #ARGV do
  local folio = ARGV[i]
  if not seen[folio] and redis.call('SISMEMBER', KEYS[2], folio) == 0 then
    fresh[#fresh + 1] = folio
  end
  seen[folio] = true
end
if used + #fresh > cap then
  return {'exhausted', tostring(math.max(0, cap - used)), tostring(#fresh)}
end
if #fresh > 0 then
  redis.call('SADD', KEYS[2], unpack(fresh))
  redis.call('EXPIRE', KEYS[2], ARGV[2])
  used = redis.call('INCRBY', KEYS[1], #fresh)
end
local reply = {'ok', tostring(cap - used)}
for i = 1, #fresh do reply[#reply + 1] = fresh[i] end
return reply
`;

const RELEASE_LUA = `
local removed = 0
for i = 1, #ARGV do removed = removed + redis.call('SREM', KEYS[2], ARGV[i]) end
if removed > 0 and redis.call('EXISTS', KEYS[1]) == 1 then redis.call('DECRBY', KEYS[1], removed) end
return removed
`;

/** Seeds only when absent, unless forced: a live counter is never overwritten by a late seed. */
const SEED_LUA = `
if ARGV[3] ~= '1' and redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('DEL', KEYS[2])
for i = 5, #ARGV do redis.call('SADD', KEYS[2], ARGV[i]) end
if #ARGV >= 5 then redis.call('EXPIRE', KEYS[2], ARGV[4]) end
return 1
`;

const DAY_SET_TTL_SECONDS = 2 * 86_400;

/**
 * The period counter's key without its tenant and day; the edge's authorization script reads
 * the counter in the same round trip by building `th:` + this + `<tenant>:<period start day>`.
 */
export const LEAD_VIEW_COUNTER_PREFIX = "lv:used:";
const COUNTER_GRACE_MS = 7 * 86_400_000;

export interface Period {
  start: Date;
  end: Date;
}

export interface LedgerUsage {
  /** Lead-views recorded in the period. */
  used: number;
  /** Folios already charged on the given UTC day. */
  foliosToday: string[];
}

export type UsageLoader = (tenantId: string, period: Period, day: string) => Promise<LedgerUsage>;

export type Reservation =
  | { ok: true; charged: string[]; remaining: number }
  | { ok: false; remaining: number; needed: number };

export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

type MeterRedis = Redis & {
  thLvReserve(used: string, day: string, ...args: string[]): Promise<string[]>;
  thLvRelease(used: string, day: string, ...folios: string[]): Promise<number>;
  thLvSeed(used: string, day: string, ...args: string[]): Promise<number>;
};

export function createLeadViewMeter(redis: Redis, options: { loadUsage: UsageLoader }) {
  const meter = redis as MeterRedis;
  if (!("thLvReserve" in meter)) {
    redis.defineCommand("thLvReserve", { numberOfKeys: 2, lua: RESERVE_LUA });
    redis.defineCommand("thLvRelease", { numberOfKeys: 2, lua: RELEASE_LUA });
    redis.defineCommand("thLvSeed", { numberOfKeys: 2, lua: SEED_LUA });
  }
  const usedKey = (tenantId: string, period: Period) =>
    `th:${LEAD_VIEW_COUNTER_PREFIX}${tenantId}:${utcDay(period.start)}`;
  const dayKey = (tenantId: string, day: string) => `th:lv:day:${tenantId}:${day}`;

  async function seed(
    tenantId: string,
    period: Period,
    day: string,
    usage: LedgerUsage,
    force = false,
  ): Promise<boolean> {
    const ttlMs = Math.max(60_000, period.end.getTime() - Date.now() + COUNTER_GRACE_MS);
    const seeded = await meter.thLvSeed(
      usedKey(tenantId, period),
      dayKey(tenantId, day),
      String(usage.used),
      String(ttlMs),
      force ? "1" : "0",
      String(DAY_SET_TTL_SECONDS),
      ...usage.foliosToday,
    );
    return seeded === 1;
  }

  async function ensureSeeded(tenantId: string, period: Period, day: string) {
    await seed(tenantId, period, day, await options.loadUsage(tenantId, period, day));
  }

  return {
    /**
     * Charges the folios not yet viewed today, all or none: when the period's remaining
     * lead-views cannot cover every new folio, nothing is charged. Atomic under any concurrency,
     * so the cap is never exceeded.
     */
    async reserve(input: {
      tenantId: string;
      cap: number;
      period: Period;
      day: string;
      folios: readonly string[];
    }): Promise<Reservation> {
      for (let attempt = 0; attempt < 3; attempt++) {
        const reply = await meter.thLvReserve(
          usedKey(input.tenantId, input.period),
          dayKey(input.tenantId, input.day),
          String(input.cap),
          String(DAY_SET_TTL_SECONDS),
          ...input.folios,
        );
        const [status, remaining, ...rest] = reply.map(String);
        if (status === "unseeded") {
          await ensureSeeded(input.tenantId, input.period, input.day);
          continue;
        }
        if (status === "exhausted") {
          return { ok: false, remaining: Number(remaining), needed: Number(rest[0]) };
        }
        return { ok: true, charged: rest, remaining: Number(remaining) };
      }
      throw new Error("lead-view counter could not be seeded");
    },

    /** Gives back views whose read did not complete (the event could not be recorded). */
    async release(input: {
      tenantId: string;
      period: Period;
      day: string;
      folios: readonly string[];
    }) {
      if (input.folios.length === 0) {
        return;
      }
      await meter.thLvRelease(
        usedKey(input.tenantId, input.period),
        dayKey(input.tenantId, input.day),
        ...input.folios,
      );
    },

    /** Lead-views left in the period, for the quota headers; seeds from the ledger when needed. */
    async remaining(input: {
      tenantId: string;
      cap: number;
      period: Period;
      day: string;
    }): Promise<number> {
      let used = await redis.get(usedKey(input.tenantId, input.period));
      if (used === null) {
        await ensureSeeded(input.tenantId, input.period, input.day);
        used = await redis.get(usedKey(input.tenantId, input.period));
      }
      return Math.max(0, input.cap - Number(used ?? 0));
    },

    /** Writes ledger figures into Redis; `force` replaces live counters (used after a rebuild). */
    seed,
  };
}

export type LeadViewMeter = ReturnType<typeof createLeadViewMeter>;
