import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { contracts } from "@th/contracts";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type Config, readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import { capturedConsole } from "../testing/console.ts";
import { NAL_HEADER_LINE, nalLine, writeNalFile } from "../testing/generate-nal.ts";
import { main } from "./cli.ts";

let harness: TestHarness<Config>;
let dir: string;
/** Nothing listens here: a Postgres or Kafka client pointed at it fails. */
let closedPort: number;

beforeAll(async () => {
  harness = await createTestHarness({
    config: readConfig({}),
    migrations: [migrations],
    topics: [contracts.parcelIngested],
  });
  dir = await mkdtemp(join(tmpdir(), "ingest-cli-"));
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closedPort = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
});
afterAll(async () => {
  await harness.close();
  await rm(dir, { recursive: true, force: true });
});
afterEach(() => {
  vi.restoreAllMocks();
});

describe("npm run ingest", () => {
  it("refuses a file it cannot read before connecting to anything, and ingests nothing", async () => {
    const errors = capturedConsole("error");
    const code = await main([join(dir, "NAL23F202599.csv")], {
      DATABASE_URL: `postgres://nobody@127.0.0.1:${closedPort}/none`,
      KAFKA_BROKERS: `127.0.0.1:${closedPort}`,
    });
    expect(code).toBe(2);
    expect(errors).toEqual([
      `${join(dir, "NAL23F202599.csv")}: no such file`,
      "nothing was ingested",
    ]);
  });

  it("refuses a roll stage other than P or F", async () => {
    const errors = capturedConsole("error");
    const code = await main(["--stage", "X", join(dir, "NAL23F202598.csv")], {
      KAFKA_BROKERS: `127.0.0.1:${closedPort}`,
    });
    expect(code).toBe(2);
    expect(errors[0]).toBe("--stage takes P (preliminary) or F (final), not X");
  });

  it("answers --help with the usage and an unknown option with one line and the usage, not a stack trace", async () => {
    const printed = capturedConsole("info");
    expect(await main(["--help"])).toBe(0);
    expect(printed).toEqual([expect.stringMatching(/^usage: npm run ingest -- /)]);
    const errors = capturedConsole("error");
    expect(await main(["--bogus", "x.csv"])).toBe(2);
    expect(errors).toHaveLength(2);
    expect(errors[0]).toContain("--bogus");
    expect(errors[1]).toMatch(/^usage: /);
  });

  it("fails the run, naming the file, when a file has nothing it could load", async () => {
    const empty = join(dir, "NAL23F202507.csv");
    const renamed = join(dir, "NAL23F202508.csv");
    await writeFile(empty, "");
    await writeFile(
      renamed,
      `${NAL_HEADER_LINE.replace("OWN_NAME", "OWNER_NAME")}\r\n${nalLine({ CO_NO: 23, PARCEL_ID: "U1", ASMNT_YR: 2025, JV: 1 })}\r\n`,
    );
    const errors = capturedConsole("error");
    capturedConsole("info");
    vi.spyOn(process.stderr, "write").mockReturnValue(true);
    const code = await main([empty, renamed, "--no-rejects"], {
      DATABASE_URL: harness.config.DATABASE_URL,
      KAFKA_BROKERS: harness.brokers.join(","),
    });
    expect(code).toBe(1);
    expect(errors).toEqual([
      "NAL23F202507.csv: nothing loaded: the file is empty",
      "NAL23F202508.csv: nothing loaded: the header lacks OWN_NAME",
    ]);
  });

  it("says in one line which Kafka setting is wrong, before connecting to anything", async () => {
    const file = join(dir, "NAL23F202504.csv");
    await writeNalFile(file, { rows: 2, seed: 4, countyNo: 23 });
    const errors = capturedConsole("error");
    const code = await main([file], {
      DATABASE_URL: harness.config.DATABASE_URL,
      KAFKA_BROKERS: harness.brokers.join(","),
      KAFKA_TLS: "true",
      KAFKA_TLS_CERT_FILE: file,
    });
    expect(code).toBe(2);
    expect(errors).toEqual([
      `invalid configuration: KAFKA_TLS_CERT_FILE: ${file} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`,
    ]);
  });

  it("says in one line that no Kafka broker answers, instead of retrying", async () => {
    const file = join(dir, "NAL23F202501.csv");
    await writeNalFile(file, { rows: 5, seed: 3, countyNo: 23 });
    const errors = capturedConsole("error");
    const code = await main([file], {
      DATABASE_URL: harness.config.DATABASE_URL,
      KAFKA_BROKERS: `127.0.0.1:${closedPort}`,
    });
    expect(code).toBe(1);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(`no Kafka broker answers at 127.0.0.1:${closedPort}`);
    const { rows } = await harness.pool.query<{ count: string }>("SELECT count(*) FROM parcels");
    expect(rows[0]?.count).toBe("0");
  });

  it("ingests a roll end to end and prints its summary", async () => {
    const file = join(dir, "NAL23F202502.csv");
    await writeNalFile(file, { rows: 40, seed: 4, countyNo: 23 });
    const printed = capturedConsole("info");
    vi.spyOn(process.stderr, "write").mockReturnValue(true);
    const code = await main([file, "--no-rejects"], {
      DATABASE_URL: harness.config.DATABASE_URL,
      KAFKA_BROKERS: harness.brokers.join(","),
    });
    expect(code).toBe(0);
    expect(printed.join("\n")).toContain(
      "NAL23F202502.csv (NAL): read 40, new 40, changed 0, unchanged 0, rejected 0, published 40",
    );
    const { rows } = await harness.pool.query<{ count: string }>("SELECT count(*) FROM parcels");
    expect(rows[0]?.count).toBe("40");
  });

  it("loads several rolls into an empty store without the indexes and builds them once, after the last", async () => {
    await harness.pool.query("TRUNCATE parcels");
    const indexes = async () =>
      (
        await harness.pool.query<{ indexname: string; oid: number }>(
          `SELECT indexname, indexrelid::int AS oid FROM pg_indexes
             JOIN pg_class ON relname = indexname JOIN pg_index ON indexrelid = pg_class.oid
            WHERE tablename = 'parcels' ORDER BY indexname`,
        )
      ).rows;
    const before = await indexes();
    const files = [join(dir, "NAL16F202501.csv"), join(dir, "NAL60F202501.csv")];
    await writeNalFile(files[0] as string, { rows: 30, seed: 5, countyNo: 16 });
    await writeNalFile(files[1] as string, { rows: 20, seed: 6, countyNo: 60 });
    const printed = capturedConsole("info");
    vi.spyOn(process.stderr, "write").mockReturnValue(true);
    const code = await main([...files, "--no-rejects"], {
      DATABASE_URL: harness.config.DATABASE_URL,
      KAFKA_BROKERS: harness.brokers.join(","),
    });
    expect(code).toBe(0);
    expect(printed).toContainEqual(expect.stringMatching(/^indexes built in \d+\.\ds$/));
    expect(printed.at(-1)).toBe("total: read 50, new 50, changed 0, unchanged 0, rejected 0");
    // The same indexes, each built anew: they were dropped for the run.
    const after = await indexes();
    expect(after.map((index) => index.indexname)).toEqual(before.map((index) => index.indexname));
    for (const index of after.filter((item) => item.indexname !== "parcels_pkey")) {
      expect(before.find((item) => item.indexname === index.indexname)?.oid).not.toBe(index.oid);
    }
  });
});
