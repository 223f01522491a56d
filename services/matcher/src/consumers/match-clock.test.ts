import { randomBytes } from "node:crypto";
import { contracts } from "@th/contracts";
import { parcelIngested } from "@th/contracts/samples";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { buildApp, type MatcherApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import { createWatchlistStore } from "../db/watchlists.ts";

// A clock far from the machine's, so a row stamped by the database's would stand out.
const CLOCK = new Date("2031-05-06T07:08:09.000Z");

let harness: TestHarness<Config>;
let app: MatcherApp;

beforeAll(async () => {
  harness = await createTestHarness({
    config: readConfig({}),
    migrations: [migrations],
    topics: [contracts.parcelIngested, contracts.matchFound],
  });
  app = await buildApp(harness, { now: () => CLOCK });
  await app.start();
});

afterAll(async () => {
  await app.stop();
  await harness.close();
});

describe("the matcher's clock", () => {
  it("stamps a match and a manual run with the matcher's time, not the database's", async () => {
    const tenantId = `tn_${randomBytes(4).toString("hex")}`;
    const store = createWatchlistStore(harness.pool, { maxPerTenant: 10 });
    const watchlist = await store.create({
      tenantId,
      name: "County 41",
      recipe: { filters: { counties: [41] } },
    });
    await app.cache.refresh();
    const id = `${Date.now().toString().slice(-7)}000001`;
    await harness.bus.publish(contracts.parcelIngested, {
      ...parcelIngested,
      county_no: 41,
      folio: `41-${id}`,
      parcel_id: id,
      content_hash: randomBytes(32).toString("hex"),
      observed_at: new Date().toISOString(),
    });
    const match = await vi.waitFor(
      async () => {
        const { rows } = await harness.pool.query<{ created_at: Date }>(
          "SELECT created_at FROM matches WHERE watchlist_id = $1",
          [watchlist.id],
        );
        expect(rows).toHaveLength(1);
        return rows[0];
      },
      { timeout: 20_000, interval: 50 },
    );
    expect(match?.created_at.toISOString()).toBe(CLOCK.toISOString());

    const run = await app.runs.start(tenantId, watchlist.id);
    await app.runs.settle();
    expect(run.created_at).toBe(CLOCK.toISOString());
    const { rows } = await harness.pool.query<{ created_at: Date }>(
      "SELECT created_at FROM manual_runs WHERE id = $1",
      [run.id],
    );
    expect(rows[0]?.created_at.toISOString()).toBe(CLOCK.toISOString());
  }, 40_000);
});
