import type { Redis } from "ioredis";
import { leadViewDayKey } from "./day-keys.ts";

// Folios asked about per Redis command: a 100,000-row export is checked in ten commands.
const CHUNK = 10_000;

/**
 * How many of `folios` the tenant has already viewed on `day`, so that reading them again that
 * day costs nothing: what prices an export by the new lead-views it would charge, not by its
 * rows. A folio another read charged moments ago counts as viewed, as the meter treats it. The
 * caller seeds the meter first (its quota headers do), so a Redis that lost the day still knows it.
 */
export function createViewedToday(redis: Redis) {
  return async (tenantId: string, day: string, folios: readonly string[]): Promise<number> => {
    const key = leadViewDayKey(tenantId, day);
    let viewed = 0;
    for (let start = 0; start < folios.length; start += CHUNK) {
      const flags = await redis.smismember(key, ...folios.slice(start, start + CHUNK));
      viewed += flags.reduce((sum: number, flag) => sum + flag, 0);
    }
    return viewed;
  };
}

export type ViewedToday = ReturnType<typeof createViewedToday>;
