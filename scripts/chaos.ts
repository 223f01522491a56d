// `npm run chaos`: the fault suite. Runs the outage tests against real stores of their own
// (a private Postgres cluster and redis-server, a private dev broker, dispatcher child
// processes) and prints one row per fault with its pass conditions: 0 lost, 0 5xx, every read
// answered or refused within the bound, lead-views charged = reads answered with a lead, and
// work resumed within 30 s. Exits 1 when a fault fails a condition or a test fails.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FaultRow } from "../test/support/chaos-report.ts";

const root = join(import.meta.dirname, "..");
/**
 * The faults, in the order they run. test/outage-*.test.ts run in `npm test` too; the longer
 * test/chaos-*.test.ts only here (vitest.config.ts excludes them, vitest.chaos.config.ts has them).
 */
const FAULT_TESTS = [
  "test/outage-postgres-restart.test.ts",
  "test/outage-postgres.test.ts",
  "test/outage-reads.test.ts",
  "test/outage-stalled-acks.test.ts",
  "test/outage-redis.test.ts",
  "test/outage-dispatcher-slots.test.ts",
  "test/chaos-redis.test.ts",
  "test/chaos-kill-broker.test.ts",
  "test/chaos-kill-matcher.test.ts",
  "test/chaos-kill-dispatcher.test.ts",
  "test/chaos-whole-stack.test.ts",
  "test/chaos-lead-documents.test.ts",
];
/** A read's bound: the 2 s publish deadline plus the request's own work. */
const READ_BOUND_MS = 2_500;
const RECOVERY_BOUND_MS = 30_000;

// A fault test the chaos config holds but the list leaves out would run nowhere.
const held = readdirSync(join(root, "test"))
  .filter((name) => /^(outage|chaos)-.*\.test\.ts$/.test(name))
  .map((name) => `test/${name}`);
const unlisted = held.filter((file) => !FAULT_TESTS.includes(file));
if (unlisted.length > 0) {
  throw new Error(`fault tests missing from scripts/chaos.ts: ${unlisted.join(", ")}`);
}

const dir = mkdtempSync(join(tmpdir(), "th-chaos-"));
const report = join(dir, "faults.jsonl");
const result = spawnSync(
  join(root, "node_modules", ".bin", "vitest"),
  ["run", "--config", "vitest.chaos.config.ts", "--no-file-parallelism", ...FAULT_TESTS],
  { cwd: root, stdio: "inherit", env: { ...process.env, CHAOS_REPORT: report } },
);
const rows: FaultRow[] = existsSync(report)
  ? readFileSync(report, "utf8")
      .split("\n")
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line) as FaultRow)
  : [];
rmSync(dir, { recursive: true, force: true });

function failures(row: FaultRow): string[] {
  const failed: string[] = [];
  if ((row.lost ?? 0) > 0) {
    failed.push("lost");
  }
  if (row.fiveHundreds > 0) {
    failed.push("5xx");
  }
  if (row.slowestAnswerMs !== null && row.slowestAnswerMs > READ_BOUND_MS) {
    failed.push("bound");
  }
  if (row.leadViewsCharged !== null && row.leadViewsCharged !== row.readsAnswered) {
    failed.push("charged");
  }
  if (row.recoveryMs !== null && row.recoveryMs > RECOVERY_BOUND_MS) {
    failed.push("recovery");
  }
  return failed;
}

const show = (value: number | null) => (value === null ? "-" : String(value));
const header = [
  "fault",
  "matches",
  "unique",
  "dups",
  "lost",
  "5xx",
  "503s",
  "slowest ms",
  "recovery ms",
  "charged/answered",
  "result",
];
const table = rows.map((row) => {
  const failed = failures(row);
  return [
    row.fault,
    show(row.matches),
    show(row.uniqueDeliveries),
    show(row.duplicates),
    show(row.lost),
    String(row.fiveHundreds),
    String(row.unavailable),
    show(row.slowestAnswerMs),
    show(row.recoveryMs),
    row.leadViewsCharged === null ? "-" : `${row.leadViewsCharged}/${row.readsAnswered}`,
    failed.length === 0 ? "pass" : `FAIL (${failed.join(", ")})`,
  ];
});
const widths = header.map((title, column) =>
  Math.max(title.length, ...table.map((cells) => (cells[column] ?? "").length)),
);
const line = (cells: string[]) =>
  cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join("  ");
process.stdout.write(`\n${line(header)}\n`);
for (const cells of table) {
  process.stdout.write(`${line(cells)}\n`);
}
process.stdout.write(
  `\npass: 0 lost, 0 5xx, reads answered or refused within ${READ_BOUND_MS} ms, lead-views charged = reads answered with a lead, resumed within ${RECOVERY_BOUND_MS / 1000} s\n`,
);
const anyFailed = rows.some((row) => failures(row).length > 0);
if (result.status !== 0 || anyFailed || rows.length === 0) {
  process.stdout.write("chaos: FAILED\n");
  process.exit(1);
}
process.stdout.write("chaos: every fault passed\n");
