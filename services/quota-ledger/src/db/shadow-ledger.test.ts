import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Config, readConfig } from "../config.ts";
import { leadView } from "../testing/fixtures.ts";
import { migrations } from "./migrations.ts";
import { createShadowLedger, type ShadowRow } from "./shadow-ledger.ts";

let harness: TestHarness<Config>;

beforeAll(async () => {
  harness = await createTestHarness({ config: readConfig({}), migrations: [migrations] });
});
afterAll(async () => {
  await harness.close();
});

function row(offset: number, overrides: Partial<ShadowRow["value"]> = {}): ShadowRow {
  const day = `2026-11-${String(1 + (offset % 28)).padStart(2, "0")}`;
  return {
    value: {
      ...leadView(`ten_shadow_${offset % 7}`, `F${offset}`, `${day}T09:30:00.123Z`, "2026-11-01"),
      ...overrides,
    },
    partition: offset % 3,
    offset: String(offset),
  };
}

describe("shadow ledger writer", () => {
  it("stores every value as given, across chunk boundaries and with values COPY must escape", async () => {
    const rows: ShadowRow[] = [];
    // Several chunks' worth of ordinary rows around the ones that need care.
    for (let offset = 0; offset < 6_000; offset++) {
      rows.push(row(offset));
    }
    rows[10] = row(10, { request_id: "tab\there", key_id: null, member_id: null });
    rows[11] = row(11, { request_id: "line\nbreak\r\nand \\ backslash \\N" });
    rows[12] = row(12, { tenant_id: "ten_é_日本", folio: "F12-ñ-🏠" });
    // A line longer than a whole chunk of the connection.
    rows[4_000] = row(4_000, { request_id: `long_${"é\\\t".repeat(120_000)}` });

    const shadow = createShadowLedger(harness.pool);
    await shadow.reset();
    const writer = await shadow.openWriter(2);
    for (let start = 0; start < rows.length; start += 700) {
      await writer.write(rows.slice(start, start + 700));
    }
    await writer.close();

    const { rows: stored } = await harness.pool.query<Record<string, string | number | null>>(
      `SELECT tenant_id, to_char(day, 'YYYY-MM-DD') AS day, folio,
              to_char(billing_period_start, 'YYYY-MM-DD') AS billing_period_start, surface,
              request_id, key_id, member_id,
              to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS recorded_at,
              source_partition, source_offset::text AS source_offset
         FROM lead_views_shadow ORDER BY lead_views_shadow.source_offset`,
    );
    expect(stored).toEqual(
      rows.map(({ value, partition, offset }) => ({
        ...value,
        source_partition: partition,
        source_offset: offset,
      })),
    );
  });

  it("keeps every row when writers of several partitions share a lane and wait on it together", async () => {
    const shadow = createShadowLedger(harness.pool);
    await shadow.reset();
    // One lane for three partitions: three writers fill it at once, each waiting for the
    // connection while the others add lines to the buffer it will send next.
    const writer = await shadow.openWriter(1);
    // Lines of a third of a lane's buffer, about 80 MB in all: far past what a lane queues
    // before it waits for the connection, and a waiting writer's line often no longer fits in
    // what the others added meanwhile.
    const padding = "r".repeat(90_000);
    const byPartition = [0, 1, 2].map((partition) =>
      Array.from({ length: 300 }, (_, index) => {
        const offset = index * 3 + partition;
        return { ...row(offset, { request_id: `${padding}_${offset}` }), partition };
      }),
    );
    await Promise.all(
      byPartition.map(async (rows) => {
        for (let start = 0; start < rows.length; start += 20) {
          await writer.write(rows.slice(start, start + 20));
        }
      }),
    );
    await writer.close();
    const { rows } = await harness.pool.query<{ n: number; distinct_offsets: number }>(
      "SELECT count(*)::int AS n, count(DISTINCT source_offset)::int AS distinct_offsets FROM lead_views_shadow",
    );
    expect(rows[0]).toEqual({ n: 900, distinct_offsets: 900 });
  });

  it("commits nothing of an aborted replay", async () => {
    const shadow = createShadowLedger(harness.pool);
    await shadow.reset();
    const writer = await shadow.openWriter(1);
    await writer.write(Array.from({ length: 5_000 }, (_, offset) => row(offset)));
    await writer.abort();
    expect(await shadow.summary()).toEqual({ rows: 0, tenants: 0, periods: 0 });
  });
});
