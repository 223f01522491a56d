import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { leadViewDayKey } from "./day-keys.ts";

/**
 * Lead-view metering in Redis. A lead-view is one unique (tenant, folio, UTC day); the cap counts
 * lead-views per billing period. Layout, under the `th:` prefix:
 * - `lv:used:<tenant>:<period start day>`  lead-views used in the period (TTL: period end + 7 d)
 * - `lv:day:<tenant>:<UTC day>`            folios already charged that day (TTL: 2 days)
 * - `lv:pend:<tenant>:<UTC day>`           folio -> "<holders>|<ms>" for charges still in
 *                                          their settle window (TTL: two windows)
 * The first two are a cache of the quota ledger: when the period's counter is missing (first use,
 * expiry, a flushed Redis) the meter seeds it from the ledger before it reserves anything.
 *
 * A charge is not final until its reader has recorded it, and a reader that cannot record gives
 * it back. Meanwhile the folio looks charged to everyone else, so a concurrent read of it would be
 * free if the first one then gave it back. Hence the pending entries: a read of a folio another
 * reservation charged less than a settle window ago is told it is unsettled, must record the view
 * itself (the ledger keeps one per tenant, folio and day), and joins the charge's holders: the
 * reservation that charged it, then each that shared it ("<charger>,<sharer>,...|<ms>"). A
 * holder giving the folio back only leaves the list (the charger's slot stays, empty, so no
 * sharer passes for the charger); the last one out gives the folio back, within the window only,
 * after it the charge stands. So a folio whose readers all failed goes back once, and stays while
 * one of them may still record it. The same reservation asking again (a command resent after a
 * lost reply, or several calls for one piece of work) gets its own charges back as charged, so a
 * resend never turns a charge into a free read; a sharer asking again is still told unsettled,
 * and listed once.
 *
 * Past MAX_HOLDERS an entry becomes "shared|<ms>", which is also what an earlier meter wrote for
 * every shared folio: nobody may give it back (the safe side: the counter keeps a view the ledger
 * may lack) and any settlement removes it. An earlier meter, during a rolling upgrade, takes the
 * holders of a shared entry for one owner that is no reservation: it gives nothing back and
 * settles nothing of it, and marks it "shared" when it shares it, which keeps the charge too.
 *
 * A charge whose view the broker has acknowledged can no longer be given back, so its reader
 * settles it (`settle`): the pending entries go at once instead of at the end of the window, and
 * a later read of the folio that day is free and records nothing. Without that, every read of a
 * folio in the five minutes after its first would record a view the ledger keeps as a runner-up.
 */

/**
 * The most holders a pending entry names; past them it becomes "shared" (see the top of the
 * file), which bounds its size and the cost of reading it on every read of a popular folio.
 */
const MAX_HOLDERS = 16;

// A pending entry is "<holders>|<ms>"; one that does not parse counts as settled long ago. The
// holders are "<charger>" or "<charger>,<sharer>,..." (reservation ids hold neither ',' nor
// '|'), the charger's slot empty once it left; "shared" is the legacy entry nobody may give back.
const PENDING_LUA = `
local function pending(value)
  local bar = value and string.find(value, '|', 1, true)
  if not bar then return nil, 0 end
  return string.sub(value, 1, bar - 1), tonumber(string.sub(value, bar + 1)) or 0
end
local function charger(holders)
  local comma = string.find(holders, ',', 1, true)
  if comma then return string.sub(holders, 1, comma - 1) end
  return holders
end
local function sharerAt(holders, reservation)
  return string.find(holders .. ',', ',' .. reservation .. ',', 1, true)
end
-- The holders without the reservation, or nil when it holds none of the charge.
local function without(holders, reservation)
  if holders == 'shared' then return nil end
  if charger(holders) == reservation then return string.sub(holders, #reservation + 1) end
  local at = sharerAt(holders, reservation)
  if not at then return nil end
  return string.sub(holders, 1, at - 1) .. string.sub(holders, at + #reservation + 1)
end
`;

/**
 * One reservation (see `LeadViewMeter.reserve`): keys k1 (period counter), k2 (the day's folios),
 * k3 (pending charges); `nowText` the time in ms as written into pending entries; the folios are
 * ARGV[first..last].
 */
const RESERVE_ONE_LUA = `
local maxHolders = ${MAX_HOLDERS}
local extended = {}
local function reserveOne(k1, k2, k3, cap, dayTtl, reservation, nowText, settle, first, last)
  local usedText = redis.call('GET', k1)
  if not usedText then return {'unseeded'} end
  local now = tonumber(nowText)
  local used = tonumber(usedText)
  local fresh = {}
  local mine = {}
  local unsettled = {}
  local joined = {}
  local seen = {}
  for i = first, last do
    local folio = ARGV[i]
    if not seen[folio] then
      seen[folio] = true
      if redis.call('SISMEMBER', k2, folio) == 0 then
        fresh[#fresh + 1] = folio
      else
        local value = redis.call('HGET', k3, folio)
        if value then
          local holders, at = pending(value)
          if at + settle <= now then
            redis.call('HDEL', k3, folio)
          elseif charger(holders) == reservation then
            mine[#mine + 1] = folio
          else
            unsettled[#unsettled + 1] = folio
            if holders ~= 'shared' and not sharerAt(holders, reservation) then
              local _, commas = string.gsub(holders, ',', ',')
              if commas + 1 < maxHolders then
                joined[folio] = holders .. ',' .. reservation .. '|' .. at
              else
                joined[folio] = 'shared|' .. at
              end
            end
          end
        end
      end
    end
  end
  if #fresh > 0 and used + #fresh > cap then
    return {'exhausted', tostring(math.max(0, cap - used)), tostring(#fresh)}
  end
  for i = 1, #unsettled do
    local entry = joined[unsettled[i]]
    if entry then redis.call('HSET', k3, unsettled[i], entry) end
  end
  if #fresh > 0 then
    redis.call('SADD', k2, unpack(fresh))
    used = redis.call('INCRBY', k1, #fresh)
    local mark = reservation .. '|' .. nowText
    for i = 1, #fresh do redis.call('HSET', k3, fresh[i], mark) end
    -- Each call into Redis costs more than the Lua around it: a tenant's day keys get their
    -- expiry once per script, however many of its reservations the script carries.
    if not extended[k2] then
      redis.call('EXPIRE', k2, dayTtl)
      redis.call('PEXPIRE', k3, 2 * settle)
      extended[k2] = true
    end
  end
  local reply = {'ok', tostring(cap - used), tostring(#fresh + #mine)}
  for i = 1, #fresh do reply[#reply + 1] = fresh[i] end
  for i = 1, #mine do reply[#reply + 1] = mine[i] end
  for i = 1, #unsettled do reply[#reply + 1] = unsettled[i] end
  return reply
end
`;

/**
 * The reservations and settlements asked for in one turn of the event loop, in one call, run in
 * order as separate calls would run them: first the settlements, then each reservation.
 * ARGV[1] the settle window (ms), ARGV[2] the day set's TTL (s), ARGV[3] the settlement count S,
 * then S triples (index into KEYS of a pending hash, reservation, folio), then for each
 * reservation i: cap, reservation, now (ms), folio count, the folios; its keys are KEYS[3i-2..3i].
 * A settlement removes a pending entry its reservation holds, as charger or sharer, or a legacy
 * "shared" one (the settling reader recorded a view of the folio, which the broker acknowledged,
 * so the charge is final). Answers one reply per reservation.
 */
const METER_BATCH_LUA = `${PENDING_LUA}${RESERVE_ONE_LUA}
local settle = tonumber(ARGV[1])
local dayTtl = ARGV[2]
local pos = 4
for i = 1, tonumber(ARGV[3]) do
  local key = KEYS[tonumber(ARGV[pos])]
  local holders = pending(redis.call('HGET', key, ARGV[pos + 2]))
  if holders and (holders == 'shared' or without(holders, ARGV[pos + 1])) then
    redis.call('HDEL', key, ARGV[pos + 2])
  end
  pos = pos + 3
end
local replies = {}
local r = 0
while pos <= #ARGV do
  r = r + 1
  local count = tonumber(ARGV[pos + 3])
  replies[r] = reserveOne(KEYS[3 * r - 2], KEYS[3 * r - 1], KEYS[3 * r], tonumber(ARGV[pos]),
    dayTtl, ARGV[pos + 1], ARGV[pos + 2], settle, pos + 4, pos + 3 + count)
  pos = pos + 4 + count
end
return replies
`;

// A holder leaving a charge others still hold only rewrites its entry; the last one out gives the
// folio back. The common case, a charge nobody shared, costs what it did before sharing was kept.
const RELEASE_LUA = `${PENDING_LUA}
local reservation = ARGV[1]
local now = tonumber(ARGV[2])
local settle = tonumber(ARGV[3])
local removed = 0
for i = 4, #ARGV do
  local holders, at = pending(redis.call('HGET', KEYS[3], ARGV[i]))
  local left = holders and at + settle > now and without(holders, reservation)
  if left == '' then
    removed = removed + redis.call('SREM', KEYS[2], ARGV[i])
    redis.call('HDEL', KEYS[3], ARGV[i])
  elseif left then
    redis.call('HSET', KEYS[3], ARGV[i], left .. '|' .. at)
  end
end
if removed > 0 and redis.call('EXISTS', KEYS[1]) == 1 then redis.call('DECRBY', KEYS[1], removed) end
return removed
`;

/**
 * Seeds only when absent, unless forced: a live counter is never overwritten by a late seed. The
 * day's folios are added to those Redis already holds, and a folio Redis holds that the ledger
 * has not recorded yet (its event is on its way) is counted on top of the ledger's figure, so it
 * stays charged and counted; only a forced seed, from a ledger proven complete, replaces both.
 */
const SEED_LUA = `
if ARGV[3] ~= '1' and redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local used = tonumber(ARGV[1])
if ARGV[3] == '1' then
  redis.call('DEL', KEYS[2])
else
  local recorded = {}
  for i = 5, #ARGV do recorded[ARGV[i]] = true end
  for _, folio in ipairs(redis.call('SMEMBERS', KEYS[2])) do
    if not recorded[folio] then used = used + 1 end
  end
end
redis.call('SET', KEYS[1], tostring(used), 'PX', ARGV[2])
for i = 5, #ARGV do redis.call('SADD', KEYS[2], ARGV[i]) end
if #ARGV >= 5 then redis.call('EXPIRE', KEYS[2], ARGV[4]) end
return 1
`;

const DAY_SET_TTL_SECONDS = 2 * 86_400;

/**
 * How long a charge may still be given back, and a concurrent read of its folio must record its
 * own view: longer than a publish with every retry of the Kafka client takes to fail.
 */
export const SETTLE_WINDOW_MS = 5 * 60_000;

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
  | {
      ok: true;
      /** Names this reservation's holds on its charges; only it may give them up (`release`). */
      reservation: string;
      /**
       * Folios this reservation charged (now, or in an earlier call with the same id): the reader
       * records a view for each or gives them back.
       */
      charged: string[];
      /**
       * Folios another reservation charged moments ago, not final yet: the reader records a view
       * for each too (the ledger keeps one), or gives up its hold on them (`release`); they go
       * back once no reader holds them.
       */
      unsettled: string[];
      remaining: number;
    }
  | { ok: false; remaining: number; needed: number };

const DAY_MS = 86_400_000;
/** What a reservation asks the meter for. */
interface ReserveInput {
  tenantId: string;
  cap: number;
  period: Period;
  day: string;
  folios: readonly string[];
  /** Continues an earlier reservation (several calls for one piece of work). */
  reservation?: string;
}

/**
 * Charges the folios not yet viewed today, all or none: when the period's remaining lead-views
 * cannot cover every new folio, nothing is charged. Atomic under any concurrency, so the cap is
 * never exceeded. An unseeded counter is seeded from the ledger and the charge tried again.
 */
async function reserveViews(
  input: ReserveInput,
  meter: {
    reserveBatch: (keys: readonly [string, string, string], args: string[]) => Promise<unknown[]>;
    keysOf: (tenantId: string, period: Period, day: string) => readonly [string, string, string];
    ensureSeeded: (tenantId: string, period: Period, day: string) => Promise<void>;
    now: () => number;
  },
): Promise<Reservation> {
  const reservation = input.reservation ?? randomUUID();
  for (let attempt = 0; attempt < 3; attempt++) {
    const reply = await meter.reserveBatch(meter.keysOf(input.tenantId, input.period, input.day), [
      String(input.cap),
      reservation,
      String(meter.now()),
      String(input.folios.length),
      ...input.folios,
    ]);
    const [status, remaining, count, ...rest] = reply.map(String);
    if (status === "unseeded") {
      await meter.ensureSeeded(input.tenantId, input.period, input.day);
      continue;
    }
    if (status === "exhausted") {
      return { ok: false, remaining: Number(remaining), needed: Number(count) };
    }
    const charged = Number(count);
    return {
      ok: true,
      reservation,
      charged: rest.slice(0, charged),
      unsettled: rest.slice(charged),
      // Below zero after a downgrade, where only views already charged today are served.
      remaining: Math.max(0, Number(remaining)),
    };
  }
  throw new Error("lead-view counter could not be seeded");
}

/** Day strings by day number: a read asks for the same two or three on every call. */
const dayTexts = new Map<number, string>();

export function utcDay(at: Date): string {
  const number = Math.floor(at.getTime() / DAY_MS);
  let text = dayTexts.get(number);
  if (text === undefined) {
    text = at.toISOString().slice(0, 10);
    if (dayTexts.size >= 64) {
      dayTexts.clear();
    }
    dayTexts.set(number, text);
  }
  return text;
}

/**
 * The command the meter's batches go out as. It carries a whole turn of the event loop already,
 * so a connection that auto-pipelines should send it as it comes (`autoPipeliningIgnoredCommands`):
 * through the pipeline it would cost a pipeline object per call and wait another turn.
 */
export const METER_BATCH_COMMAND = "thLvBatch";

type MeterRedis = Redis & {
  thLvBatch(keyCount: number, ...args: string[]): Promise<string[][]>;
  thLvRelease(used: string, day: string, pending: string, ...args: string[]): Promise<number>;
  thLvSeed(used: string, day: string, ...args: string[]): Promise<number>;
};

export function createLeadViewMeter(
  redis: Redis,
  options: { loadUsage: UsageLoader; now?: () => number; settleWindowMs?: number },
) {
  const meter = redis as MeterRedis;
  if (!("thLvBatch" in meter)) {
    redis.defineCommand(METER_BATCH_COMMAND, { lua: METER_BATCH_LUA });
    redis.defineCommand("thLvRelease", { numberOfKeys: 3, lua: RELEASE_LUA });
    redis.defineCommand("thLvSeed", { numberOfKeys: 2, lua: SEED_LUA });
  }
  const now = options.now ?? Date.now;
  const settle = String(options.settleWindowMs ?? SETTLE_WINDOW_MS);
  const batches = meterBatches(meter, settle);
  const usedKey = (tenantId: string, period: Period) =>
    `th:${LEAD_VIEW_COUNTER_PREFIX}${tenantId}:${utcDay(period.start)}`;
  const dayKey = leadViewDayKey;
  const pendingKey = (tenantId: string, day: string) => `th:lv:pend:${tenantId}:${day}`;

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
    reserve: (input: ReserveInput): Promise<Reservation> =>
      reserveViews(input, {
        reserveBatch: (keys, args) => batches.reserve(keys, args),
        keysOf: (tenantId, period, day) => [
          usedKey(tenantId, period),
          dayKey(tenantId, day),
          pendingKey(tenantId, day),
        ],
        ensureSeeded,
        now,
      }),

    /**
     * Gives back views whose read did not complete (the event could not be recorded):
     * `reservation` leaves the holders of each folio's charge, and a folio no reader holds any
     * more goes back, only within the settle window. Returns how many went back.
     */
    async release(input: {
      tenantId: string;
      period: Period;
      day: string;
      reservation: string;
      folios: readonly string[];
    }): Promise<number> {
      if (input.folios.length === 0) {
        return 0;
      }
      return meter.thLvRelease(
        usedKey(input.tenantId, input.period),
        dayKey(input.tenantId, input.day),
        pendingKey(input.tenantId, input.day),
        input.reservation,
        String(now()),
        settle,
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

    /**
     * Settles a reservation's acknowledged views: its pending entries of `folios` (its own
     * charges and the shared ones it recorded too) go, so later reads of them that day are free.
     * It leaves with the turn's reservations, before them. A failed one costs nothing but its
     * purpose: the entries then settle at the end of the window.
     */
    settle(input: {
      tenantId: string;
      day: string;
      reservation: string;
      folios: readonly string[];
    }): Promise<void> {
      return batches.settle(pendingKey(input.tenantId, input.day), input.reservation, input.folios);
    },

    /** Writes ledger figures into Redis; `force` replaces live counters (used after a rebuild). */
    seed,
  };
}

interface QueuedReservation {
  keys: readonly [string, string, string];
  /** cap, reservation, now, folio count, the folios (see METER_BATCH_LUA). */
  args: readonly string[];
  resolve: (reply: string[]) => void;
  reject: (error: unknown) => void;
}

/** The most reservations, and ARGV entries, one call carries. */
const MAX_BATCH_RESERVATIONS = 256;
const MAX_BATCH_ARGS = 20_000;

/**
 * The reservations and settlements of one turn of the event loop, sent in one script call
 * (METER_BATCH_LUA) at its check phase, as the edge batches its key checks: under load a turn
 * brings many reads, and one call costs Redis and the client far less than one each, while no
 * read waits longer than its own call would have been queued behind the others.
 */
function meterBatches(meter: MeterRedis, settleWindow: string) {
  let reservations: QueuedReservation[] = [];
  let settlements: string[] = [];
  let settled: { resolve: () => void; reject: (error: unknown) => void }[] = [];
  let args = 0;
  let scheduled = false;

  function flush(): void {
    scheduled = false;
    const batch = reservations;
    const triples = settlements;
    const waiting = settled;
    reservations = [];
    settlements = [];
    settled = [];
    args = 0;
    if (batch.length === 0 && triples.length === 0) {
      return;
    }
    const keys: string[] = batch.flatMap((entry) => entry.keys);
    const keyIndex = new Map<string, string>();
    const settleArgs: string[] = [];
    for (let at = 0; at < triples.length; at += 3) {
      const key = triples[at] as string;
      let index = keyIndex.get(key);
      if (index === undefined) {
        keys.push(key);
        index = String(keys.length);
        keyIndex.set(key, index);
      }
      settleArgs.push(index, triples[at + 1] as string, triples[at + 2] as string);
    }
    const reserveArgs = batch.flatMap((entry) => entry.args);
    meter
      .thLvBatch(
        keys.length,
        ...keys,
        settleWindow,
        String(DAY_SET_TTL_SECONDS),
        String(triples.length / 3),
        ...settleArgs,
        ...reserveArgs,
      )
      .then(
        (replies) => {
          batch.forEach((entry, index) => {
            entry.resolve((replies[index] ?? []).map(String));
          });
          for (const entry of waiting) {
            entry.resolve();
          }
        },
        (error: unknown) => {
          for (const entry of [...batch, ...waiting]) {
            entry.reject(error);
          }
        },
      );
  }

  function queue(size: number): void {
    if (reservations.length >= MAX_BATCH_RESERVATIONS || args + size > MAX_BATCH_ARGS) {
      flush();
    }
    args += size;
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  }

  return {
    reserve(keys: QueuedReservation["keys"], reserveArgs: readonly string[]): Promise<string[]> {
      return new Promise((resolve, reject) => {
        queue(reserveArgs.length);
        reservations.push({ keys, args: reserveArgs, resolve, reject });
      });
    },
    settle(key: string, reservation: string, folios: readonly string[]): Promise<void> {
      if (folios.length === 0) {
        return Promise.resolve();
      }
      return new Promise((resolve, reject) => {
        queue(3 * folios.length);
        for (const folio of folios) {
          settlements.push(key, reservation, folio);
        }
        settled.push({ resolve, reject });
      });
    },
  };
}

export type LeadViewMeter = ReturnType<typeof createLeadViewMeter>;
