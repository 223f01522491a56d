/**
 * `npm run ingest -- <files...>`: streams Florida DOR NAL (and SDF) files into the parcel store
 * and publishes new and changed parcels on `parcel.ingested`. SDF files go first so their sales
 * enrich the rolls of the same run. Progress on stderr; a summary per file and in total.
 */
import { access, constants } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { basename } from "node:path";
import { parseArgs } from "node:util";
import { Bus, MissingTopicsError } from "@th/bus";
import { ConfigError, kafkaConnection } from "@th/config";
import type { RollStage } from "@th/contracts";
import { migrate, type Pool } from "@th/db";
import { createLogger } from "@th/telemetry";
import { readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import { ensureSecondaryIndexes, storeContents } from "../db/parcel-store.ts";
import { countyLanes } from "../domain/county-lanes.ts";
import { parseRollFileName } from "../domain/nal-layout.ts";
import { type IngestConnections, openIngestConnections } from "./ingest-connections.ts";
import { type IngestProgress, type IngestSummary, ingestFile } from "./ingest-file.ts";
import { loadSideBySide } from "./side-by-side.ts";

const usage =
  "usage: npm run ingest -- [--stage P|F] [--no-rejects] [--workers N] <NAL..csv | SDF..csv>...";

function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) {
    return "--:--";
  }
  const whole = Math.max(0, Math.round(seconds));
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")}`;
}

/** A one-line progress bar redrawn in place when stderr is a terminal, else a line every few seconds. */
export function progressReporter(
  label: string,
  stream: Pick<NodeJS.WriteStream, "isTTY" | "write"> = process.stderr,
) {
  const started = performance.now();
  let lastDraw = 0;
  return (progress: IngestProgress, final = false) => {
    const now = performance.now();
    const interval = stream.isTTY ? 200 : 5000;
    if (!final && now - lastDraw < interval) {
      return;
    }
    lastDraw = now;
    const seconds = (now - started) / 1000;
    const fraction = progress.totalBytes > 0 ? progress.bytesRead / progress.totalBytes : 1;
    const rate = seconds > 0 ? progress.rowsRead / seconds : 0;
    const eta = fraction > 0 ? (seconds / fraction) * (1 - fraction) : Number.POSITIVE_INFINITY;
    const width = 24;
    const filled = Math.round(fraction * width);
    const bar = `${"#".repeat(filled)}${"-".repeat(width - filled)}`;
    const line = `${label} [${bar}] ${(fraction * 100).toFixed(1)}% ${progress.rowsRead.toLocaleString("en-US")} rows ${Math.round(rate).toLocaleString("en-US")} rows/s ETA ${formatDuration(eta)}`;
    stream.write(stream.isTTY ? `\r\u001b[2K${line}${final ? "\n" : ""}` : `${line}\n`);
  };
}

/** The files of `paths` that cannot be read, with the reason. */
async function unreadable(paths: readonly string[]): Promise<string[]> {
  const problems: string[] = [];
  for (const path of paths) {
    await access(path, constants.R_OK).catch((error: NodeJS.ErrnoException) => {
      problems.push(`${path}: ${error.code === "ENOENT" ? "no such file" : "cannot be read"}`);
    });
  }
  return problems;
}

function summaryLine(summary: IngestSummary): string {
  return `${basename(summary.file)} (${summary.kind}): read ${summary.read}, new ${summary.new}, changed ${summary.changed}, unchanged ${summary.unchanged}, rejected ${summary.rejected}, published ${summary.published} in ${summary.seconds.toFixed(1)}s`;
}

function parseIngestArgs(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      stage: { type: "string" },
      "no-rejects": { type: "boolean", default: false },
      workers: { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
}

/** What the command line asks for, once its flags are checked. */
export interface IngestOptions {
  paths: string[];
  stage: RollStage | undefined;
  workers: number;
  rejects: boolean;
}

/**
 * Reads the command line without touching anything: the options, or the exit code and the lines
 * to print (on stdout for `--help`, else on stderr).
 */
export function readIngestOptions(
  argv: string[],
  cores: number,
): { options: IngestOptions } | { exit: number; lines: string[]; toStdout?: boolean } {
  let parsed: ReturnType<typeof parseIngestArgs>;
  try {
    parsed = parseIngestArgs(argv);
  } catch (error) {
    // An unknown option or a missing value: one line and the usage, not a stack trace.
    return { exit: 2, lines: [(error as Error).message, usage] };
  }
  const { values, positionals } = parsed;
  if (values.help) {
    return { exit: 0, lines: [usage], toStdout: true };
  }
  if (positionals.length === 0) {
    return { exit: 2, lines: [usage] };
  }
  const stageFlag = values.stage?.toUpperCase();
  if (stageFlag !== undefined && stageFlag !== "P" && stageFlag !== "F") {
    return {
      exit: 2,
      lines: [`--stage takes P (preliminary) or F (final), not ${values.stage}`, usage],
    };
  }
  // County files of a statewide first load go in side by side, one worker thread per core.
  const workers = Number(values.workers ?? cores);
  if (!Number.isInteger(workers) || workers < 1) {
    return {
      exit: 2,
      lines: [`--workers takes a whole number of at least 1, not ${values.workers}`, usage],
    };
  }
  return {
    options: {
      paths: positionals,
      stage: stageFlag === undefined ? undefined : stageFlag === "P" ? "preliminary" : "final",
      workers,
      rejects: !values["no-rejects"],
    },
  };
}

/** Sales first, so the rolls of the same run see them; otherwise the given order. */
export function salesFirst(paths: readonly string[]): string[] {
  return [...paths].sort(
    (a, b) =>
      Number(parseRollFileName(basename(b))?.kind === "SDF") -
      Number(parseRollFileName(basename(a))?.kind === "SDF"),
  );
}

/** The roll (NAL) files of a run: everything that is not a sales file. */
export function rollsOf(files: readonly string[]): string[] {
  return files.filter((file) => parseRollFileName(basename(file))?.kind !== "SDF");
}

/**
 * The rolls that load side by side on worker threads: only in a first load without indexes,
 * with more than one worker and more than one county lane.
 */
export function sideBySideRolls(
  rolls: readonly string[],
  indexesAtEnd: boolean,
  workers: number,
): string[] {
  return indexesAtEnd && workers > 1 && countyLanes(rolls).length > 1 ? [...rolls] : [];
}

/**
 * Everything a load needs, checked before any row is read: the files are readable, the
 * configuration valid, Kafka reachable with its topics, and the store migrated. Both early
 * checks come before any connection: a typo or a stopped broker is one clear line, not a minute
 * of client retries.
 */
async function prepareIngest(
  paths: readonly string[],
  env: Readonly<Record<string, string | undefined>> | undefined,
): Promise<
  { exit: number } | { config: ReturnType<typeof readConfig>; connections: IngestConnections }
> {
  const problems = await unreadable(paths);
  if (problems.length > 0) {
    for (const problem of problems) {
      console.error(problem);
    }
    console.error("nothing was ingested");
    return { exit: 2 };
  }
  let config: ReturnType<typeof readConfig>;
  try {
    config = readConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) {
      throw error;
    }
    console.error(error.message);
    return { exit: 2 };
  }
  const logger = createLogger({ service: "parcels-ingest", level: "warn" });
  const bus = new Bus({ ...kafkaConnection(config), clientId: "parcels-ingest", logger });
  const kafkaProblem = await bus.checkConnection();
  if (kafkaProblem) {
    await bus.close();
    console.error(kafkaProblem.line);
    return { exit: 1 };
  }
  await migrate(config.DATABASE_URL, migrations);
  // One trial connection told a bad setting already; this one is the ingest's own.
  await bus.close();
  try {
    return {
      config,
      connections: await openIngestConnections(config, logger, "parcels-ingest"),
    };
  } catch (error) {
    if (error instanceof MissingTopicsError) {
      console.error(error.message);
      console.error("nothing was ingested");
      return { exit: 1 };
    }
    throw error;
  }
}

/** The run's totals and whether anything failed, fed by each file's outcome. */
function runTally() {
  const totals = { read: 0, new: 0, changed: 0, unchanged: 0, rejected: 0 };
  const tally = {
    totals,
    failed: false,
    loaded(summary: IngestSummary) {
      console.info(summaryLine(summary));
      if (summary.rejectsPath) {
        console.info(`  rejects report: ${summary.rejectsPath}`);
      }
      if (summary.unloadable) {
        // A run that loaded nothing of a file must not look like a success to a script.
        tally.failed = true;
        console.error(`${basename(summary.file)}: nothing loaded: ${summary.unloadable}`);
      }
      for (const key of Object.keys(totals) as (keyof typeof totals)[]) {
        totals[key] += summary[key];
      }
    },
    fail(file: string, message: string) {
      tally.failed = true;
      console.error(`${basename(file)}: ${message}`);
    },
  };
  return tally;
}

type Tally = ReturnType<typeof runTally>;

interface IngestRun {
  connections: IngestConnections;
  config: ReturnType<typeof readConfig>;
  options: IngestOptions;
  env: Readonly<Record<string, string | undefined>> | undefined;
  indexesAtEnd: boolean;
  tally: Tally;
}

/** Loads files one after another on this thread, each with its own progress bar. */
async function ingestInTurn(run: IngestRun, files: readonly string[]): Promise<void> {
  const { connections, options, indexesAtEnd, tally } = run;
  // In a first load, the store holds no parcel of a county until its first file is loaded.
  const loadedCounties = new Set<number>();
  for (const file of files) {
    const report = progressReporter(basename(file));
    const named = parseRollFileName(basename(file));
    const countyNo = named?.kind === "NAL" ? named.countyNo : undefined;
    try {
      const { pool, publish } = connections;
      const summary = await ingestFile({ pool, publish }, file, {
        batchSize: run.config.INGEST_BATCH_SIZE,
        indexesBuiltByCaller: indexesAtEnd,
        takeForNew: indexesAtEnd && countyNo !== undefined && !loadedCounties.has(countyNo),
        ...(options.stage ? { rollStage: options.stage } : {}),
        ...(options.rejects ? {} : { rejectsPath: null }),
        onProgress: (progress) => report(progress),
      });
      if (countyNo !== undefined) {
        loadedCounties.add(countyNo);
      }
      report({ rowsRead: summary.read, bytesRead: 1, totalBytes: 1 }, true);
      tally.loaded(summary);
    } catch (error) {
      tally.fail(file, (error as Error).message);
    }
  }
}

/** Loads county lanes at once on worker threads. */
async function ingestSideBySide(run: IngestRun, files: readonly string[]): Promise<void> {
  const { options, tally } = run;
  // Bars of files loading at once would overwrite each other: a line every few seconds each.
  const lines = { isTTY: false, write: (text: string) => process.stderr.write(text) };
  const reporters = new Map(files.map((file) => [file, progressReporter(basename(file), lines)]));
  const allLoaded = await loadSideBySide(
    run.connections,
    {
      lanes: countyLanes(files),
      workers: options.workers,
      ...(run.env ? { env: run.env } : {}),
      rejects: options.rejects,
      ...(options.stage ? { rollStage: options.stage } : {}),
    },
    {
      progress: (file, progress) => reporters.get(file)?.(progress),
      loaded: tally.loaded,
      failed: tally.fail,
    },
  );
  tally.failed ||= !allLoaded;
}

/** Builds the secondary indexes a first load left out; a failure is reported, not thrown. */
async function buildIndexesAtEnd(pool: Pool, tally: Tally): Promise<void> {
  const started = performance.now();
  process.stderr.write("building the parcel store's indexes…\n");
  await ensureSecondaryIndexes(pool).catch((error: unknown) => {
    // The parcels service builds missing indexes when it starts; say so rather than fail.
    tally.failed = true;
    console.error(
      `building the indexes failed (${(error as Error).message}); the parcels service builds them when it starts`,
    );
  });
  console.info(`indexes built in ${((performance.now() - started) / 1000).toFixed(1)}s`);
}

/** Runs the command; `env` stands in for the process environment (tests). */
export async function main(
  argv: string[],
  env?: Readonly<Record<string, string | undefined>>,
): Promise<number> {
  const read = readIngestOptions(argv, availableParallelism());
  if ("exit" in read) {
    for (const line of read.lines) {
      (read.toStdout ? console.info : console.error)(line);
    }
    return read.exit;
  }
  const { options } = read;
  const prepared = await prepareIngest(options.paths, env);
  if ("exit" in prepared) {
    return prepared.exit;
  }
  const { config, connections } = prepared;
  const files = salesFirst(options.paths);
  // Several rolls into an empty store (a statewide first load) go in without the secondary
  // indexes, built once after the last file rather than maintained row by row from the second.
  const rolls = rollsOf(files);
  const indexesAtEnd = rolls.length > 1 && !(await storeContents(connections.pool)).parcels;
  const sideBySide = sideBySideRolls(rolls, indexesAtEnd, options.workers);
  const run: IngestRun = { connections, config, options, env, indexesAtEnd, tally: runTally() };
  try {
    await ingestInTurn(
      run,
      files.filter((file) => !sideBySide.includes(file)),
    );
    if (sideBySide.length > 0) {
      await ingestSideBySide(run, sideBySide);
    }
  } finally {
    if (indexesAtEnd) {
      await buildIndexesAtEnd(connections.pool, run.tally);
    }
    await connections.close();
  }
  const { totals } = run.tally;
  if (files.length > 1) {
    console.info(
      `total: read ${totals.read}, new ${totals.new}, changed ${totals.changed}, unchanged ${totals.unchanged}, rejected ${totals.rejected}`,
    );
  }
  return run.tally.failed ? 1 : 0;
}

if (import.meta.main) {
  process.exitCode = await main(process.argv.slice(2));
}
