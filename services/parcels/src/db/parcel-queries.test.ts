// The count that prices a CSV export reads no more parcels than the export can write: an
// unfiltered count of the statewide table would scan millions of rows on every request.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Config, readConfig } from "../config.ts";
import { ingestFile } from "../ingest/ingest-file.ts";
import { writeNalFile } from "../testing/generate-nal.ts";
import { migrations } from "./migrations.ts";
import { COUNT_CEILING, countParcels, countQuery } from "./parcel-queries.ts";

const ROWS = 600;
let harness: TestHarness<Config>;
let dir: string;

beforeAll(async () => {
  harness = await createTestHarness({ config: readConfig({}), migrations: [migrations] });
  dir = await mkdtemp(join(tmpdir(), "parcel-count-"));
  const file = join(dir, "NAL16F202501.csv");
  await writeNalFile(file, { rows: ROWS, seed: 3, countyNo: 16, rollYear: 2025 });
  await ingestFile({ pool: harness.pool, publish: async () => {} }, file, {
    asOf: new Date("2025-10-01T00:00:00Z"),
    rejectsPath: null,
  });
  await harness.pool.query("ANALYZE parcels");
}, 60_000);
afterAll(async () => {
  await harness.close();
  await rm(dir, { recursive: true, force: true });
});

interface PlanNode {
  "Node Type": string;
  "Actual Rows": number;
  Plans?: PlanNode[];
}

/** Every node of a plan, depth first. */
function nodesOf(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodesOf)];
}

/** The parcel rows the query's scans actually produced, by EXPLAIN ANALYZE. */
async function parcelsRead(query: { text: string; values: unknown[] }): Promise<number> {
  const { rows } = await harness.pool.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
    `EXPLAIN (ANALYZE, FORMAT JSON) ${query.text}`,
    query.values,
  );
  const plan = rows[0]?.["QUERY PLAN"][0].Plan as PlanNode;
  const scans = nodesOf(plan).filter((node) => node["Node Type"].endsWith("Scan"));
  expect(scans.length).toBeGreaterThan(0);
  return scans.reduce((sum, scan) => sum + scan["Actual Rows"], 0);
}

describe("the count that prices a lead export", () => {
  it("reads at most the export's max_rows parcels, unfiltered or filtered, under a Limit", async () => {
    const wholeTable = await countParcels(harness.pool, {});
    expect(wholeTable).toBeGreaterThan(100);

    expect(await parcelsRead(countQuery({}, 5))).toBeLessThanOrEqual(5);
    expect(await parcelsRead(countQuery({ county: 16 }, 7))).toBeLessThanOrEqual(7);
    const { rows } = await harness.pool.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
      `EXPLAIN (FORMAT JSON) ${countQuery({}, 5).text}`,
      countQuery({}, 5).values,
    );
    const plan = rows[0]?.["QUERY PLAN"][0].Plan as PlanNode;
    expect(nodesOf(plan).map((node) => node["Node Type"])).toContain("Limit");
  });

  it("is exact up to the bound: the whole count below it, the bound itself above it", async () => {
    const wholeTable = await countParcels(harness.pool, {});
    expect(await countParcels(harness.pool, {}, wholeTable + 50)).toBe(wholeTable);
    expect(await countParcels(harness.pool, {}, wholeTable)).toBe(wholeTable);
    expect(await countParcels(harness.pool, {}, 5)).toBe(5);
    expect(await countParcels(harness.pool, { county: 23 }, 5)).toBe(0);
  });

  it("never counts past the export ceiling, whatever bound a caller asks for", () => {
    const asked = countQuery({}, Number.MAX_SAFE_INTEGER);
    expect(asked.values.at(-1)).toBe(COUNT_CEILING);
    expect(countQuery({}).values.at(-1)).toBe(COUNT_CEILING);
    expect(countQuery({}, 0).values.at(-1)).toBe(1);
  });
});
