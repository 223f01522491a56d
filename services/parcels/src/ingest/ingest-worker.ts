/**
 * A worker thread of a side-by-side load (`side-by-side.ts`): loads the county lanes it is handed,
 * one file after another, with its own connections, and reports each file's progress, summary or
 * failure. The thread that started it holds the ingest lock, moves the watermark and builds the
 * indexes; this one only stores and publishes.
 */
import { parentPort, workerData } from "node:worker_threads";
import { createLogger } from "@th/telemetry";
import { readConfig } from "../config.ts";
import { openIngestConnections } from "./ingest-connections.ts";
import { ingestFile } from "./ingest-file.ts";
import type { FromWorker, ToWorker, WorkerSetup } from "./side-by-side.ts";

const port = parentPort;
if (!port) {
  throw new Error("ingest-worker.ts runs as a worker thread of the ingest command");
}
const setup = workerData as WorkerSetup;
const config = readConfig(setup.env);
const logger = createLogger({ service: "parcels-ingest", level: "warn" });
const connections = await openIngestConnections(config, logger, "parcels-ingest");
const send = (message: FromWorker) => port.postMessage(message);

port.on("message", async (message: ToWorker) => {
  if (message.type === "stop") {
    await connections.close().catch(() => {});
    port.close();
    return;
  }
  for (const [index, file] of message.lane.files.entries()) {
    try {
      const summary = await ingestFile(
        { pool: connections.pool, publish: connections.publish },
        file,
        {
          batchSize: config.INGEST_BATCH_SIZE,
          lockHeldByCaller: true,
          indexesBuiltByCaller: true,
          // Until its first file is in, the store holds no parcel of the lane's county.
          takeForNew: message.lane.countyNo !== null && index === 0,
          ...(setup.rollStage ? { rollStage: setup.rollStage } : {}),
          ...(setup.rejects ? {} : { rejectsPath: null }),
          onProgress: (progress) => send({ type: "progress", file, progress }),
        },
      );
      send({ type: "summary", summary });
    } catch (error) {
      send({ type: "failed", file, message: (error as Error).message });
    }
  }
  send({ type: "idle" });
});
send({ type: "ready" });
