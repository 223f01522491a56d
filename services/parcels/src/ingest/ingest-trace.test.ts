import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { on } from "@th/bus";
import { contracts } from "@th/contracts";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { startTelemetry, type TelemetryOptions } from "@th/telemetry";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Config, readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import { writeNalFile } from "../testing/generate-nal.ts";
import { ingestFile } from "./ingest-file.ts";

type Exporter = NonNullable<TelemetryOptions["exporter"]>;
type FinishedSpan = Parameters<Exporter["export"]>[0][number];

// Real trace ids: tracing on, finished spans kept in memory.
const finished: FinishedSpan[] = [];
const exporter: Exporter = {
  export: (spans, done) => {
    finished.push(...spans);
    done({ code: 0 });
  },
  shutdown: async () => {},
};
const telemetry = startTelemetry({ service: "parcels-test", enabled: true, exporter });

let harness: TestHarness<Config>;
let dir: string;

beforeAll(async () => {
  harness = await createTestHarness({
    config: readConfig({}),
    migrations: [migrations],
    topics: [contracts.parcelIngested],
  });
  dir = await mkdtemp(join(tmpdir(), "nal-trace-"));
});
afterAll(async () => {
  await harness.close();
  await telemetry.shutdown();
  await rm(dir, { recursive: true, force: true });
});

describe("ingest trace", () => {
  it("publishes every parcel.ingested record of a file with the traceparent of its ingest span", async () => {
    const path = join(dir, "NAL23F202501.csv");
    await writeNalFile(path, { rows: 60, seed: 5, countyNo: 23 });
    const traceparents = new Map<string, string | undefined>();
    const consumer = await harness.bus.consume({
      group: "ingest-trace-test",
      fromBeginning: true,
      subscriptions: [
        on(contracts.parcelIngested, async (message) => {
          traceparents.set(message.value.folio, message.headers.traceparent);
          return undefined;
        }),
      ],
    });
    try {
      // Small batches: several publishes, each overlapped with the next batch's store.
      const summary = await ingestFile(
        {
          pool: harness.pool,
          publish: (records) => harness.bus.publishEncoded(records),
        },
        path,
        { batchSize: 7, rejectsPath: null, deferIndexesFromBytes: 0 },
      );
      expect(summary.published).toBe(60);
      await expect.poll(() => traceparents.size, { timeout: 15_000 }).toBe(60);

      const span = finished.find((item) => item.name === "ingest NAL23F202501.csv");
      expect(span).toBeDefined();
      const { traceId, spanId } = span?.spanContext() ?? { traceId: "", spanId: "" };
      expect(summary.traceId).toBe(traceId);
      expect(new Set(traceparents.values())).toEqual(new Set([`00-${traceId}-${spanId}-01`]));
    } finally {
      await consumer.stop();
    }
  });
});
