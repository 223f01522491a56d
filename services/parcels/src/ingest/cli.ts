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
import { migrate } from "@th/db";
import { createLogger } from "@th/telemetry";
import { readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import { ensureSecondaryIndexes, storeContents } from "../db/parcel-store.ts";
import { countyLanes } from "../domain/county-lanes.ts";
import { parseRollFileName } from "../domain/nal-layout.ts";
import { openIngestConnections } from "./ingest-connections.ts";
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

/** Runs the command; `env` stands in for the process environment (tests). */
export async function main(
  argv: string[],
  env?: Readonly<Record<string, string | undefined>>,
): Promise<number> {
  let parsed: ReturnType<typeof parseIngestArgs>;
  try {
    parsed = parseIngestArgs(argv);
  } catch (error) {
    // An unknown option or a missing value: one line and the usage, not a stack trace.
    console.error((error as Error).message);
    console.error(usage);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.info(usage);
    return 0;
  }
  if (positionals.length === 0) {
    console.error(usage);
    return 2;
  }
  const stageFlag = values.stage?.toUpperCase();
  if (stageFlag !== undefined && stageFlag !== "P" && stageFlag !== "F") {
    console.error(`--stage takes P (preliminary) or F (final), not ${values.stage}`);
    console.error(usage);
    return 2;
  }
  const stage = stageFlag === undefined ? undefined : stageFlag === "P" ? "preliminary" : "final";
  // County files of a statewide first load go in side by side, one worker thread per core.
  const workers = Number(values.workers ?? availableParallelism());
  if (!Number.isInteger(workers) || workers < 1) {
    console.error(`--workers takes a whole number of at least 1, not ${values.workers}`);
    console.error(usage);
    return 2;
  }
  // Both checks come before any connection: a typo or a stopped broker is one clear line, not a
  // minute of client retries.
  const problems = await unreadable(positionals);
  if (problems.length > 0) {
    for (const problem of problems) {
      console.error(problem);
    }
    console.error("nothing was ingested");
    return 2;
  }
  let config: ReturnType<typeof readConfig>;
  try {
    config = readConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) {
      throw error;
    }
    console.error(error.message);
    return 2;
  }
  const logger = createLogger({ service: "parcels-ingest", level: "warn" });
  const bus = new Bus({ ...kafkaConnection(config), clientId: "parcels-ingest", logger });
  const kafkaProblem = await bus.checkConnection();
  if (kafkaProblem) {
    await bus.close();
    console.error(kafkaProblem.line);
    return 1;
  }
  await migrate(config.DATABASE_URL, migrations);
  // One trial connection told a bad setting already; this one is the ingest's own.
  await bus.close();
  let connections: Awaited<ReturnType<typeof openIngestConnections>>;
  try {
    connections = await openIngestConnections(config, logger, "parcels-ingest");
  } catch (error) {
    if (error instanceof MissingTopicsError) {
      console.error(error.message);
      console.error("nothing was ingested");
      return 1;
    }
    throw error;
  }
  const { pool, publish } = connections;
  // Sales first, so the rolls of the same run see them.
  const files = [...positionals].sort(
    (a, b) =>
      Number(parseRollFileName(basename(b))?.kind === "SDF") -
      Number(parseRollFileName(basename(a))?.kind === "SDF"),
  );
  const totals = { read: 0, new: 0, changed: 0, unchanged: 0, rejected: 0 };
  // Several rolls into an empty store (a statewide first load) go in without the secondary
  // indexes, built once after the last file rather than maintained row by row from the second.
  const rolls = files.filter((file) => parseRollFileName(basename(file))?.kind !== "SDF");
  const indexesAtEnd = rolls.length > 1 && !(await storeContents(pool)).parcels;
  // In such a run, the store holds no parcel of a county until its first file is loaded.
  const loadedCounties = new Set<number>();
  let failed = false;
  const sideBySide = indexesAtEnd && workers > 1 && countyLanes(rolls).length > 1 ? rolls : [];
  const loaded = (summary: IngestSummary) => {
    console.info(summaryLine(summary));
    if (summary.rejectsPath) {
      console.info(`  rejects report: ${summary.rejectsPath}`);
    }
    if (summary.unloadable) {
      // A run that loaded nothing of a file must not look like a success to a script.
      failed = true;
      console.error(`${basename(summary.file)}: nothing loaded: ${summary.unloadable}`);
    }
    for (const key of Object.keys(totals) as (keyof typeof totals)[]) {
      totals[key] += summary[key];
    }
  };
  try {
    for (const file of files.filter((item) => !sideBySide.includes(item))) {
      const report = progressReporter(basename(file));
      const named = parseRollFileName(basename(file));
      const countyNo = named?.kind === "NAL" ? named.countyNo : undefined;
      try {
        const summary = await ingestFile({ pool, publish }, file, {
          batchSize: config.INGEST_BATCH_SIZE,
          indexesBuiltByCaller: indexesAtEnd,
          takeForNew: indexesAtEnd && countyNo !== undefined && !loadedCounties.has(countyNo),
          ...(stage ? { rollStage: stage } : {}),
          ...(values["no-rejects"] ? { rejectsPath: null } : {}),
          onProgress: (progress) => report(progress),
        });
        if (countyNo !== undefined) {
          loadedCounties.add(countyNo);
        }
        report({ rowsRead: summary.read, bytesRead: 1, totalBytes: 1 }, true);
        loaded(summary);
      } catch (error) {
        failed = true;
        console.error(`${basename(file)}: ${(error as Error).message}`);
      }
    }
    if (sideBySide.length > 0) {
      // Bars of files loading at once would overwrite each other: a line every few seconds each.
      const lines = { isTTY: false, write: (text: string) => process.stderr.write(text) };
      const reporters = new Map(
        sideBySide.map((file) => [file, progressReporter(basename(file), lines)]),
      );
      const allLoaded = await loadSideBySide(
        connections,
        {
          lanes: countyLanes(sideBySide),
          workers,
          ...(env ? { env } : {}),
          rejects: !values["no-rejects"],
          ...(stage ? { rollStage: stage } : {}),
        },
        {
          progress: (file, progress) => reporters.get(file)?.(progress),
          loaded,
          failed(file, message) {
            failed = true;
            console.error(`${basename(file)}: ${message}`);
          },
        },
      );
      failed ||= !allLoaded;
    }
  } finally {
    if (indexesAtEnd) {
      const started = performance.now();
      process.stderr.write("building the parcel store's indexes…\n");
      await ensureSecondaryIndexes(pool).catch((error: unknown) => {
        // The parcels service builds missing indexes when it starts; say so rather than fail.
        failed = true;
        console.error(
          `building the indexes failed (${(error as Error).message}); the parcels service builds them when it starts`,
        );
      });
      console.info(`indexes built in ${((performance.now() - started) / 1000).toFixed(1)}s`);
    }
    await connections.close();
  }
  if (files.length > 1) {
    console.info(
      `total: read ${totals.read}, new ${totals.new}, changed ${totals.changed}, unchanged ${totals.unchanged}, rejected ${totals.rejected}`,
    );
  }
  return failed ? 1 : 0;
}

if (import.meta.main) {
  process.exitCode = await main(process.argv.slice(2));
}
