import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { on } from "@th/bus";
import { contracts } from "@th/contracts";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type Config, readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import { capturedConsole } from "../testing/console.ts";
import { writeNalFile } from "../testing/generate-nal.ts";
import { main } from "./cli.ts";

let dir: string;
const harnesses: TestHarness<Config>[] = [];

/** Real dependencies of one run: its own database and dev broker. */
async function store(): Promise<TestHarness<Config>> {
  const harness = await createTestHarness({
    config: readConfig({}),
    migrations: [migrations],
    topics: [contracts.parcelIngested],
  });
  harnesses.push(harness);
  return harness;
}

/** `npm run ingest` against `harness`, in small batches so every file stores and publishes many. */
async function ingest(harness: TestHarness<Config>, args: string[]): Promise<number> {
  return main([...args, "--no-rejects"], {
    DATABASE_URL: harness.config.DATABASE_URL,
    KAFKA_BROKERS: harness.brokers.join(","),
    INGEST_BATCH_SIZE: "20",
  });
}

async function storedParcels(harness: TestHarness<Config>) {
  const { rows } = await harness.pool.query<Record<string, unknown>>(
    `SELECT folio, county_no, parcel_id, roll_year, roll_stage, content_hash, homestead,
            just_value, est_equity, signals, prior_roll_year, prior_just_value
       FROM parcels ORDER BY folio`,
  );
  return rows;
}

/**
 * Every parcel.ingested record on the harness's broker, as folio and content hash, sorted; read
 * until `expected` parcels were seen (a parcel published twice counts once).
 */
async function publishedParcels(harness: TestHarness<Config>, expected: number) {
  const seen: string[] = [];
  const folios = new Set<string>();
  const consumer = await harness.bus.consume({
    group: `side-by-side-${harnesses.indexOf(harness)}`,
    fromBeginning: true,
    subscriptions: [
      on(contracts.parcelIngested, async (message) => {
        seen.push(`${message.value.folio} ${message.value.content_hash}`);
        folios.add(message.value.folio);
        return undefined;
      }),
    ],
  });
  try {
    await expect.poll(() => folios.size, { timeout: 20_000 }).toBeGreaterThanOrEqual(expected);
    return seen.sort();
  } finally {
    await consumer.stop();
  }
}

/** ANALYZE runs of the parcels table: the index build after a first load ends with one. */
async function analyzeCount(harness: TestHarness<Config>): Promise<number> {
  const { rows } = await harness.pool.query<{ count: string }>(
    "SELECT analyze_count AS count FROM pg_stat_user_tables WHERE relname = 'parcels'",
  );
  return Number(rows[0]?.count ?? 0);
}

/** Pairs of ingests (by file name) that ran at the same time. */
async function overlappingRuns(harness: TestHarness<Config>): Promise<string[]> {
  const { rows } = await harness.pool.query<{ pair: string }>(
    `SELECT a.source_file || ' ' || b.source_file AS pair
       FROM ingest_runs a JOIN ingest_runs b ON a.source_file < b.source_file
      WHERE a.started_at < b.finished_at AND b.started_at < a.finished_at`,
  );
  return rows.map((row) => row.pair);
}

/**
 * Whether every secondary index was created after every ingest of the run had finished: the
 * transaction that created an index wrote its catalogue row, and transaction ids only grow.
 */
async function indexesBuiltAfterTheLastFile(harness: TestHarness<Config>): Promise<boolean> {
  const { rows } = await harness.pool.query<{ built: string; finished: string }>(
    `SELECT (SELECT min(c.xmin::text::bigint) FROM pg_class c
               JOIN pg_index i ON i.indexrelid = c.oid
              WHERE i.indrelid = 'parcels'::regclass AND NOT i.indisprimary) AS built,
            (SELECT max(xmin::text::bigint) FROM ingest_runs) AS finished`,
  );
  return Number(rows[0]?.built) > Number(rows[0]?.finished);
}

async function indexNames(harness: TestHarness<Config>): Promise<string[]> {
  const { rows } = await harness.pool.query<{ indexname: string }>(
    "SELECT indexname FROM pg_indexes WHERE tablename = 'parcels' ORDER BY indexname",
  );
  return rows.map((row) => row.indexname);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ingest-side-by-side-"));
});
afterAll(async () => {
  for (const harness of harnesses) {
    await harness.close();
  }
  await rm(dir, { recursive: true, force: true });
});
afterEach(() => {
  vi.restoreAllMocks();
});

describe("npm run ingest: a statewide first load on worker threads", () => {
  it("refuses a worker count that is not a whole number of at least 1, before connecting", async () => {
    const errors = capturedConsole("error");
    const code = await main(["--workers", "0", join(dir, "NAL16F202509.csv")], {
      KAFKA_BROKERS: "127.0.0.1:1",
    });
    expect(code).toBe(2);
    expect(errors[0]).toBe("--workers takes a whole number of at least 1, not 0");
  });

  it("loads county files side by side into the same store, publishing the same parcels, as one after another", async () => {
    // Three counties, one of them with a second roll that loads after its first (same lane).
    const files = [
      join(dir, "NAL16F202501.csv"),
      join(dir, "NAL60F202501.csv"),
      join(dir, "NAL23F202501.csv"),
      join(dir, "NAL16F202502.csv"),
    ];
    await writeNalFile(files[0] as string, { rows: 120, seed: 11, countyNo: 16 });
    await writeNalFile(files[1] as string, { rows: 100, seed: 12, countyNo: 60 });
    await writeNalFile(files[2] as string, { rows: 80, seed: 13, countyNo: 23 });
    await writeNalFile(files[3] as string, { rows: 100, seed: 14, countyNo: 16 });
    const sequential = await store();
    const sideBySide = await store();
    const printed = capturedConsole("info");
    capturedConsole("error");
    vi.spyOn(process.stderr, "write").mockReturnValue(true);

    expect(await ingest(sequential, ["--workers", "1", ...files])).toBe(0);
    const totals = printed.at(-1);
    expect(totals).toMatch(/^total: read 400, new \d+, changed \d+, unchanged \d+/);
    const analyzedBefore = await analyzeCount(sideBySide);
    printed.length = 0;
    expect(await ingest(sideBySide, ["--workers", "2", ...files])).toBe(0);

    // Files of different counties loaded at the same time; a county's two files did not.
    expect(await overlappingRuns(sequential)).toEqual([]);
    const overlapping = await overlappingRuns(sideBySide);
    expect(overlapping.length).toBeGreaterThan(0);
    expect(overlapping).not.toContain("NAL16F202501.csv NAL16F202502.csv");
    const stored = await storedParcels(sequential);
    expect(stored.length).toBeGreaterThan(250);
    expect(await storedParcels(sideBySide)).toEqual(stored);
    expect(printed.filter((line) => line.includes("(NAL): read"))).toHaveLength(4);
    expect(printed.at(-1)).toBe(totals);
    const published = await publishedParcels(sequential, stored.length);
    expect(await publishedParcels(sideBySide, stored.length)).toEqual(published);
    // Every stored change is confirmed on the topic: a later ingest republishes nothing.
    const { rows } = await sideBySide.pool.query<{ through: string; last: string }>(
      `SELECT (SELECT published_through FROM publish_watermark) AS through,
              (SELECT max(change_seq) FROM parcels) AS last`,
    );
    expect(rows[0]?.through).toBe(rows[0]?.last);
    // The indexes are built once, after the last file, by the command (one ANALYZE follows the
    // build), and are all there.
    expect(printed.filter((line) => /^indexes built in /.test(line))).toHaveLength(1);
    expect(await indexesBuiltAfterTheLastFile(sideBySide)).toBe(true);
    await expect.poll(() => analyzeCount(sideBySide), { timeout: 5_000 }).toBe(analyzedBefore + 1);
    expect(await indexNames(sideBySide)).toEqual(await indexNames(sequential));
  }, 120_000);

  it("keeps what the other files loaded, publishes it, and builds the indexes when one file fails", async () => {
    const good = [join(dir, "NAL31F202501.csv"), join(dir, "NAL41F202501.csv")];
    await writeNalFile(good[0] as string, { rows: 120, seed: 21, countyNo: 31 });
    await writeNalFile(good[1] as string, { rows: 90, seed: 22, countyNo: 41 });
    // A directory under a roll's name: readable to the command's check, it fails when read.
    const broken = join(dir, "NAL50F202501.csv");
    await mkdir(broken);
    const harness = await store();
    const errors = capturedConsole("error");
    capturedConsole("info");
    vi.spyOn(process.stderr, "write").mockReturnValue(true);

    expect(
      await ingest(harness, ["--workers", "2", good[0] as string, broken, good[1] as string]),
    ).toBe(1);

    expect(errors).toEqual([expect.stringMatching(/^NAL50F202501\.csv: .*EISDIR/)]);
    const stored = await storedParcels(harness);
    expect(stored.map((row) => row.county_no).sort()).toEqual([
      ...Array<number>(120).fill(31),
      ...Array<number>(90).fill(41),
    ]);
    const published = new Set(
      (await publishedParcels(harness, 210)).map((line) => line.split(" ")[0]),
    );
    expect(published).toEqual(new Set(stored.map((row) => row.folio)));
    const { rows } = await harness.pool.query<{ through: string; last: string }>(
      `SELECT (SELECT published_through FROM publish_watermark) AS through,
              (SELECT max(change_seq) FROM parcels) AS last`,
    );
    expect(rows[0]?.through).toBe(rows[0]?.last);
    expect(await indexNames(harness)).toEqual([
      "parcels_change_seq",
      "parcels_parcel_id",
      "parcels_pkey",
      "parcels_signals",
      "parcels_zip_folio",
    ]);
  }, 120_000);
});
