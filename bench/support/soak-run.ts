// One soak run: the stack on a fresh database, its tenants, then a simulated day at a time until
// the last month ends; each month's end measures every growing table. With retention, each day
// ends with every service's retention round at the simulated time, as its timer would run it;
// without (the baseline), only the work a round does before sweeping (the coming months'
// partitions), so the same traffic keeps everything.
import { performance } from "node:perf_hooks";
import { DAY_MS, monthStart, SoakClock } from "./soak-clock.ts";
import { prepareWithoutSweeping, type SoakStack, startSoakStack } from "./soak-stack.ts";
import { autovacuum, measureTables, type TableSize } from "./soak-tables.ts";
import {
  changeParcels,
  dashboardVisits,
  emptyCounts,
  publishVoids,
  Receiving,
  readLeads,
  replayDeadLetters,
  setUpTenants,
  startManualRuns,
  type Tenant,
  type TrafficCounts,
} from "./soak-traffic.ts";

export interface SoakOptions {
  tenants: number;
  months: number;
  scale: number;
  start: Date;
  retention: boolean;
  /** Days the ledger keeps lead-views; production's when absent. */
  leadViewDays?: number;
  /** Called with each month's sizes as soon as they are measured. */
  onMonth?: (month: MonthSizes) => void;
}

export interface MonthSizes {
  month: number;
  /** The simulated day the month ended on (its last). */
  through: Date;
  sizes: Map<string, TableSize>;
}

export interface SoakResult {
  months: MonthSizes[];
  counts: TrafficCounts;
  /** Matches and deliveries made in all (those kept and those retention removed), and attempts. */
  made: { matches: number; deliveries: number; receiverRequests: number };
  removed: Map<string, number>;
  seconds: number;
}

async function poll<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 120_000,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) {
      return value;
    }
    if (performance.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function count(
  stack: SoakStack,
  pool: keyof SoakStack["pools"],
  sql: string,
  params: unknown[],
) {
  const { rows } = await stack.pools[pool].query<{ n: string }>(sql, params);
  return Number(rows[0]?.n ?? 0);
}

/**
 * Waits until a day's changed parcels have their matches and those their deliveries (each
 * tenant's watchlist has one endpoint). The next day's traffic waits for it, so the pipeline is
 * never more than a day behind the clock.
 */
async function awaitDay(stack: SoakStack, dayStart: Date, changed: number): Promise<void> {
  for (const [pool, table] of [
    ["matcher", "matches"],
    ["dispatcher", "deliveries"],
  ] as const) {
    const sql = `SELECT count(*) AS n FROM ${table} WHERE created_at >= $1`;
    await poll(`${changed} ${table}`, async () =>
      (await count(stack, pool, sql, [dayStart])) >= changed ? true : undefined,
    );
  }
}

/** Waits until no delivery is due or being sent; those waiting on a retry topic go on later. */
async function awaitDeliveriesSent(stack: SoakStack, clock: SoakClock): Promise<void> {
  await poll("deliveries sent", async () => {
    const busy = await count(
      stack,
      "dispatcher",
      `SELECT count(*) AS n FROM deliveries
        WHERE (state IN ('pending', 'parked') AND due_at <= $1) OR lease_until > $1`,
      [clock.date()],
    );
    return busy === 0 ? true : undefined;
  });
}

/** Waits until the ledger has read every lead-view and void the services published. */
async function settleLedger(stack: SoakStack): Promise<void> {
  await poll("the outboxes published", async () => {
    const sql = "SELECT count(*) AS n FROM outbox WHERE published_at IS NULL";
    const waiting =
      (await count(stack, "dispatcher", sql, [])) + (await count(stack, "matcher", sql, []));
    return waiting === 0 ? true : undefined;
  });
  await poll("the ledger caught up", async () =>
    (await stack.caughtUp("quota-ledger.ledger", "leadview.recorded")) &&
    (await stack.caughtUp("quota-ledger.voids", "leadview.voided"))
      ? true
      : undefined,
  );
}

/** One simulated day's traffic; answers how many parcels changed (each one match). */
async function trafficOfDay(
  stack: SoakStack,
  clock: SoakClock,
  receiving: Receiving,
  tenants: readonly Tenant[],
  plan: { day: number; at: Date; scale: number },
  counts: TrafficCounts,
): Promise<number> {
  // The trial conversion and grace sweeps, as the keys service's timer runs them.
  await stack.keys.accounts.convertEndedTrials();
  await stack.keys.accounts.suspendLapsedGrace();
  // Side by side, as a day's clients would come.
  const [changed] = await Promise.all([
    changeParcels(stack, clock, tenants, plan, counts),
    readLeads(stack, tenants, plan, counts),
    publishVoids(stack, tenants, plan, counts),
    startManualRuns(stack, tenants, plan, counts),
    replayDeadLetters(stack, receiving, tenants, plan, counts),
    dashboardVisits(stack, tenants, plan, counts),
  ]);
  return changed;
}

/**
 * Every service's retention round at the simulated time, side by side as the services run them;
 * the rows each removed, added up.
 */
async function retentionRounds(stack: SoakStack, removed: Map<string, number>): Promise<void> {
  const rounds = await Promise.all(stack.retentions.map(([, retention]) => retention.runOnce()));
  for (const round of rounds) {
    for (const [table, rows] of round) {
      removed.set(table, (removed.get(table) ?? 0) + rows);
    }
  }
}

export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const started = performance.now();
  const clock = new SoakClock(options.start);
  const receiving = new Receiving(clock, options.start);
  const stack = await startSoakStack(clock, receiving.answer, {
    leadViewDays: options.leadViewDays,
  });
  const counts = emptyCounts();
  const removed = new Map<string, number>();
  const months: MonthSizes[] = [];
  const made = { matches: 0, deliveries: 0, receiverRequests: 0 };
  try {
    const tenants = await setUpTenants(stack, clock, options.tenants);
    const end = monthStart(options.start, options.months);
    let previous: { dayStart: Date; changed: number } | undefined;
    for (let day = 0; ; day++) {
      const dayStart = new Date(options.start.getTime() + day * DAY_MS);
      if (dayStart >= end) {
        break;
      }
      clock.set(new Date(dayStart.getTime() + 12 * 3_600_000));
      if (previous) {
        await awaitDay(stack, previous.dayStart, previous.changed);
      }
      const plan = { day, at: clock.date(), scale: options.scale };
      const changed = await trafficOfDay(stack, clock, receiving, tenants, plan, counts);
      previous = { dayStart, changed };
      if (options.retention) {
        await retentionRounds(stack, removed);
      } else {
        await prepareWithoutSweeping(stack, clock.date());
      }
      await autovacuum(stack.harness.db.pool);
      if (new Date(dayStart.getTime() + DAY_MS).getUTCDate() === 1) {
        await awaitDay(stack, dayStart, changed);
        await awaitDeliveriesSent(stack, clock);
        await settleLedger(stack);
        const month: MonthSizes = {
          month: months.length + 1,
          through: dayStart,
          sizes: await measureTables(stack.harness.db.pool),
        };
        months.push(month);
        options.onMonth?.(month);
      }
    }
    // Manual runs make matches too (of parcels no ingest matched since their watchlist began).
    made.matches =
      (await count(stack, "matcher", "SELECT count(*) AS n FROM matches", [])) +
      (removed.get("matcher.matches") ?? 0);
    made.deliveries =
      (await count(stack, "dispatcher", "SELECT count(*) AS n FROM deliveries", [])) +
      (removed.get("dispatcher.deliveries") ?? 0);
    return {
      months,
      counts,
      made: { ...made, receiverRequests: stack.receiver.requests() },
      removed,
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    await stack.close();
  }
}
