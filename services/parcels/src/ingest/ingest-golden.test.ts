// The ingest's output, byte for byte: a fixed sample of roll and sales files ingested in a fixed
// order, and every record stored, record published and reject reported hashed against the
// expectation checked in beside it (golden/expected.json). A change to how a parcel is built,
// encoded or stored that alters a single byte of what the store or the topic gets fails here.
// After a deliberate change of output, the failure's diff names the step and digest that moved,
// and its new value is the one to check in.
import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase, type TestDatabase } from "@th/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrations } from "../db/migrations.ts";
import { type IngestSummary, ingestFile, type Publish } from "./ingest-file.ts";

const GOLDEN = join(import.meta.dirname, "golden");
const EXPECTED = join(GOLDEN, "expected.json");

/**
 * The sample's steps, in order: a first load into an empty store (several batches, a parcel
 * repeated across them), recorded sales, the same roll again (unchanged but for the parcels the
 * sales changed), and the next year's roll (prior-roll signals, parcels gone and new).
 */
const STEPS = [
  "NAL23F202501.csv",
  "SDF23F202501.csv",
  "NAL23F202501.csv",
  "NAL23F202601.csv",
] as const;

const asOf = new Date("2026-03-01T00:00:00Z");
const observedAt = new Date("2026-03-02T12:00:00Z");

interface StepResult {
  file: string;
  counts: Pick<IngestSummary, "read" | "new" | "changed" | "unchanged" | "rejected" | "published">;
  events: string;
  rejects: string;
  store: string;
}

interface Golden {
  sample: Record<string, string>;
  steps: StepResult[];
}

const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");

/**
 * An ingest id ends in its start time and random bytes, the one run-specific value in a record:
 * each is replaced by a fixed id of the same length (so no Avro length prefix moves) before
 * hashing.
 */
function withFixedIds(bytes: Buffer, ids: readonly string[]): Buffer {
  let out = bytes;
  for (const [step, id] of ids.entries()) {
    const from = Buffer.from(id);
    const to = Buffer.from(`ing_golden_${step}`.padEnd(id.length, "_"));
    for (let at = out.indexOf(from); at !== -1; at = out.indexOf(from, at + to.length)) {
      out = Buffer.concat([out.subarray(0, at), to, out.subarray(at + from.length)]);
    }
  }
  return out;
}

/**
 * Every stored parcel, every column but its place in the outbox and the time of the write, in
 * folio order. Which step stored a parcel last shows in its record (the step's ingest id); the
 * order of change_seq within one stored batch is the order Postgres reads its staging table in,
 * which no one relies on and Postgres does not promise.
 */
async function storeDigest(db: TestDatabase, ids: readonly string[]): Promise<string> {
  const { rows } = await db.pool.query(
    `SELECT folio, county_no, parcel_id, roll_year, roll_stage, content_hash, situs_city,
            situs_zip5, use_class, homestead, just_value, est_equity, signals, prior_roll_year,
            prior_homestead, prior_just_value, record,
            (SELECT header FROM record_schemas WHERE id = record_schema) AS record_schema,
            event::text AS event, detail::text AS detail, source_file_id, source_line,
            source_seq_no
       FROM parcels ORDER BY folio`,
  );
  const hash = createHash("sha256");
  for (const row of rows) {
    hash.update(
      JSON.stringify(row, (_key, value) =>
        value?.type === "Buffer"
          ? withFixedIds(Buffer.from(value.data), ids).toString("hex")
          : value,
      ),
    );
    hash.update("\n");
  }
  return hash.digest("hex");
}

let db: TestDatabase;
let dir: string;

beforeAll(async () => {
  db = await createTestDatabase([migrations]);
  dir = await mkdtemp(join(tmpdir(), "nal-golden-"));
});
afterAll(async () => {
  await db.drop();
  await rm(dir, { recursive: true, force: true });
});

async function runSample(): Promise<Golden> {
  const sample: Record<string, string> = {};
  for (const file of new Set(STEPS)) {
    sample[file] = sha256(await readFile(join(GOLDEN, file)));
  }
  const ids: string[] = [];
  const steps: StepResult[] = [];
  for (const [index, file] of STEPS.entries()) {
    const published: Buffer[] = [];
    const publish: Publish = async (records) => {
      for (const [at, value] of records.values.entries()) {
        published.push(
          Buffer.from(`${records.keys[at]}\u0000`),
          Buffer.from(value),
          Buffer.from("\n"),
        );
      }
    };
    const rejectsPath = join(dir, `${index}.rejects.csv`);
    const summary = await ingestFile({ pool: db.pool, publish }, join(GOLDEN, file), {
      asOf,
      now: () => observedAt,
      batchSize: 40,
      rejectsPath,
    });
    ids.push(summary.ingestId);
    const rejects = await readFile(rejectsPath).catch(() => Buffer.alloc(0));
    steps.push({
      file,
      counts: {
        read: summary.read,
        new: summary.new,
        changed: summary.changed,
        unchanged: summary.unchanged,
        rejected: summary.rejected,
        published: summary.published,
      },
      events: sha256(withFixedIds(Buffer.concat(published), ids)),
      rejects: sha256(rejects),
      store: await storeDigest(db, ids),
    });
  }
  return { sample, steps };
}

describe("golden sample", () => {
  it("stores, publishes and reports the checked-in sample byte for byte as expected", async () => {
    const actual = await runSample();
    const expected = JSON.parse(await readFile(EXPECTED, "utf8")) as Golden;
    // The sample first: a changed sample file would make every digest below differ.
    expect(actual.sample).toEqual(expected.sample);
    expect(actual.steps).toEqual(expected.steps);
  });
});
