// A year that plateaus: about 13 months of traffic through the real services on a compressed
// clock, every growing table's rows and bytes (indexes and TOAST, partitions summed) at each
// month's end, and the same traffic without retention, measured in the same run, as the
// baseline. Run from the repository root: node bench/retention-soak.ts [--tenants 200]
// [--months 13] [--scale 1] [--no-baseline] [--lead-view-days n] (--scale n: n changed parcels a
// tenant each week, and n neighbours' parcels in each of its reads; --lead-view-days n: the
// ledger keeps lead-views n days, at least 32, instead of production's 400, so that lead_views,
// which levels off only after 431 days, shows its plateau within a run's months: it then levels
// off after n + 31 days, and the run's lead_views and totals are not production's. A month is
// dropped once its end is n days past, so with n from 32 to 58 every month's end, where the bench
// measures, holds two months; above 58, some months' ends hold a third (60: February's and
// March's), which the summary's verdict may read as growth). Needs
// Postgres and redis-server (a Redis of its own is started); the dev broker runs in a process of
// its own, and the baseline in another process beside this one (its own database, Redis and
// broker).
//
// The stack (support/soak-stack.ts): keys, parcels, the quota ledger, the matcher, the webhook
// dispatcher and the gateway, each built in this process with `buildApp` and given the bench's
// clock as `now`, which every row the tables below keep is stamped by and every retention
// reads. The clock runs at real speed within a simulated day and jumps to noon of the next one
// between days (support/soak-clock.ts). Settings that differ from production: the long retry
// stages and the dead-letter wait at a thousandth (LONG_DELAY_SCALE, as tests shrink them; the
// 1 s and 5 s stages run in real time), and a two-day delivery lease, so a jump never ends the
// lease of a delivery being sent. Traffic per tenant (support/soak-traffic.ts), and the path
// each table's rows take:
// - parcels.ingest_runs: each day a roll file of that day's changed parcels (one per tenant a
//   week), through the parcels service's ingest (its `now` stamps the run);
// - matcher.matches: the matcher's consumer judges those parcels against each tenant's watchlist
//   (a match is stored as made when its event says: the matcher's clock); manual runs, one every
//   fourth day through the gateway, make matches too (parcels no ingest matched yet), and
//   matcher.manual_runs rows (the matcher's clock);
// - dispatcher.deliveries and attempts: the dispatcher's intake of match.found (created at the
//   dispatcher's clock) and its worker's signed POSTs to a loopback receiver that refuses 4 %
//   (410: a dead letter), fails 4 % once (503: retried) and 1 % every time (a dead letter after
//   five attempts); half the dead letters are replayed through the gateway two days later;
// - quota_ledger.lead_views: each tenant reads its parcels and a neighbour's in a batch through
//   the gateway once a week (the view's day is the gateway's clock), and each delivery is a
//   lead-view (the dispatcher's clock); lead_view_runners_up: one reader in four sends its batch
//   twice at once, so the second read records what the first charged moments before;
//   lead_view_voids: about one tenant in forty a day has a read whose record the gateway gave up:
//   its void is published to leadview.voided as the gateway's void publisher sends it, the day
//   and time carried in the event; quota_ledger.period_usage: a row per tenant and period;
// - keys.dashboard_sessions and refresh tokens: one tenant in a hundred has a member who signs in
//   through the gateway every two weeks, and gets an admin's password link in the weeks between
//   (keys.password_tokens; the keys service's clock).
// Each day's traffic waits for the day before's matches and deliveries, so the pipeline stays
// within a day of the clock. After it, each service's retention runs one round (`runOnce`, as
// its timer would) at the simulated time, then autovacuum's default thresholds are applied
// (support/soak-tables.ts: a simulated day lasts well under a second, autovacuum looks at a
// database about once a minute). Each month's end waits for every delivery to be sent and the
// ledger to have read everything, then measures. The baseline drives the same traffic with no
// round (only the partitions a round makes ahead), so its sizes are what the traffic reaches
// without retention. Left out: the outboxes, which the relays purge a day after publishing by
// the database's own clock, and tables that do not grow with traffic.
import { spawn } from "node:child_process";
import { cpus, loadavg } from "node:os";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { monthStart } from "./support/soak-clock.ts";
import { type MonthSizes, runSoak, type SoakResult } from "./support/soak-run.ts";
import { SOAK_TABLES, type SoakTable, type TableSize } from "./support/soak-tables.ts";

const MB = 1024 * 1024;

function settings() {
  const { values } = parseArgs({
    options: {
      tenants: { type: "string", default: "200" },
      months: { type: "string", default: "13" },
      scale: { type: "string", default: "1" },
      "no-baseline": { type: "boolean", default: false },
      "lead-view-days": { type: "string" },
      // Internal: the baseline's own process, which prints its months as JSON lines.
      "baseline-from": { type: "string" },
    },
  });
  return {
    tenants: Number(values.tenants),
    months: Number(values.months),
    scale: Number(values.scale),
    baseline: !values["no-baseline"],
    leadViewDays:
      values["lead-view-days"] === undefined ? undefined : Number(values["lead-view-days"]),
    baselineFrom: values["baseline-from"],
  };
}

type Settings = ReturnType<typeof settings>;

const LEAD_VIEWS = "quota_ledger.lead_views";

/**
 * The tables as this run keeps them: with --lead-view-days, lead_views is kept that long and
 * levels off once a month past it (each month is dropped whole once its last day is past).
 */
function tablesOfRun(options: Settings): readonly SoakTable[] {
  const days = options.leadViewDays;
  return days === undefined
    ? SOAK_TABLES
    : SOAK_TABLES.map((table) =>
        table.name === LEAD_VIEWS
          ? {
              ...table,
              kept: `${days} days (production 400), dropped by month`,
              levelsAfterDays: days + 31,
            }
          : table,
      );
}

/** A result as a JSON line (its maps as entry lists), and back. */
function encode(value: unknown): string {
  return JSON.stringify(value, (_, v) => (v instanceof Map ? { entries: [...v] } : v));
}

function decode<T>(line: string): T {
  return JSON.parse(line, (key, v) =>
    v && typeof v === "object" && "entries" in v && Array.isArray(v.entries)
      ? new Map(v.entries)
      : key === "through"
        ? new Date(v)
        : v,
  ) as T;
}

/**
 * The run without retention, in a process of its own beside this one's (separate database, Redis
 * and broker), so the two runs take the two cores rather than one after the other.
 */
function startBaseline(options: Settings, start: Date): Promise<SoakResult> {
  const child = spawn(
    process.execPath,
    [
      fileURLToPath(import.meta.url),
      ...["--tenants", String(options.tenants), "--months", String(options.months)],
      ...["--scale", String(options.scale), "--baseline-from", start.toISOString()],
      ...(options.leadViewDays === undefined
        ? []
        : ["--lead-view-days", String(options.leadViewDays)]),
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  return new Promise((resolve, reject) => {
    let result: SoakResult | undefined;
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
      if (line.startsWith("{")) {
        result = decode<SoakResult>(line);
      }
    });
    child.once("exit", (code) =>
      result ? resolve(result) : reject(new Error(`the baseline run exited with ${code}`)),
    );
  });
}

async function runBaselineHere(options: Settings, from: string): Promise<void> {
  const result = await runSoak({
    tenants: options.tenants,
    months: options.months,
    scale: options.scale,
    start: new Date(from),
    retention: false,
    leadViewDays: options.leadViewDays,
  });
  process.stdout.write(`${encode(result)}\n`);
}

const mb = (bytes: number) => (bytes / MB).toFixed(2);
const thousands = (n: number) => n.toLocaleString("en-US");

function printMonth(label: string, month: MonthSizes): void {
  const through = month.through.toISOString().slice(0, 10);
  let total = 0;
  for (const { name } of SOAK_TABLES) {
    const size = month.sizes.get(name) as TableSize;
    total += size.bytes;
    process.stdout.write(
      `${label.padEnd(9)} ${String(month.month).padStart(2)}  ${through}  ${name.padEnd(34)} ${thousands(size.rows).padStart(9)} rows ${mb(size.bytes).padStart(9)} MB\n`,
    );
  }
  process.stdout.write(
    `${label.padEnd(9)} ${String(month.month).padStart(2)}  ${through}  ${"all of the above".padEnd(34)} ${"".padStart(14)} ${mb(total).padStart(9)} MB\n`,
  );
}

function bytesAt(result: SoakResult, month: number, table: string): number {
  return result.months[month - 1]?.sizes.get(table)?.bytes ?? Number.NaN;
}

function totalAt(result: SoakResult, month: number): number {
  return SOAK_TABLES.reduce((sum, { name }) => sum + bytesAt(result, month, name), 0);
}

/**
 * Levelled off: in the last four months the table grew by under a tenth of its size at their
 * start, or by less than 64 KB (the pages and free-space maps of a table of a few rows); the
 * deliveries' months come and go whole, so the largest of each span is compared.
 */
function verdict(result: SoakResult, table: SoakTable): string {
  const last = result.months.length;
  if (last < 8) {
    return "too few months to tell";
  }
  const span = (from: number, to: number) =>
    Math.max(
      ...Array.from({ length: to - from + 1 }, (_, i) => bytesAt(result, from + i, table.name)),
    );
  const before = span(last - 7, last - 4);
  const growth = span(last - 3, last) - before;
  const percent = `${growth >= 0 ? "+" : ""}${((growth / before) * 100).toFixed(0)} %`;
  if (growth / before < 0.1 || growth < 64 * 1024) {
    return `levelled off (${percent} over the last 4 months)`;
  }
  const horizonReached = table.levelsAfterDays !== null && table.levelsAfterDays < last * 30.44;
  return horizonReached
    ? `STILL GROWING (${percent} over the last 4 months)`
    : `growing (${percent} over the last 4 months), as it should: ${table.levelsAfterDays === null ? "kept for ever" : "its horizon is not reached in this run"}`;
}

function printSummary(result: SoakResult, baseline: SoakResult | undefined, options: Settings) {
  const last = result.months.length;
  const picks = [4, 8, last].filter((m, i, all) => m <= last && all.indexOf(m) === i);
  process.stdout.write(
    `\nsummary: MB at months ${picks.join(", ")}; bytes per row kept at month ${last}\n`,
  );
  for (const table of tablesOfRun(options)) {
    const sizes = picks.map((m) => mb(bytesAt(result, m, table.name)).padStart(9)).join("");
    const rows = result.months[last - 1]?.sizes.get(table.name)?.rows ?? 0;
    // A table of a few rows is its empty pages and maps; a per-row figure would mean nothing.
    const perRow =
      rows >= 100 ? thousands(Math.round(bytesAt(result, last, table.name) / rows)) : "-";
    process.stdout.write(
      `  ${table.name.padEnd(34)}${sizes}${perRow.padStart(8)}   ${table.kept}; ${verdict(result, table)}\n`,
    );
  }
  const totals = picks.map((m) => mb(totalAt(result, m)).padStart(9)).join("");
  process.stdout.write(`  ${"all of the above".padEnd(34)}${totals}\n`);
  printPerTenant(result, options);
  if (baseline) {
    const with_ = totalAt(result, last);
    const without = totalAt(baseline, last);
    process.stdout.write(
      `\nmonth ${last}, all tables: ${mb(with_)} MB with retention, ${mb(without)} MB without (the same traffic, measured in the baseline run): ${(with_ / without).toFixed(3)}x\n`,
    );
    for (const { name } of SOAK_TABLES) {
      const a = bytesAt(result, last, name);
      const b = bytesAt(baseline, last, name);
      process.stdout.write(
        `  ${name.padEnd(34)} ${mb(a).padStart(9)} vs ${mb(b).padStart(9)} MB  ${(a / b).toFixed(3)}x\n`,
      );
    }
  }
}

/**
 * Disk per tenant at the plateau, for the sizing table: what the tables that level off hold per
 * tenant at the last month, and what a month of lead-views adds per tenant (kept 400 to 431
 * days in production, so about 14 months of it are held once lead_views levels off too). With
 * --lead-view-days, a month's growth is read from the months before the first was dropped.
 */
function printPerTenant(result: SoakResult, options: Settings): void {
  const { tenants } = options;
  const leadViews = LEAD_VIEWS;
  const last = result.months.length;
  const growing =
    options.leadViewDays === undefined
      ? last
      : Math.min(last, Math.floor(options.leadViewDays / 30.44) + 1);
  let flat = 0;
  for (const { name } of SOAK_TABLES) {
    if (name !== leadViews) {
      flat += bytesAt(result, last, name);
    }
  }
  const monthly =
    growing > 1
      ? (bytesAt(result, growing, leadViews) - bytesAt(result, 1, leadViews)) / (growing - 1)
      : bytesAt(result, 1, leadViews);
  const held = 431 / 30.44;
  const kb = (bytes: number) => (bytes / 1024).toFixed(1);
  process.stdout.write(
    `\ndisk per tenant at this traffic: ${kb(flat / tenants)} KB held by the tables that level off; lead_views ${kb(monthly / tenants)} KB per tenant-month, ${kb((monthly * held) / tenants)} KB once 14 months are held; in all ${kb((flat + monthly * held) / tenants)} KB per tenant at the full plateau\n`,
  );
  const c = result.counts;
  const tenantMonths = tenants * last;
  process.stdout.write(
    `traffic per tenant-month: ${(c.readFolios / tenantMonths).toFixed(1)} folios read (${(c.readRequests / tenantMonths).toFixed(1)} batch reads), ${(result.made.matches / tenantMonths).toFixed(1)} matches, ${(result.made.deliveries / tenantMonths).toFixed(1)} deliveries (${(result.made.receiverRequests / tenantMonths).toFixed(1)} attempts), ${(c.voids / tenantMonths).toFixed(2)} voids, ${(c.replays / tenantMonths).toFixed(2)} replays\n`,
  );
}

function printRun(label: string, result: SoakResult): void {
  const c = result.counts;
  process.stdout.write(
    `${label}: ${result.seconds.toFixed(0)} s; ${thousands(c.readRequests)} batch reads (${thousands(c.doubleReads)} sent twice), ${thousands(c.parcelChanges)} parcels changed, ${thousands(result.made.matches)} matches, ${thousands(result.made.deliveries)} deliveries, ${thousands(result.made.receiverRequests)} attempts, ${thousands(c.replays)} replays, ${thousands(c.voids)} voids, ${thousands(c.manualRuns)} manual runs, ${thousands(c.signIns)} sign-ins, ${thousands(c.passwordLinks)} password links, ${c.failures} refused calls\n`,
  );
  if (result.removed.size > 0) {
    const removed = [...result.removed].map(([table, rows]) => `${table} ${thousands(rows)}`);
    process.stdout.write(`${label}: rows retention removed: ${removed.join(", ")}\n`);
  }
}

async function main(): Promise<void> {
  const options = settings();
  if (options.baselineFrom) {
    await runBaselineHere(options, options.baselineFrom);
    return;
  }
  // Months well after the partitions the migrations made from the tables as they were.
  const start = monthStart(new Date(), 3);
  const load = () =>
    loadavg()
      .map((n) => n.toFixed(2))
      .join(" ");
  process.stdout.write(
    `retention-soak: ${options.tenants} tenants, ${options.months} months from ${start.toISOString().slice(0, 10)}, scale ${options.scale}${options.leadViewDays === undefined ? "" : `, lead-views kept ${options.leadViewDays} days`}; ${cpus().length} CPUs, load average ${load()}\n`,
  );
  const baselineRun = options.baseline ? startBaseline(options, start) : undefined;
  // Not left unhandled while the run with retention goes on; awaited below.
  baselineRun?.catch(() => {});
  const result = await runSoak({
    tenants: options.tenants,
    months: options.months,
    scale: options.scale,
    start,
    retention: true,
    leadViewDays: options.leadViewDays,
    onMonth: (month) => printMonth("retention", month),
  });
  printRun("with retention", result);
  const baseline = await baselineRun;
  if (baseline) {
    for (const month of baseline.months) {
      printMonth("baseline", month);
    }
    printRun("without retention", baseline);
  }
  printSummary(result, baseline, options);
  process.stdout.write(`load average at the end: ${load()}\n`);
}

await main();
process.exit(0);
