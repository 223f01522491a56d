import { randomBytes } from "node:crypto";
import { onBatch, type RunningConsumer } from "@th/bus";
import { contracts, type MatchFound, type ParcelIngested } from "@th/contracts";
import { parcelIngested } from "@th/contracts/samples";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { inSpan, startTelemetry } from "@th/telemetry";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { buildApp, type MatcherApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import { createWatchlistStore } from "../db/watchlists.ts";

const telemetry = startTelemetry({ service: "matcher-test", enabled: true });
let harness: TestHarness<Config>;
let app: MatcherApp;
let collector: RunningConsumer;
const found: { event: MatchFound; traceparent: string | undefined }[] = [];

beforeAll(async () => {
  harness = await createTestHarness({
    config: readConfig({}),
    migrations: [migrations],
    topics: [contracts.parcelIngested, contracts.matchFound],
  });
  app = await buildApp(harness, { projection: false });
  await app.start();
  collector = await harness.bus.consume({
    group: `test.collect.${randomBytes(4).toString("hex")}`,
    subscriptions: [
      onBatch(contracts.matchFound, async (records) => {
        for (const record of records) {
          found.push({ event: record.value, traceparent: record.headers.traceparent });
        }
        return undefined;
      }),
    ],
  });
});

afterAll(async () => {
  await collector.stop();
  await app.stop();
  await harness.close();
  await telemetry.shutdown();
});

/** A watchlist of its own county, so the tests never see each other's matches. */
async function watchlistOf(county: number): Promise<string> {
  const store = createWatchlistStore(harness.pool, { maxPerTenant: 100 });
  const created = await store.create({
    tenantId: `tn_${randomBytes(4).toString("hex")}`,
    name: `County ${county}`,
    recipe: { filters: { counties: [county] } },
  });
  return created.id;
}

let serial = 0;
/** A parcel of the sample's shape with a fresh folio in the county, observed now. */
function parcel(county: number, overrides: Partial<ParcelIngested> = {}): ParcelIngested {
  serial++;
  const id = `${Date.now().toString().slice(-7)}${String(serial).padStart(6, "0")}`;
  return {
    ...parcelIngested,
    county_no: county,
    folio: `${county}-${id}`,
    parcel_id: id,
    content_hash: randomBytes(32).toString("hex"),
    observed_at: new Date().toISOString(),
    ...overrides,
  };
}

/** Parcels made by `make` until `count` of them share one partition of parcel.ingested. */
async function onePartition(
  count: number,
  make: (index: number) => ParcelIngested,
): Promise<[ParcelIngested, ParcelIngested, ParcelIngested]> {
  const picked: ParcelIngested[] = [];
  let partition: number | undefined;
  while (picked.length < count) {
    const candidate = make(picked.length);
    const at = await harness.bus.partitionFor(contracts.parcelIngested.topic, candidate.folio);
    partition ??= at;
    if (at === partition) {
      picked.push(candidate);
    }
  }
  return picked as [ParcelIngested, ParcelIngested, ParcelIngested];
}

function foundFor(watchlistId: string) {
  return found.filter((item) => item.event.watchlist.id === watchlistId);
}

async function matchRows(watchlistId: string): Promise<string[]> {
  const { rows } = await harness.pool.query<{ folio: string }>(
    "SELECT folio FROM matches WHERE watchlist_id = $1 ORDER BY folio",
    [watchlistId],
  );
  return rows.map((row) => row.folio);
}

describe("matching parcel.ingested in batches", () => {
  it("publishes each match.found in the trace of the parcel.ingested record it came from", async () => {
    const watchlistId = await watchlistOf(31);
    const parcels = [parcel(31), parcel(31)];
    const traceIdOf = new Map<string, string>();
    for (const each of parcels) {
      const traceId = await inSpan("ingest", {}, async (span) => {
        await harness.bus.publish(contracts.parcelIngested, each);
        return span.spanContext().traceId;
      });
      traceIdOf.set(each.folio, traceId);
    }
    await vi.waitFor(() => expect(foundFor(watchlistId)).toHaveLength(2), { timeout: 20_000 });
    for (const { event, traceparent } of foundFor(watchlistId)) {
      const expected = traceIdOf.get(event.match.folio) as string;
      expect(expected).toMatch(/^[0-9a-f]{32}$/);
      expect(traceparent?.split("-")[1]).toBe(expected);
    }
  });

  it("writes one match and one match.found per parcel version however often the record comes", async () => {
    const watchlistId = await watchlistOf(32);
    const once = parcel(32);
    // Twice in one batch, then once more later, as a redelivery would.
    await harness.bus.publish(contracts.parcelIngested, [once, once]);
    await vi.waitFor(() => expect(foundFor(watchlistId)).toHaveLength(1), { timeout: 20_000 });
    const before = app.counters().parcels;
    await harness.bus.publish(contracts.parcelIngested, once);
    const later = parcel(32);
    await harness.bus.publish(contracts.parcelIngested, later);
    await vi.waitFor(() => expect(foundFor(watchlistId)).toHaveLength(2), { timeout: 20_000 });
    expect(app.counters().parcels).toBeGreaterThanOrEqual(before + 2);
    await app.flushOutbox();
    expect(
      foundFor(watchlistId)
        .map((item) => item.event.match.folio)
        .sort(),
    ).toEqual([once.folio, later.folio].sort());
    expect(await matchRows(watchlistId)).toEqual([once.folio, later.folio].sort());
  });

  it("parks a parcel that cannot be judged and matches the rest of its batch", async () => {
    const watchlistId = await watchlistOf(33);
    const parkedBefore = app.counters().parked;
    // Keyed by folio: three folios of one partition, so they are fetched as one batch.
    const [first, poison, second] = await onePartition(3, (index) =>
      index === 1 ? parcel(33, { observed_at: "not a time" }) : parcel(33),
    );
    await harness.bus.publish(contracts.parcelIngested, [first, poison, second]);
    await vi.waitFor(() => expect(foundFor(watchlistId)).toHaveLength(2), { timeout: 20_000 });
    expect(foundFor(watchlistId).map((item) => item.event.match.folio)).toEqual([
      first.folio,
      second.folio,
    ]);
    expect(app.counters().parked).toBe(parkedBefore + 1);
  });
});
