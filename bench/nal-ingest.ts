/**
 * NAL ingest throughput: parse + diff + store + publish of a generated county roll, against a
 * parse-only baseline measured in the same run. Target: a statewide roll (~10.5M rows) in under
 * five minutes on two cores, i.e. at least 35,000 rows/s end to end.
 *
 *   node bench/nal-ingest.ts [--rows 300000] [--batch 2000] [--keep-indexes] [--counties 3]
 *                            [--workers 1,2] [--warm-up-rows 20000]
 *
 * The first ingest follows a warm-up: a small file of another county loaded into a store of its
 * own, so the first ingest's CPU per row is that of compiled code, as a statewide load's millions
 * of rows pay it; the warm-up's own CPU per row is printed too (`--warm-up-rows 0` skips it). The
 * first ingest's Postgres CPU is split into storing the rows and the index build with ANALYZE
 * after them, which a first load pays once.
 *
 * --keep-indexes maintains the secondary indexes row by row during the first ingest instead of
 * building them after it, for comparison. --counties N also loads N county files of --rows rows
 * each into a fresh empty store by running the ingest command (`npm run ingest -- --workers W`)
 * in a process of its own, so its CPU and peak RSS are its own and not this bench's, once for
 * each W of --workers: each county's parcels taken for new, indexes built once after the
 * last file, the files side by side on W worker threads; the figure a statewide first load is
 * projected from. `--rows 700000 --counties 15 --workers 2` loads a statewide roll's 10.5M rows
 * (about 25 GB of disk for files, store and topic). --files-dir D keeps the county files in D and
 * reuses them in later runs.
 *
 * The first lines name the machine: CPU model, cores and load average. CPU per row depends on
 * both, so the parse-only pass's CPU per row is printed too, as the reference a figure from
 * another machine or a busier hour is compared with.
 *
 * Uses the local Postgres (DATABASE_URL) in a throwaway database and a dev broker in its own
 * process with its log in a throwaway directory, so the memory figures are the ingest's alone
 * (an in-process broker would hold every published record in this heap).
 */
import { spawn } from "node:child_process";
import { createReadStream, existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rename, rm, stat } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Bus } from "@th/bus";
import { contracts } from "@th/contracts";
import { createTestDatabase } from "../packages/db/src/testing.ts";
import { createLogger } from "../packages/telemetry/src/index.ts";
import { migrations } from "../services/parcels/src/db/migrations.ts";
import { ensureSecondaryIndexes } from "../services/parcels/src/db/parcel-store.ts";
import { CsvReader, type CsvRecord, fieldValues } from "../services/parcels/src/domain/csv.ts";
import { mapHeader } from "../services/parcels/src/domain/header.ts";
import {
  COUNTY_NAMES,
  NAL_COLUMN_ALIASES,
  NAL_COLUMNS,
  NAL_REQUIRED_COLUMNS,
} from "../services/parcels/src/domain/nal-layout.ts";
import { NalRowReader } from "../services/parcels/src/domain/nal-row.ts";
import { Utf8Chunks } from "../services/parcels/src/domain/utf8-chunks.ts";
import { ingestFile, type Publish } from "../services/parcels/src/ingest/ingest-file.ts";
import {
  GENERATOR_COUNTIES,
  nalFileName,
  writeNalFile,
} from "../services/parcels/src/testing/generate-nal.ts";
import { startBrokerProcess } from "./support/broker-process.ts";
import { cpuMsOf, postgresCpuMsOf, postgresCpuMsSince } from "./support/cpu.ts";

const { values } = parseArgs({
  options: {
    rows: { type: "string", default: "300000" },
    batch: { type: "string", default: "2000" },
    "keep-indexes": { type: "boolean", default: false },
    counties: { type: "string", default: "1" },
    workers: { type: "string", default: "1,2" },
    "files-dir": { type: "string" },
    "warm-up-rows": { type: "string", default: "20000" },
  },
});
const rows = Number(values.rows);
const batchSize = Number(values.batch);
const counties = Number(values.counties);
const workerCounts = values.workers.split(",").map(Number);
const warmUpRows = Number(values["warm-up-rows"]);
const STATEWIDE_ROWS = 10_500_000;

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

/** Parse-only baseline: read, split CSV and type every row, nothing stored. */
async function parseOnly(file: string): Promise<{ seconds: number; rows: number; cpuMs: number }> {
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const csv = new CsvReader();
  let reader: NalRowReader | undefined;
  let count = 0;
  const handle = (records: CsvRecord[]) => {
    for (const record of records) {
      if (!reader) {
        reader = new NalRowReader(
          mapHeader(
            fieldValues(record.fields),
            NAL_COLUMNS,
            NAL_COLUMN_ALIASES,
            NAL_REQUIRED_COLUMNS,
          ),
        );
        continue;
      }
      if (reader.read(record.fields, record.line).ok) {
        count += 1;
      }
    }
  };
  // Decoded as the ingest decodes its file.
  const text = new Utf8Chunks();
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) {
    const records: CsvRecord[] = [];
    csv.push(text.text(chunk as Buffer), records);
    handle(records);
  }
  const tail: CsvRecord[] = [];
  csv.push(text.end(), tail);
  csv.end(tail);
  handle(tail);
  const cpu = process.cpuUsage(cpuBefore);
  return {
    seconds: (performance.now() - started) / 1000,
    rows: count,
    cpuMs: (cpu.user + cpu.system) / 1000,
  };
}

/**
 * CPU milliseconds of a database's Postgres backends, read every quarter second so a backend's
 * time is kept when its pool closes before the last reading (up to the last quarter second of
 * each is lost, so it is a floor).
 */
function postgresCpuSampler(database: string): { stop(): number } {
  const before = postgresCpuMsOf(database);
  const latest = new Map(before);
  const read = () => {
    for (const [pid, ms] of postgresCpuMsOf(database)) {
      latest.set(pid, ms);
    }
  };
  const timer = setInterval(read, 250);
  return {
    stop() {
      clearInterval(timer);
      read();
      let total = 0;
      for (const [pid, ms] of latest) {
        total += ms - (before.get(pid) ?? 0);
      }
      return total;
    },
  };
}

/**
 * Runs the ingest command (`npm run ingest -- <args>`) in a process of its own, so its CPU and
 * peak RSS are its own and not this bench's (whose heap holds the passes before). Both are read
 * from /proc every tenth of a second; the CPU of the last tenth is lost, so it is a floor.
 */
async function commandProcess(
  args: readonly string[],
  env: Record<string, string>,
): Promise<{ code: number | null; output: string; cpuMs: number; peakRss: number }> {
  const child = spawn(
    process.execPath,
    [fileURLToPath(new URL("../services/parcels/src/ingest/cli.ts", import.meta.url)), ...args],
    { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  // The command's progress lines, not this bench's output; its errors end up in the thrown error.
  child.stderr.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  let cpuMs = 0;
  let peakRss = 0;
  const read = () => {
    const cpu = cpuMsOf(child.pid);
    cpuMs = Number.isNaN(cpu) ? cpuMs : cpu;
    peakRss = Math.max(peakRss, peakRssOf(child.pid));
  };
  const timer = setInterval(read, 100);
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  clearInterval(timer);
  return { code, output, cpuMs, peakRss };
}

/** The most memory a process has held resident so far (VmHWM), in bytes; 0 if unreadable. */
function peakRssOf(pid: number | undefined): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

/**
 * `counties` files of `rows` rows into a fresh empty store, run by the ingest command itself
 * (`npm run ingest -- --workers N <files>`) once per worker count: SDF-free, each county's
 * parcels taken for new, indexes built once after the last file. With more than one worker the
 * county files load side by side on worker threads. Returns rows/s overall of each count.
 */
async function severalCounties(
  line: (label: string, rate: number, seconds: number) => string,
): Promise<Map<number, number>> {
  // The generator's detailed counties first, then any other DOR county (all 67 can be asked for).
  const detailed = GENERATOR_COUNTIES.map((county) => county.no);
  const others = Object.keys(COUNTY_NAMES)
    .map(Number)
    .filter((countyNo) => !detailed.includes(countyNo));
  const numbers = [...detailed, ...others].slice(0, counties);
  // Kept files are reused: writing a statewide roll takes longer than loading it.
  const filesDir = values["files-dir"] === undefined ? dir : join(values["files-dir"], `${rows}`);
  await mkdir(filesDir, { recursive: true });
  const files = numbers.map((countyNo) => join(filesDir, nalFileName(countyNo, "F", 2025)));
  for (const [index, countyNo] of numbers.entries()) {
    const file = files[index] as string;
    if (values["files-dir"] === undefined || !existsSync(file)) {
      await writeNalFile(`${file}.part`, { rows, seed: 43 + index, countyNo });
      await rename(`${file}.part`, file);
    }
  }
  const rates = new Map<number, number>();
  for (const count of workerCounts) {
    const store = await createTestDatabase([migrations]);
    try {
      const database = new URL(store.url).pathname.slice(1);
      const postgres = postgresCpuSampler(database);
      const brokerBefore = cpuMsOf(broker.pid);
      const started = performance.now();
      const run = await commandProcess(["--no-rejects", "--workers", String(count), ...files], {
        DATABASE_URL: store.url,
        KAFKA_BROKERS: brokerAddress,
        INGEST_BATCH_SIZE: String(batchSize),
      });
      const seconds = (performance.now() - started) / 1000;
      const postgresMs = postgres.stop();
      const brokerMs = cpuMsOf(broker.pid) - brokerBefore;
      if (run.code !== 0) {
        throw new Error(`the ingest command failed (${run.code}): ${run.output}`);
      }
      const read = rows * files.length;
      const rate = read / seconds;
      rates.set(count, rate);
      const perRow = (ms: number) => `${((ms * 1000) / read).toFixed(1)} µs`;
      const speedUp = rates.has(1)
        ? `, ${(rate / (rates.get(1) as number)).toFixed(2)}x one worker`
        : "";
      console.info(
        line(
          `${files.length} counties, ${count} worker${count > 1 ? "s" : ""} (${read} rows)`,
          rate,
          seconds,
        ),
      );
      const indexes = run.output.split("\n").find((item) => item.startsWith("indexes built"));
      console.info(
        `  CPU per row: ingest command ${perRow(run.cpuMs)}, Postgres ${perRow(postgresMs)}, broker ${perRow(brokerMs)}; the command's peak RSS ${mb(run.peakRss)}${speedUp}; ${indexes ?? "no index build"}`,
      );
    } finally {
      await store.drop();
    }
  }
  return rates;
}

/**
 * Loads a small file of another county into a store of its own before the measured first ingest,
 * so that ingest runs code already compiled, as every row after a county's first few thousand
 * does; the measured ingest's CPU per row is then the program's per row, and this file's the
 * compile a process pays once on top. Returns the line that says so, or null with
 * `--warm-up-rows 0` (the first ingest then pays the compile in its own figure).
 */
async function warmUp(publish: Publish): Promise<string | null> {
  if (warmUpRows <= 0) {
    return null;
  }
  const countyNo = GENERATOR_COUNTIES.find((county) => county.no !== 23)?.no ?? 13;
  const warmFile = join(dir, nalFileName(countyNo, "F", 2025));
  await writeNalFile(warmFile, { rows: warmUpRows, seed: 41, countyNo });
  const store = await createTestDatabase([migrations]);
  try {
    const before = process.cpuUsage();
    const summary = await ingestFile({ pool: store.pool, publish }, warmFile, {
      batchSize,
      rejectsPath: null,
    });
    const cpu = process.cpuUsage(before);
    const perRow = (cpu.user + cpu.system) / summary.read;
    return `warm-up before the first ingest: ${summary.read.toLocaleString("en-US")} rows of county ${countyNo} into a store of its own, ${perRow.toFixed(1)} µs of this process per row (the first rows of a process, compiling as they go)`;
  } finally {
    await store.drop();
  }
}

const dir = await mkdtemp(join(tmpdir(), "nal-bench-"));
const file = join(dir, nalFileName(23, "F", 2025));
const broker = await startBrokerProcess(["--data-dir", join(dir, "kafka")]);
const brokerAddress = broker.address;
const db = await createTestDatabase([migrations]);
const logger = createLogger({ service: "bench", level: "warn" });
const bus = new Bus({ brokers: [brokerAddress], clientId: "bench", logger });
let peakRss = 0;
const sampler = setInterval(() => {
  // rss() alone: memoryUsage() walks every heap space, which cost the measured process CPU.
  peakRss = Math.max(peakRss, process.memoryUsage.rss());
}, 100);

/**
 * The machine the figures were measured on: CPU model, cores and how busy it was. CPU per row
 * moves with the CPU model and with the load of other work on the same cores (shared caches,
 * frequency), so figures compare across runs only beside this line.
 */
function machineLine(): string {
  const [one, five] = loadavg();
  return `machine: ${cpus()[0]?.model.trim() ?? "unknown CPU"}, ${cpus().length} cores, load average ${one?.toFixed(1)} (1 min) ${five?.toFixed(1)} (5 min)`;
}

try {
  console.info(machineLine());
  console.info(`generating ${rows.toLocaleString("en-US")} rows…`);
  await writeNalFile(file, { rows, seed: 42, countyNo: 23 });
  const size = (await stat(file)).size;
  console.info(`file ${mb(size)} (${Math.round(size / rows)} bytes/row)`);
  await bus.provision([contracts.parcelIngested]);
  const publish: Publish = (records) => bus.publishEncoded(records);

  const baseline = await parseOnly(file);
  const baselineRate = baseline.rows / baseline.seconds;
  const rssAfterParse = process.memoryUsage().rss;

  // CPU per row of each side of the first ingest: this process (parse, diff, COPY text, Avro,
  // producer), the Postgres backends of the bench database, and the broker process.
  const warmUpLine = await warmUp(publish);
  const database = new URL(db.url).pathname.slice(1);
  const cpuBefore = process.cpuUsage();
  const postgresBefore = postgresCpuMsOf(database);
  const brokerBefore = cpuMsOf(broker.pid);
  const keepIndexes = values["keep-indexes"];
  const stored = await ingestFile({ pool: db.pool, publish }, file, {
    batchSize,
    rejectsPath: null,
    // Built below, so the store's cost and the index build's show apart.
    ...(keepIndexes
      ? { deferIndexesFromBytes: Number.POSITIVE_INFINITY }
      : { indexesBuiltByCaller: true }),
  });
  const postgresStoreMs = postgresCpuMsSince(database, postgresBefore);
  const indexStarted = performance.now();
  if (!keepIndexes) {
    await ensureSecondaryIndexes(db.pool);
  }
  const indexSeconds = (performance.now() - indexStarted) / 1000;
  const first = { ...stored, seconds: stored.seconds + indexSeconds };
  const firstRate = first.read / first.seconds;
  const ingestCpu = process.cpuUsage(cpuBefore);
  const perRow = (ms: number) => `${((ms * 1000) / first.read).toFixed(1)} µs`;
  const processMs = (ingestCpu.user + ingestCpu.system) / 1000;
  const postgresMs = postgresCpuMsSince(database, postgresBefore);
  const brokerMs = cpuMsOf(broker.pid) - brokerBefore;
  // Every row costs this much CPU on one machine whatever runs in parallel: the cores cap the rate.
  const ceiling = (cpus().length * 1000 * first.read) / (processMs + postgresMs + brokerMs);
  const postgresParts = keepIndexes
    ? ""
    : ` (storing ${perRow(postgresStoreMs)}, then the index build and ANALYZE ${perRow(postgresMs - postgresStoreMs)} in ${indexSeconds.toFixed(1)} s)`;
  const cpuPerRow = `CPU per row of the first ingest: this process ${perRow(processMs)}, Postgres ${perRow(postgresMs)}${postgresParts}, broker ${perRow(brokerMs)}; ${cpus().length} cores fully busy at that cost would do at most ${Math.round(ceiling).toLocaleString("en-US")} rows/s`;
  const rssAfterFirst = process.memoryUsage().rss;

  const againCpuBefore = process.cpuUsage();
  const againPostgresBefore = postgresCpuMsOf(database);
  const again = await ingestFile({ pool: db.pool, publish }, file, {
    batchSize,
    rejectsPath: null,
  });
  const againRate = again.read / again.seconds;
  const againCpu = process.cpuUsage(againCpuBefore);
  const againPerRow = (ms: number) => `${((ms * 1000) / again.read).toFixed(1)} µs`;
  const againCpuPerRow = `CPU per row of the re-ingest: this process ${againPerRow((againCpu.user + againCpu.system) / 1000)}, Postgres ${againPerRow(postgresCpuMsSince(database, againPostgresBefore))}`;

  const line = (label: string, rate: number, seconds: number) =>
    `${label.padEnd(44)} ${Math.round(rate).toLocaleString("en-US").padStart(9)} rows/s  ${seconds.toFixed(1).padStart(6)} s  ${(rate / baselineRate).toFixed(2)}x baseline  statewide ≈ ${(STATEWIDE_ROWS / rate / 60).toFixed(1)} min`;
  console.info("");
  console.info(line("baseline: parse + type rows only", baselineRate, baseline.seconds));
  console.info(
    line(
      `first ingest: all new (${first.new} stored+published${values["keep-indexes"] ? ", indexes kept" : ""})`,
      firstRate,
      first.seconds,
    ),
  );
  console.info(
    line(`re-ingest: all unchanged (${again.unchanged} diffed)`, againRate, again.seconds),
  );
  const stages = (summary: typeof first) =>
    Object.entries(summary.stageMs)
      .map(([stage, ms]) => `${stage} ${(ms / 1000).toFixed(1)} s`)
      .join(", ");
  console.info(`first ingest stages (wall time of each, overlapping): ${stages(first)}`);
  console.info(`re-ingest stages (wall time of each, overlapping): ${stages(again)}`);
  console.info(cpuPerRow);
  console.info(againCpuPerRow);
  if (warmUpLine !== null) {
    console.info(warmUpLine);
  }
  // The parse-only pass runs code every version of the ingest shares: its CPU per row tracks the
  // machine, so the ingest's CPU per row over it compares across machines and busy hours.
  const parseUs = (baseline.cpuMs * 1000) / baseline.rows;
  console.info(
    `CPU per row of the parse-only pass: ${parseUs.toFixed(1)} µs; the first ingest's process uses ${((processMs * 1000) / first.read / parseUs).toFixed(2)}x that`,
  );
  console.info(machineLine());
  console.info("");
  console.info(
    `memory: rss after parse ${mb(rssAfterParse)}, after first ingest ${mb(rssAfterFirst)}, peak ${mb(peakRss)} for a ${mb(size)} file`,
  );
  let runRate: number | undefined;
  if (counties > 1) {
    const rates = await severalCounties(line);
    runRate = Math.max(...rates.values());
  }
  console.info(
    `target: >= 35,000 rows/s end to end: ${firstRate >= 35_000 ? "met" : "NOT met"} (first ingest)${runRate === undefined ? "" : `; ${runRate >= 35_000 ? "met" : "NOT met"} (${Math.min(counties, Object.keys(COUNTY_NAMES).length)} counties)`}`,
  );
} finally {
  clearInterval(sampler);
  await bus.close();
  await db.drop();
  await broker.stop();
  await rm(dir, { recursive: true, force: true });
}
