import type { Redis } from "ioredis";

const WINDOW_MS = 60_000;

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
 * A script may judge many requests (see AUTHORIZE_BATCH_LUA in authorization.ts): `windowOf`
 * reads a window's hash once per script, `slide(w, limit, now)` judges one request against it in
 * order, and `saveWindows()` writes each touched hash back once at the end. `slide` returns the
 * requests in the minute with this one (exact up to the limit, capped above it), whether this
 * one is allowed, and the oldest kept millisecond.
 */
export const SLIDE_LUA = `
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

/** The same rolling minute per client IP: KEYS[1..2] the window, ARGV[1] now, ARGV[2] the limit. */
export const IP_LIMIT_LUA = `${SLIDE_LUA}
local limit = tonumber(ARGV[2])
local count, allowed, oldest = slide(windowOf(KEYS[1], KEYS[2]), limit, tonumber(ARGV[1]))
saveWindows()
return {limit, count, oldest, allowed}
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

/** The script behind `limitIp`, on the edge's connection (see `defineEdgeScripts`). */
export type IpLimitRedis = Redis & {
  thIpLimit(times: string, state: string, now: number, limit: number): Promise<number[]>;
};

export function rateWindow(
  limit: number,
  count: number,
  oldest: number,
  allowed: boolean,
): RateWindow {
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

/** The rolling minute per client IP, for public calls and for failed authentication. */
export function ipLimits(redis: IpLimitRedis) {
  return {
    async limitIp(
      scope: "public" | "authfail",
      ip: string,
      limit: number,
      now = Date.now(),
    ): Promise<RateWindow> {
      const [max, count, oldest, allowed] = (
        await redis.thIpLimit(
          `th:rlipt:${scope}:${ip}`,
          `th:rlipc:${scope}:${ip}`,
          Math.floor(now),
          limit,
        )
      ).map(Number);
      return rateWindow(max as number, count as number, oldest as number, allowed === 1);
    },
  };
}
