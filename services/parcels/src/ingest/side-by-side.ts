/**
 * A statewide first load on every core: the county files of a run into an empty store load side
 * by side, one worker thread per core, each county's files in one lane (`countyLanes`). Each
 * worker parses, diffs, stores and publishes its files as a single ingest does; this thread holds
 * the ingest lock for the whole run, so no other ingest (nor the service start's recovery) writes
 * meanwhile, and it alone moves the publish watermark: files stored side by side commit their
 * change_seq values interleaved, so the watermark moves only once every file is on the topic.
 * The caller builds the secondary indexes once, after the run.
 */
import { Worker } from "node:worker_threads";
import type { RollStage } from "@th/contracts";
import type { Pool } from "@th/db";
import {
  advanceWatermark,
  dropSecondaryIndexes,
  publishPending,
  withIngestLock,
} from "../db/parcel-store.ts";
import type { CountyLane } from "../domain/county-lanes.ts";
import type { IngestProgress, IngestSummary, Publish } from "./ingest-file.ts";

/** What a worker is started with. */
export interface WorkerSetup {
  /**
   * The environment the command read its configuration from, when not the process's (which a
   * thread inherits): each worker reads it the same way, since a parsed configuration holds
   * secrets that do not survive the copy to a thread.
   */
  env?: Readonly<Record<string, string | undefined>>;
  rollStage?: RollStage;
  /** Whether each file's rejects report is written. */
  rejects: boolean;
}

export type ToWorker = { type: "lane"; lane: CountyLane } | { type: "stop" };

export type FromWorker =
  | { type: "ready" }
  | { type: "idle" }
  | { type: "progress"; file: string; progress: IngestProgress }
  | { type: "summary"; summary: IngestSummary }
  | { type: "failed"; file: string; message: string };

export interface SideBySideEvents {
  progress(file: string, progress: IngestProgress): void;
  loaded(summary: IngestSummary): void;
  failed(file: string, message: string): void;
}

export interface SideBySideOptions extends WorkerSetup {
  lanes: readonly CountyLane[];
  workers: number;
}

/**
 * Loads `lanes` side by side on `workers` threads under the ingest lock. When every file loaded,
 * the watermark moves past everything they stored; when any failed, every stored change not yet
 * confirmed is published again from the watermark the run began at (at least once: consumers
 * see some records twice, none lost). Resolves whether every file loaded.
 */
export async function loadSideBySide(
  deps: { pool: Pool; publish: Publish },
  options: SideBySideOptions,
  events: SideBySideEvents,
): Promise<boolean> {
  return withIngestLock(deps.pool, async () => {
    // A run that died before left changes to publish; then one drop for all workers.
    await publishPending(deps.pool, deps.publish);
    await dropSecondaryIndexes(deps.pool);
    let storedThrough = 0;
    let allLoaded = true;
    await runLanes(options, {
      progress: events.progress,
      loaded(summary) {
        storedThrough = Math.max(storedThrough, summary.storedThrough);
        events.loaded(summary);
      },
      failed(file, message) {
        allLoaded = false;
        events.failed(file, message);
      },
    });
    if (allLoaded) {
      await advanceWatermark(deps.pool, storedThrough);
    } else {
      await publishPending(deps.pool, deps.publish);
    }
    return allLoaded;
  });
}

/**
 * A worker's young generation, in MB: the main thread's default (semi-spaces of 16 MB) rather than
 * a worker's (192 MB, semi-spaces of 64 MB), which each worker filled before collecting it. With
 * two workers loading four county files, peak RSS was 600–635 MB against 805–855 MB, and CPU per
 * row the same within the noise of a shared machine.
 */
const WORKER_YOUNG_GENERATION_MB = 48;

/**
 * Hands the lanes out to the workers, the next to whichever is idle first. The first lanes go out
 * once every worker has connected, so the largest lanes start together instead of the first
 * worker up taking several while the others start.
 */
async function runLanes(options: SideBySideOptions, events: SideBySideEvents): Promise<void> {
  const queue = [...options.lanes];
  const count = Math.max(1, Math.min(options.workers, options.lanes.length));
  const allStarted = Promise.withResolvers<void>();
  let started = 0;
  /** A worker is up (or died trying). */
  const arrived = () => {
    started += 1;
    if (started === count) {
      allStarted.resolve();
    }
  };
  const setup: WorkerSetup = {
    ...(options.env ? { env: options.env } : {}),
    rejects: options.rejects,
    ...(options.rollStage ? { rollStage: options.rollStage } : {}),
  };
  const lane = () =>
    new Promise<void>((resolve) => {
      const worker = new Worker(new URL("./ingest-worker.ts", import.meta.url), {
        workerData: setup,
        resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
      });
      /** The lane this worker is loading, and which of its files it has reported. */
      let current: CountyLane | undefined;
      const reported = new Set<string>();
      let up = false;
      const next = () => {
        current = queue.shift();
        reported.clear();
        worker.postMessage(current ? { type: "lane", lane: current } : { type: "stop" });
      };
      worker.on("message", (message: FromWorker) => {
        switch (message.type) {
          case "ready":
            up = true;
            arrived();
            void allStarted.promise.then(next);
            return;
          case "idle":
            next();
            return;
          case "progress":
            events.progress(message.file, message.progress);
            return;
          case "summary":
            reported.add(message.summary.file);
            events.loaded(message.summary);
            return;
          case "failed":
            reported.add(message.file);
            events.failed(message.file, message.message);
            return;
        }
      });
      // A worker that dies (it could not connect, or ran out of memory) fails what it had left;
      // the other workers take the rest of the queue.
      worker.on("error", (error) => {
        if (!up) {
          up = true;
          arrived();
        }
        for (const file of current?.files ?? []) {
          if (!reported.has(file)) {
            events.failed(file, error.message);
          }
        }
        current = undefined;
      });
      worker.on("exit", () => {
        if (!up) {
          up = true;
          arrived();
        }
        resolve();
      });
    });
  await Promise.all(Array.from({ length: count }, lane));
  // Every worker died before the queue was empty: what is left was not loaded.
  for (const left of queue) {
    for (const file of left.files) {
      events.failed(file, "not loaded: every ingest worker stopped");
    }
  }
}
