// The parcel store of an ingest test: a harness of its own with the parcels schema and the
// parcel.ingested topic, emptied before each test, a folder for the roll files the test writes,
// and what a run publishes, decoded. Test fixture only: never imported by production code.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeValue } from "@th/bus";
import { contracts, type ParcelIngested } from "@th/contracts";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, beforeEach } from "vitest";
import { type Config, readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import type { Publish } from "../ingest/ingest-file.ts";
import { NAL_HEADER_LINE } from "./generate-nal.ts";

export interface IngestRuns {
  harness: TestHarness<Config>;
  /** The folder of the roll files, removed after the file's tests. */
  dir: string;
  /** The roll date the runs are told. */
  asOf: Date;
  /** Every parcel.ingested a run published through `collect`, emptied before each test. */
  published: ParcelIngested[];
  collect: Publish;
  /** Writes a roll file of `lines` under `header`, with the roll's CRLF line ends; its path. */
  writeRoll(name: string, lines: readonly string[], header?: string): Promise<string>;
}

/** The store and folder of a file's ingest tests; `prefix` names the folder. */
export function useIngestRuns(prefix: string): IngestRuns {
  const published: ParcelIngested[] = [];
  const runs = {
    asOf: new Date("2025-10-01T00:00:00Z"),
    published,
    collect: async (records) => {
      published.push(
        ...records.values.map((value) => decodeValue(contracts.parcelIngested, value, {})),
      );
    },
    async writeRoll(name, lines, header = NAL_HEADER_LINE) {
      const path = join(runs.dir, name);
      await writeFile(path, `${[header, ...lines].join("\r\n")}\r\n`);
      return path;
    },
  } as IngestRuns;
  beforeAll(async () => {
    runs.harness = await createTestHarness({
      config: readConfig({}),
      migrations: [migrations],
      topics: [contracts.parcelIngested],
    });
    runs.dir = await mkdtemp(join(tmpdir(), prefix));
  });
  afterAll(async () => {
    await runs.harness?.close();
    if (runs.dir) {
      await rm(runs.dir, { recursive: true, force: true });
    }
  });
  beforeEach(async () => {
    published.length = 0;
    await runs.harness.pool.query("TRUNCATE parcels, recorded_sales, ingest_runs");
    await runs.harness.pool.query("UPDATE publish_watermark SET published_through = 0");
  });
  return runs;
}
