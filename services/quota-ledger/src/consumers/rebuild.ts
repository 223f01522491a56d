import type { Bus } from "@th/bus";
import { contracts, utcDayOf } from "@th/contracts";
import type { Pool } from "@th/db";
import { createLeadViewMeter } from "@th/quota";
import type { Redis } from "ioredis";
import { createLedger } from "../db/ledger.ts";
import { withRebuildLock } from "../db/rebuild-lock.ts";
import {
  type CounterDifference,
  createShadowLedger,
  type DayCorrection,
  type PeriodDifference,
  type ShadowLedger,
  type ShadowRow,
} from "../db/shadow-ledger.ts";
import { createTenants } from "../db/tenants.ts";
import { currentPeriod } from "../domain/period.ts";
import { LEDGER_GROUP } from "./ledger.ts";

export interface RebuildDeps {
  pool: Pool;
  bus: Bus;
  redis: Redis;
  now?: () => Date;
  /** How long to wait for the live ledger to reach the offsets the replay read. */
  liveCatchUpTimeoutMs: number;
  /** The live ledger's consumer group (tests run their own). */
  liveGroup?: string;
  /**
   * Repair what differs: swap the rebuilt rows in, recount the periods and re-seed Redis.
   * Without it the rebuild only reports (a dry run).
   */
  apply?: boolean;
}

export interface RebuildReport {
  /** Events read from leadview.recorded. */
  events: number;
  /** Distinct (tenant, day, folio) lead-views among them. */
  leadViews: number;
  duplicates: number;
  /** Events skipped because leadview.voided voids their read. */
  voided: number;
  tenants: number;
  periods: number;
  replayMs: number;
  eventsPerSecond: number;
  /** Whether the live ledger had read everything the replay read when they were compared. */
  liveCaughtUp: boolean;
  differences: PeriodDifference[];
  counterDifferences: CounterDifference[];
  equal: boolean;
  /** Whether the differences were repaired (`apply`, with the live ledger caught up). */
  applied: boolean;
  /** The (tenant, day) pairs the repair changed, live count then rebuilt count. */
  corrected: DayCorrection[];
  /** Tenants whose current-period Redis counters were re-seeded (when equal, or repaired). */
  reseeded: number;
}

/**
 * Replays leadview.recorded from its first offset into the shadow ledger with the live
 * consumer's rule (the first event of a (tenant, day, folio) wins; all of a tenant's events share
 * one partition, so "first" is the same order the live consumer saw), proves the live ledger
 * holds the same rows per tenant and period, and then re-seeds each tenant's current-period
 * meter in Redis from the ledger. Redis is left alone when the ledgers differ.
 */
export async function rebuildLedger(deps: RebuildDeps): Promise<RebuildReport> {
  const now = deps.now ?? (() => new Date());
  const shadow = createShadowLedger(deps.pool);
  return withRebuildLock(deps.pool, async () => {
    const replay = await replayIntoShadow(deps.bus, shadow);
    const { events, replayMs, leadViews, voided } = replay;

    const liveCaughtUp = await waitForLiveLedger(
      deps.bus,
      deps.liveGroup ?? LEDGER_GROUP,
      replay.highWaterMarks,
      deps.liveCatchUpTimeoutMs,
    );
    const [differences, counterDifferences, summary] = await Promise.all([
      shadow.differences(replay.highWaterMarks, replay.lowWaterMarks),
      shadow.counterDifferences(),
      shadow.summary(),
    ]);
    const equal = differences.length === 0 && counterDifferences.length === 0;
    // A repair needs the live ledger to have read what the replay read; otherwise the rows it
    // is still about to write would be judged missing.
    const applied = !equal && deps.apply === true && liveCaughtUp;
    const corrected = applied
      ? await shadow.swapIn(replay.highWaterMarks, replay.lowWaterMarks)
      : [];
    const reseeded = equal || applied ? await reseedMeters(deps.pool, deps.redis, now()) : 0;
    // Scratch space as large as the ledger: nothing reads it once the report is made.
    await shadow.reset();
    return {
      events,
      leadViews,
      duplicates: events - leadViews - voided,
      voided,
      tenants: summary.tenants,
      periods: summary.periods,
      replayMs,
      eventsPerSecond: replayMs > 0 ? Math.round((events / replayMs) * 1000) : 0,
      liveCaughtUp,
      differences,
      counterDifferences,
      equal,
      applied,
      corrected,
      reseeded,
    };
  });
}

/**
 * COPY connections of a replay. Reading and decoding the log costs more per event than
 * Postgres's COPY into the unlogged, index-free shadow table, so on two cores a second
 * connection mostly competes with the reader (two bench runs: 0.48x and 0.34x the raw replay
 * with one, 0.40x and 0.44x with two, within the shared machine's noise).
 */
const SHADOW_LANES = 1;

/** Records of a fetched slice deduplicated and written together. */
const SLICE_PART = 512;

export interface ShadowReplay {
  events: number;
  leadViews: number;
  voided: number;
  replayMs: number;
  highWaterMarks: ReadonlyMap<number, string>;
  lowWaterMarks: ReadonlyMap<number, string>;
}

/** Every (tenant, day, folio, request) leadview.voided voids,. */
async function replayVoids(bus: Bus): Promise<Set<string>> {
  const voided = new Set<string>();
  await bus.replay(contracts.leadViewVoided, {
    onBatch: async (records) => {
      for (const { value } of records) {
        for (const folio of value.folios) {
          voided.add(`${value.tenant_id}\u0000${value.day}\u0000${folio}\u0000${value.request_id}`);
        }
      }
    },
  });
  return voided;
}

/**
 * Reads leadview.recorded from its first offset into an emptied shadow ledger, keeping the first
 * event of each (tenant, day, folio) whose read was not voided, as the live consumer does. Voids
 * are few (reads the broker did not acknowledge in time), so they are read whole first.
 */
export async function replayIntoShadow(
  bus: Bus,
  shadow: ShadowLedger,
  options: { lanes?: number } = {},
): Promise<ShadowReplay> {
  await shadow.reset();
  const voids = await replayVoids(bus);
  const seen = new Set<string>();
  let events = 0;
  let voided = 0;
  const started = performance.now();
  // COPY streams that stay open for the whole replay: the log is read and decoded while
  // Postgres stores what was read, instead of one connection and COPY per fetched batch.
  const writer = await shadow.openWriter(options.lanes ?? SHADOW_LANES);
  let replay: Awaited<ReturnType<Bus["replay"]>>;
  try {
    replay = await bus.replay(contracts.leadViewRecorded, {
      onBatch: async (records) => {
        events += records.length;
        // A fetched slice runs to tens of megabytes of decoded records: each part is checked and
        // written while it is still in the processor's cache, not after the whole slice.
        for (let start = 0; start < records.length; start += SLICE_PART) {
          const fresh: ShadowRow[] = [];
          const end = Math.min(start + SLICE_PART, records.length);
          for (let index = start; index < end; index++) {
            const record = records[index] as ShadowRow;
            const { tenant_id, day, folio } = record.value;
            const key = `${tenant_id}\u0000${day}\u0000${folio}`;
            if (voids.size > 0 && voids.has(`${key}\u0000${record.value.request_id}`)) {
              voided++;
            } else if (!seen.has(key)) {
              seen.add(key);
              fresh.push(record);
            }
          }
          await writer.write(fresh);
        }
      },
    });
    await writer.close();
  } catch (error) {
    await writer.abort();
    throw error;
  }
  return {
    events,
    leadViews: seen.size,
    voided,
    replayMs: performance.now() - started,
    highWaterMarks: replay.highWaterMarks,
    lowWaterMarks: replay.lowWaterMarks,
  };
}

async function waitForLiveLedger(
  bus: Bus,
  group: string,
  highWaterMarks: ReadonlyMap<number, string>,
  timeoutMs: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const committed = await bus.committedOffsets(group, contracts.leadViewRecorded.topic);
    const behind = [...highWaterMarks].some(
      ([partition, high]) =>
        BigInt(high) > 0n && BigInt(committed.get(partition) ?? "-1") < BigInt(high),
    );
    if (!behind) {
      return true;
    }
    if (Date.now() >= deadline) {
      return false;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Forces each known tenant's current-period counter and today's folio set to the ledger's
 * figures, replacing whatever Redis held (a flushed, stale or drifted meter).
 */
async function reseedMeters(pool: Pool, redis: Redis, at: Date): Promise<number> {
  const ledger = createLedger(pool);
  const tenants = createTenants(pool);
  const meter = createLeadViewMeter(redis, {
    loadUsage: async (tenantId, period, day) =>
      ledger.seedFigures(tenantId, utcDayOf(period.start), day),
  });
  const day = utcDayOf(at);
  let reseeded = 0;
  for (const tenant of await tenants.all()) {
    const period = currentPeriod(tenant.billingAnniversary, at);
    const figures = await ledger.seedFigures(tenant.tenantId, utcDayOf(period.start), day);
    await meter.seed(tenant.tenantId, { start: period.start, end: period.end }, day, figures, true);
    reseeded++;
  }
  return reseeded;
}

/** The report an operator reads, one fact a line. */
export function formatRebuildReport(report: RebuildReport): string[] {
  const lines = [
    `replayed ${report.events} leadview.recorded events in ${(report.replayMs / 1000).toFixed(2)} s (${report.eventsPerSecond} events/s)`,
    `shadow ledger: ${report.leadViews} lead-views (${report.duplicates} duplicate events skipped, ${report.voided} voided), ${report.tenants} tenants, ${report.periods} tenant periods`,
    `live ledger caught up with the replay: ${report.liveCaughtUp ? "yes" : "no (still behind when compared)"}`,
  ];
  for (const difference of report.differences) {
    lines.push(
      `MISMATCH ${difference.tenant_id} period ${difference.period_start}: live ${difference.live_lead_views ?? "none"}, replayed ${difference.shadow_lead_views ?? "none"} lead-views (rows differ)`,
    );
  }
  for (const difference of report.counterDifferences) {
    lines.push(
      `MISMATCH ${difference.tenant_id} period ${difference.period_start}: counter says ${difference.counted ?? "nothing"}, ledger rows ${difference.rows ?? "none"}`,
    );
  }
  for (const correction of report.corrected) {
    lines.push(
      `CORRECTED ${correction.tenant_id} day ${correction.day}: ${correction.live_lead_views} -> ${correction.rebuilt_lead_views} lead-views`,
    );
  }
  const differing = report.differences.length + report.counterDifferences.length;
  lines.push(
    report.equal
      ? `EQUAL: the live ledger matches the replay; re-seeded the Redis meters of ${report.reseeded} tenants`
      : report.applied
        ? `REPAIRED: ${differing} tenant periods differed; the rebuilt ledger was swapped in (${report.corrected.length} tenant days corrected) and the Redis meters of ${report.reseeded} tenants re-seeded`
        : report.liveCaughtUp
          ? `NOT EQUAL: ${differing} tenant periods differ; nothing repaired (dry run: run again with --apply to swap the rebuilt ledger in)`
          : `NOT EQUAL: ${differing} tenant periods differ; nothing repaired (the live ledger was still behind the replay)`,
  );
  return lines;
}
