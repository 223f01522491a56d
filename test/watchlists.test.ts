// Watchlists end to end: gateway, keys, parcels, quota-ledger and the matcher on real Postgres,
// Redis and Kafka. Recipes through the API, matching of parcel.ingested into match.found,
// manual runs, polling (paid and free), versions, redelivery and parking.
import { randomBytes } from "node:crypto";
import { PARK_HEADERS, type RunningConsumer } from "@th/bus";
import { contracts, type MatchFound, type ParcelIngested } from "@th/contracts";
import { parcelIngested } from "@th/contracts/samples";
import { evaluateRecipe, parcelFacts } from "@th/matcher/domain";
import { STORED_EVENT_COLUMNS, type StoredEventColumns, storedEvent } from "@th/parcels/store";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";

let stack: EdgeStack;
const events: MatchFound[] = [];
let collector: RunningConsumer;

beforeAll(async () => {
  stack = await startEdgeStack();
  collector = await stack.harness.bus.consume({
    group: `test.collect.${randomBytes(4).toString("hex")}`,
    subscriptions: [
      {
        contract: contracts.matchFound as never,
        handle: async (message) => {
          events.push(
            contracts.matchFound.type.fromBuffer(message.value as Buffer) as unknown as MatchFound,
          );
          return undefined;
        },
      },
    ],
  });
});
afterAll(async () => {
  await collector.stop();
  await stack.close();
});

async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function tenant(leadViews = 1000) {
  const created = await stack.startTrial("custom");
  await stack.setCustomLimits(created.tenantId, {
    lead_views_per_month: leadViews,
    rate_per_minute: 100_000,
  });
  return created;
}

async function createWatchlist(key: string, recipe: unknown, name = "Test list") {
  const response = await stack.request("POST", "/v1/watchlists", { key, body: { name, recipe } });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as { id: string; recipe_version: number };
}

let folioCounter = 0;
/** A parcel of the contract sample's shape with a fresh folio, observed now. */
function parcel(overrides: Partial<ParcelIngested> = {}): ParcelIngested {
  folioCounter++;
  const id = `${Date.now().toString().slice(-7)}${String(folioCounter).padStart(6, "0")}`;
  return {
    ...parcelIngested,
    folio: `${overrides.county_no ?? 23}-${id}`,
    parcel_id: id,
    content_hash: randomBytes(32).toString("hex"),
    observed_at: new Date().toISOString(),
    ...overrides,
  };
}

function parcelsHandled(): number {
  return stack.matchers().reduce((sum, matcher) => sum + matcher.counters().parcels, 0);
}

/** Publishes parcels and waits until the matcher group has handled all of them. */
async function ingest(parcels: ParcelIngested[]) {
  const before = parcelsHandled();
  await stack.harness.bus.publish(contracts.parcelIngested, parcels);
  await waitFor("the matcher to handle the parcels", () =>
    parcelsHandled() >= before + parcels.length ? true : undefined,
  );
  for (const matcher of stack.matchers()) {
    await matcher.flushOutbox();
  }
}

function eventsOf(watchlistId: string): MatchFound[] {
  return events.filter((event) => event.watchlist.id === watchlistId);
}

async function matchRows(watchlistId: string) {
  const { rows } = await stack.harness.db
    .poolFor("matcher")
    .query<{ match_id: string; folio: string; recipe_version: number; trigger: string }>(
      "SELECT match_id, folio, recipe_version, trigger FROM matches WHERE watchlist_id = $1 ORDER BY seq",
      [watchlistId],
    );
  return rows;
}

describe("Recipes through the API", () => {
  it("answers an invalid recipe with 400 naming every failing path", async () => {
    const { key } = await tenant();
    const response = await stack.request("POST", "/v1/watchlists", {
      key,
      body: {
        name: "bad",
        recipe: {
          filters: { counties: [23, 99], just_value: { min: 800_000, max: 100_000 } },
          signals: { absentee: 0.5, high_equity: 1.5 },
          match_all: true,
        },
      },
    });
    expect(response.statusCode).toBe(400);
    const body = response.json();
    expect(body.error).toBe("invalid_request");
    expect(body.fields).toEqual(
      expect.arrayContaining([
        {
          path: "body.recipe.filters.counties[1]",
          message: "must be a DOR county number from 11 to 77",
        },
        { path: "body.recipe.filters.just_value.min", message: "must be <= max" },
        { path: "body.recipe.signals.high_equity", message: "must be between -1 and 1" },
        { path: "body.recipe.signals.absentee", message: 'unknown signal "absentee"' },
        { path: "body.recipe.match_all", message: "unknown field" },
      ]),
    );
  });

  it("refuses a recipe that matches everything, and an invalid update, naming the path", async () => {
    const { key } = await tenant();
    const everything = await stack.request("POST", "/v1/watchlists", {
      key,
      body: { name: "all", recipe: { signals: { high_equity: 1 } } },
    });
    expect(everything.statusCode).toBe(400);
    expect(everything.json().fields[0].path).toBe("body.recipe");
    const list = await createWatchlist(key, { filters: { counties: [23] } });
    const update = await stack.request("PATCH", `/v1/watchlists/${list.id}`, {
      key,
      body: { recipe: { filters: { zip_codes: ["3312"] } } },
    });
    expect(update.statusCode).toBe(400);
    expect(update.json().fields).toEqual([
      { path: "body.recipe.filters.zip_codes[0]", message: "must be a 5-digit ZIP code" },
    ]);
  });

  it("creates, lists, reads, renames, re-versions and deletes a watchlist", async () => {
    const { key } = await tenant();
    const created = await createWatchlist(key, {
      filters: { counties: [23, 23], owner_mailing_states: { exclude: ["florida"] } },
      signals: { high_equity: 1 },
    });
    const read = (await stack.request("GET", `/v1/watchlists/${created.id}`, { key })).json();
    expect(read).toMatchObject({
      id: created.id,
      name: "Test list",
      recipe_version: 1,
      match_count: 0,
      last_match_at: null,
      // Canonical form: lists de-duplicated, states as codes, defaults written out.
      recipe: {
        filters: { counties: [23], owner_mailing_states: { exclude: ["FL"] } },
        signals: { high_equity: 1 },
        required_signals: [],
        min_score: 0,
      },
    });
    const renamed = await stack.request("PATCH", `/v1/watchlists/${created.id}`, {
      key,
      body: { name: "Renamed", recipe: read.recipe },
    });
    expect(renamed.json()).toMatchObject({ name: "Renamed", recipe_version: 1 });
    const changed = await stack.request("PATCH", `/v1/watchlists/${created.id}`, {
      key,
      body: { recipe: { filters: { counties: [16] } } },
    });
    expect(changed.json()).toMatchObject({ recipe_version: 2 });
    const list = (await stack.request("GET", "/v1/watchlists", { key })).json();
    expect(list.data.map((w: { id: string }) => w.id)).toEqual([created.id]);
    expect(
      (await stack.request("DELETE", `/v1/watchlists/${created.id}`, { key })).statusCode,
    ).toBe(204);
    expect((await stack.request("GET", `/v1/watchlists/${created.id}`, { key })).statusCode).toBe(
      404,
    );
  });
});

describe("Tenant isolation", () => {
  it("answers 404 on every route for another tenant's watchlist, and lists only one's own", async () => {
    const owner = await tenant();
    const other = await tenant();
    const list = await createWatchlist(owner.key, { filters: { counties: [23] } });
    const run = await stack.request("POST", `/v1/watchlists/${list.id}/run`, { key: owner.key });
    expect(run.statusCode).toBe(202);
    const runId = run.json().id;
    const routes: ["GET" | "PATCH" | "DELETE" | "POST", string, unknown?][] = [
      ["GET", `/v1/watchlists/${list.id}`],
      ["PATCH", `/v1/watchlists/${list.id}`, { name: "mine now" }],
      ["DELETE", `/v1/watchlists/${list.id}`],
      ["POST", `/v1/watchlists/${list.id}/run`],
      ["GET", `/v1/watchlists/${list.id}/runs/${runId}`],
      ["GET", `/v1/watchlists/${list.id}/matches`],
      ["GET", `/v1/leads?watchlist_id=${list.id}`],
    ];
    for (const [method, url, body] of routes) {
      const response = await stack.request(method, url, {
        key: other.key,
        ...(body ? { body } : {}),
      });
      expect(response.statusCode, `${method} ${url}`).toBe(404);
      expect(response.json().error).toBe("not_found");
    }
    const listed = (await stack.request("GET", "/v1/watchlists", { key: other.key })).json();
    expect(listed.data).toEqual([]);
    // The owner's watchlist is untouched.
    const mine = await stack.request("GET", `/v1/watchlists/${list.id}`, { key: owner.key });
    expect(mine.json().name).toBe("Test list");
    await stack.matcher.runs.settle();
  });
});

describe("Matching parcel.ingested into match.found", () => {
  it("turns ten matching parcels of one ingest into ten events carrying the webhook fields", async () => {
    const { key, tenantId } = await tenant();
    const list = await createWatchlist(key, {
      filters: { counties: [45] },
      signals: { high_equity: 0.5, absentee_owner: 0.5 },
      min_score: 0.5,
    });
    const matching = Array.from({ length: 10 }, () => parcel({ county_no: 45 }));
    const others = [parcel({ county_no: 46 }), parcel({ county_no: 45, signals_fired: [] })];
    await ingest([...matching.slice(0, 5), ...others, ...matching.slice(5)]);
    await waitFor("ten events", () => (eventsOf(list.id).length >= 10 ? true : undefined));
    const found = eventsOf(list.id);
    expect(found).toHaveLength(10);
    expect(new Set(found.map((event) => event.match.folio))).toEqual(
      new Set(matching.map((p) => p.folio)),
    );
    expect(found[0]).toMatchObject({
      tenant_id: tenantId,
      watchlist: { id: list.id, name: "Test list" },
      recipe_version: 1,
      trigger: "ingest",
      ingest_id: parcelIngested.ingest_id,
      match: {
        address: "1388 NW 7TH ST, MIAMI 33125",
        score: 1,
        signals_fired: ["absentee_owner", "high_equity"],
        owner: { name: "VINGIANO PATRICIA", mailing_state: "CT" },
        valuation: { just_value: 412_300, est_equity: 301_844 },
      },
    });
    const read = (await stack.request("GET", `/v1/watchlists/${list.id}`, { key })).json();
    expect(read.match_count).toBe(10);
    expect(read.last_match_at).not.toBeNull();
  });

  it("yields one match per parcel version however often the record is redelivered", async () => {
    const { key } = await tenant();
    const list = await createWatchlist(key, { filters: { counties: [47] } });
    const first = parcel({ county_no: 47 });
    await ingest([first, first]);
    await ingest([first]);
    const newContent = { ...first, content_hash: randomBytes(32).toString("hex") };
    await ingest([newContent, first, newContent]);
    await waitFor("two events", () => (eventsOf(list.id).length >= 2 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await matchRows(list.id)).toHaveLength(2);
    expect(
      eventsOf(list.id)
        .map((event) => event.parcel_content_hash)
        .sort(),
    ).toEqual([first.content_hash, newContent.content_hash].sort());
  });

  it("applies a recipe change to parcels observed after it only", async () => {
    const { key } = await tenant();
    const list = await createWatchlist(key, { filters: { counties: [48] } });
    const beforeChange = parcel({ county_no: 48 });
    await ingest([beforeChange]);
    const observedBeforeChange = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 5));
    const changed = await stack.request("PATCH", `/v1/watchlists/${list.id}`, {
      key,
      body: { recipe: { filters: { counties: [49] } } },
    });
    expect(changed.json().recipe_version).toBe(2);
    // No wait for propagation: the matcher refreshes before judging a parcel observed after
    // its cache was confirmed.
    const lateOld = parcel({ county_no: 48 });
    const lateNew = parcel({ county_no: 49 });
    const delayed = parcel({ county_no: 48, observed_at: observedBeforeChange });
    await ingest([lateOld, lateNew, delayed, beforeChange]);
    await waitFor("three events", () => (eventsOf(list.id).length >= 3 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const rows = await matchRows(list.id);
    expect(rows.map((row) => [row.folio, row.recipe_version]).sort()).toEqual(
      [
        [beforeChange.folio, 1],
        [lateNew.folio, 2],
        [delayed.folio, 1],
      ].sort(),
    );
    expect(eventsOf(list.id)).toHaveLength(3);
  });

  it("reaches every matcher instance within a second, without a parcel asking for it", async () => {
    const { key } = await tenant();
    const second = await stack.addMatcher({ projection: false });
    const refreshesBefore = second.cache.refreshes;
    const started = Date.now();
    const list = await createWatchlist(key, { filters: { counties: [50] } });
    const facts = parcelFacts(parcel({ county_no: 50 }));
    await waitFor("every cache to know the watchlist", () =>
      stack
        .matchers()
        .every((matcher) =>
          matcher.cache.index.matching(facts).some((entry) => entry.watchlist.id === list.id),
        )
        ? true
        : undefined,
    );
    expect(Date.now() - started).toBeLessThan(1000);
    expect(second.cache.refreshes).toBeGreaterThan(refreshesBefore);
  });

  it("parks a parcel that cannot be judged, with its reason, and goes on", async () => {
    const { key } = await tenant();
    const list = await createWatchlist(key, { filters: { counties: [51] } });
    const poison = parcel({ county_no: 51, observed_at: "not a time" });
    const good = parcel({ county_no: 51 });
    await ingest([poison, good]);
    await waitFor("the good parcel's event", () =>
      eventsOf(list.id).length >= 1 ? true : undefined,
    );
    expect(eventsOf(list.id).map((event) => event.match.folio)).toEqual([good.folio]);
    const parked = await readParked(poison.folio);
    expect(parked[PARK_HEADERS.group]).toBe("matcher.match");
    expect(parked[PARK_HEADERS.reason]).toContain("observed_at");
    expect(parked[PARK_HEADERS.reason]).toContain(poison.folio);
  });

  it("shares partitions between two matcher instances without duplicate matches", async () => {
    const { key } = await tenant();
    const list = await createWatchlist(key, { filters: { counties: [52] } });
    expect(stack.matchers().length).toBeGreaterThanOrEqual(2);
    const parcels = Array.from({ length: 120 }, () => parcel({ county_no: 52 }));
    // Every record twice, as a rebalance between the two would redeliver them.
    await ingest([...parcels, ...parcels]);
    await waitFor("120 events", () => (eventsOf(list.id).length >= 120 ? true : undefined), 30_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (const matcher of stack.matchers()) {
      await matcher.flushOutbox();
    }
    const rows = await matchRows(list.id);
    expect(rows).toHaveLength(120);
    expect(eventsOf(list.id)).toHaveLength(120);
    expect(new Set(eventsOf(list.id).map((event) => event.match_id)).size).toBe(120);
    const handledBy = stack.matchers().filter((matcher) => matcher.counters().parcels > 0);
    expect(handledBy.length).toBeGreaterThanOrEqual(1);
  });
});

describe("Sample roll: polling and manual runs", () => {
  const recipe = { filters: { counties: [23] }, required_signals: ["absentee_owner"] };
  let poller: Awaited<ReturnType<typeof tenant>>;
  let pollList: { id: string };
  let expected: string[];

  beforeAll(async () => {
    poller = await tenant(10_000);
    pollList = await createWatchlist(poller.key, recipe, "Absentee Miami-Dade");
    const handled = parcelsHandled();
    const folios = await stack.ingestSample();
    await waitFor("the sample to be matched", () =>
      parcelsHandled() >= handled + folios.length ? true : undefined,
    );
    const { rows } = await stack.harness.db
      .poolFor("parcels")
      .query<StoredEventColumns>(`SELECT ${STORED_EVENT_COLUMNS} FROM parcels`);
    expected = rows
      .map(storedEvent)
      .filter((event) => evaluateRecipe(recipe as never, event).matched)
      .map((event) => event.folio)
      .sort();
    expect(expected.length).toBeGreaterThan(10);
    await waitFor("every match event", () =>
      eventsOf(pollList.id).length >= expected.length ? true : undefined,
    );
  });

  it("pages through the free summaries with a cursor, then finds nothing new", async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 50; page++) {
      const response = await stack.request(
        "GET",
        `/v1/watchlists/${pollList.id}/matches?limit=7${cursor ? `&cursor=${cursor}` : ""}`,
        { key: poller.key },
      );
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(Number(response.headers["x-quota-lead-views-remaining"])).toBe(10_000);
      for (const match of body.matches) {
        expect(Object.keys(match).sort()).toEqual([
          "folio",
          "match_id",
          "matched_at",
          "observed_at",
          "recipe_version",
          "score",
          "signals_fired",
          "trigger",
        ]);
        seen.push(match.folio);
      }
      cursor = body.next_cursor;
      if (!body.has_more) {
        break;
      }
    }
    expect(seen.sort()).toEqual(expected);
    const after = await stack.request(
      "GET",
      `/v1/watchlists/${pollList.id}/matches?cursor=${cursor}`,
      {
        key: poller.key,
      },
    );
    expect(after.json()).toMatchObject({ matches: [], next_cursor: cursor, has_more: false });
  });

  it("pages through the paid leads with a cursor, one lead-view per parcel returned", async () => {
    const payer = await tenant(10_000);
    const list = await createWatchlist(payer.key, recipe);
    // Matches of parcels ingested before the watchlist: none until a manual run.
    const none = await stack.request("GET", `/v1/leads?watchlist_id=${list.id}`, {
      key: payer.key,
    });
    expect(none.json()).toMatchObject({ leads: [], has_more: false });
    // The poller's own list has matches: page through them.
    const seen: string[] = [];
    let cursor: string | undefined;
    let remaining = 10_000;
    for (let page = 0; page < 50; page++) {
      const response = await stack.request(
        "GET",
        `/v1/leads?watchlist_id=${pollList.id}&limit=5${cursor ? `&cursor=${cursor}` : ""}`,
        { key: poller.key },
      );
      expect(response.statusCode, response.body).toBe(200);
      const body = response.json();
      expect(body.leads.length).toBe(body.matches.length);
      for (const lead of body.leads) {
        expect(lead).toHaveProperty("owner");
        seen.push(lead.folio);
      }
      remaining -= body.leads.length;
      expect(Number(response.headers["x-quota-lead-views-remaining"])).toBe(remaining);
      cursor = body.next_cursor;
      if (!body.has_more) {
        break;
      }
    }
    expect(seen.sort()).toEqual(expected);
  });

  it("keeps the free summaries working when the quota is exhausted; the paid call is 402", async () => {
    const poor = await tenant(2);
    const list = await createWatchlist(poor.key, { filters: { counties: [23] } });
    const run = await stack.request("POST", `/v1/watchlists/${list.id}/run`, { key: poor.key });
    expect(run.statusCode).toBe(202);
    await stack.matcher.runs.settle();
    await stack.matcher.flushOutbox();
    const paid = await stack.request("GET", `/v1/leads?watchlist_id=${list.id}&limit=5`, {
      key: poor.key,
    });
    expect(paid.statusCode).toBe(402);
    expect(paid.json().error).toBe("quota_exceeded");
    const free = await stack.request("GET", `/v1/watchlists/${list.id}/matches?limit=5`, {
      key: poor.key,
    });
    expect(free.statusCode).toBe(200);
    expect(free.json().matches).toHaveLength(5);
  });

  it("runs a recipe manually over the parcel store: 202, progress and counts, manual matches", async () => {
    const { key } = await tenant();
    await waitFor("the projection to hold the sample", async () => {
      const { rows } = await stack.harness.db
        .poolFor("matcher")
        .query<{ count: string }>("SELECT count(*) FROM parcel_projection WHERE county_no = 23");
      return Number(rows[0]?.count) >= 300 ? true : undefined;
    });
    const list = await createWatchlist(key, recipe, "Manual");
    const started = await stack.request("POST", `/v1/watchlists/${list.id}/run`, { key });
    expect(started.statusCode).toBe(202);
    const run = started.json();
    expect(run).toMatchObject({ watchlist_id: list.id, recipe_version: 1, parcel_limit: 50_000 });
    expect(["queued", "running", "succeeded"]).toContain(run.status);
    const done = await waitFor("the run to finish", async () => {
      const response = await stack.request("GET", `/v1/watchlists/${list.id}/runs/${run.id}`, {
        key,
      });
      const body = response.json();
      return body.status === "succeeded" ? body : undefined;
    });
    const { rows } = await stack.harness.db
      .poolFor("matcher")
      .query<{ count: string }>("SELECT count(*) FROM parcel_projection WHERE county_no = 23");
    // The recipe's counties narrow the scan in SQL: only Miami-Dade parcels are read.
    expect(done).toMatchObject({
      parcels_total: Number(rows[0]?.count),
      parcels_scanned: Number(rows[0]?.count),
      matches_found: expected.length,
      error: null,
    });
    await stack.matcher.flushOutbox();
    await waitFor("the manual events", () =>
      eventsOf(list.id).length >= expected.length ? true : undefined,
    );
    expect(
      eventsOf(list.id).every(
        (event) => event.trigger === "manual_run" && event.ingest_id === null,
      ),
    ).toBe(true);
    expect(
      eventsOf(list.id)
        .map((event) => event.match.folio)
        .sort(),
    ).toEqual(expected);
    // A second run is a fresh set of test deliveries.
    const again = await stack.request("POST", `/v1/watchlists/${list.id}/run`, { key });
    expect(again.statusCode).toBe(202);
    await stack.matcher.runs.settle();
    expect(await matchRows(list.id)).toHaveLength(expected.length * 2);
  });
});

async function readParked(folio: string): Promise<Record<string, string>> {
  const kafka = new Kafka({ brokers: stack.harness.brokers, logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: `test.parked.${randomBytes(4).toString("hex")}` });
  await consumer.connect();
  await consumer.subscribe({
    topic: `${contracts.parcelIngested.topic}.parked`,
    fromBeginning: true,
  });
  try {
    return await new Promise<Record<string, string>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no parked record")), 20_000);
      void consumer.run({
        eachMessage: async ({ message }) => {
          if (message.key?.toString() === folio) {
            clearTimeout(timer);
            resolve(
              Object.fromEntries(
                Object.entries(message.headers ?? {}).map(([name, value]) => [name, String(value)]),
              ),
            );
          }
        },
      });
    });
  } finally {
    await consumer.disconnect();
  }
}
