// Webhooks end to end on real Postgres, Redis and Kafka: a NAL ingest or a manual run, the
// matcher, the webhook dispatcher and a receiver. "When a freshly ingested parcel matches a
// watchlist's recipe, the service POSTs the event to every subscribed endpoint of that watchlist,
// within seconds", with the time from each match to its delivery held under a bound; and "a
// manual run can be used to test a staging endpoint".
import { contracts } from "@th/contracts";
import { matchFound as sampleMatch } from "@th/contracts/samples";
import { verifySignature } from "@th/webhooks";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  type Delivered,
  type EdgeDispatcher,
  startEdgeDispatcher,
} from "./support/edge-dispatcher.ts";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";

/** "Within seconds": from a match to its delivery at the receiver. */
const WITHIN_MS = 5_000;

let stack: EdgeStack;
let edge: EdgeDispatcher;
let received: Delivered[];

beforeAll(async () => {
  stack = await startEdgeStack();
  edge = await startEdgeDispatcher(stack);
  received = edge.received;
});

afterAll(async () => {
  await edge?.close();
  await stack?.close();
});

const subscribed = (
  tenant: Awaited<ReturnType<EdgeStack["startTrial"]>>,
  watchlistId: string,
  path: string,
) => edge.subscribe(tenant, watchlistId, path);

describe("a match reaches a subscribed receiver", () => {
  it(`V2: within seconds: every match of a fresh ingest is delivered within ${WITHIN_MS / 1000} s of being found`, async () => {
    const operator = await stack.startTrial("operator");
    const created = await stack.request("POST", "/v1/watchlists", {
      key: operator.key,
      body: {
        name: "Miami-Dade high equity",
        recipe: { filters: { counties: [23] }, required_signals: ["high_equity"] },
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    const watchlistId = created.json().id as string;
    await subscribed(operator, watchlistId, "/hooks");

    await stack.ingestSample();
    const ingested = Date.now();
    // Every match the matcher found for the watchlist, as it stored them.
    const matchCount = async () =>
      (
        await stack.harness.db
          .poolFor("matcher")
          .query<{ n: number }>("SELECT count(*)::int AS n FROM matches WHERE watchlist_id = $1", [
            watchlistId,
          ])
      ).rows[0]?.n ?? 0;
    await vi.waitFor(
      async () => {
        const found = await matchCount();
        expect(found).toBeGreaterThan(0);
        expect(received.filter((each) => each.path === "/hooks").length).toBe(found);
      },
      { timeout: 30_000, interval: 50 },
    );

    const delivered = received.filter((each) => each.path === "/hooks");
    const lags = delivered.map(({ at, body }) => at - Date.parse(JSON.parse(body).occurred_at));
    const slowest = Math.max(...lags);
    console.info(
      `webhooks within seconds: ${delivered.length} deliveries, slowest ${slowest} ms after its match, last ${Math.max(...delivered.map((each) => each.at)) - ingested} ms after the ingest returned`,
    );
    expect(slowest, `slowest delivery ${slowest} ms after its match`).toBeLessThan(WITHIN_MS);
    expect(Math.min(...lags)).toBeGreaterThanOrEqual(0);
  }, 60_000);

  it("Y6: a manual run tests a staging endpoint: each parcel the run matches is delivered to it, signed and in the payload's shape", async () => {
    const operator = await stack.startTrial("operator");
    const created = await stack.request("POST", "/v1/watchlists", {
      key: operator.key,
      body: {
        name: "Staging check",
        recipe: { filters: { counties: [23] }, required_signals: ["absentee_owner"] },
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    const watchlistId = created.json().id as string;
    const secret = await subscribed(operator, watchlistId, "/staging");

    const run = await stack.request("POST", `/v1/watchlists/${watchlistId}/run`, {
      key: operator.key,
    });
    expect(run.statusCode, run.body).toBe(202);
    let finished = run.json();
    await vi.waitFor(
      async () => {
        finished = (
          await stack.request("GET", `/v1/watchlists/${watchlistId}/runs/${finished.id}`, {
            key: operator.key,
          })
        ).json();
        expect(finished.status).toBe("succeeded");
      },
      { timeout: 30_000, interval: 100 },
    );
    expect(finished.matches_found).toBeGreaterThan(0);
    await vi.waitFor(
      () =>
        expect(received.filter((each) => each.path === "/staging")).toHaveLength(
          finished.matches_found,
        ),
      { timeout: 30_000, interval: 50 },
    );
    const staging = received.filter((each) => each.path === "/staging");
    for (const each of staging) {
      expect(
        verifySignature(each.body, String(each.headers["x-flpf-signature"] ?? ""), [secret]).ok,
      ).toBe(true);
    }
    const payloads = staging.map((each) => JSON.parse(each.body));
    expect(payloads.every((payload) => payload.watchlist.id === watchlistId)).toBe(true);
    expect(payloads.every((payload) => payload.event_type === "watchlist.match")).toBe(true);
    expect(payloads.every((payload) => payload.tenant_id === operator.tenantId)).toBe(true);
    expect(new Set(payloads.map((payload) => payload.match.folio)).size).toBe(
      finished.matches_found,
    );
  }, 60_000);
});

describe("a lead-view across surfaces", () => {
  it("L1: one folio read over REST, then over MCP, in a CSV export and in a webhook delivery on one UTC day is one lead-view", async () => {
    const folios = [...(await stack.ingestSample())].sort();
    // The first parcel of the search: a one-row export shows exactly it.
    const folio = folios[0] as string;
    const tenant = await stack.startTrial("custom");
    const usage = async () =>
      (await stack.request("GET", "/v1/usage", { key: tenant.key })).json() as {
        used: number;
        remaining: number;
      };

    const rest = await stack.request("GET", `/v1/leads/${folio}`, { key: tenant.key });
    expect(rest.statusCode).toBe(200);

    const mcp = await stack.request("POST", "/mcp", {
      key: tenant.key,
      headers: { accept: "application/json, text/event-stream" },
      body: {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "get_lead", arguments: { folio } },
      },
    });
    expect(mcp.statusCode).toBe(200);
    expect(mcp.body).toContain(folio);
    expect(mcp.body).not.toContain('"isError":true');

    const csv = await stack.request("GET", "/v1/exports/leads.csv?county=23&max_rows=1", {
      key: tenant.key,
    });
    expect(csv.statusCode).toBe(200);
    expect(csv.body.split("\r\n")[1]?.startsWith(folio)).toBe(true);

    const created = await stack.request("POST", "/v1/watchlists", {
      key: tenant.key,
      body: { name: "One parcel", recipe: { filters: { counties: [23] } } },
    });
    const watchlistId = created.json().id as string;
    await subscribed(tenant, watchlistId, "/surfaces");
    await stack.harness.bus.publish(contracts.matchFound, {
      ...sampleMatch,
      match_id: `m_surfaces_${tenant.tenantId}`,
      tenant_id: tenant.tenantId,
      watchlist: { id: watchlistId, name: "One parcel" },
      match: { ...sampleMatch.match, folio },
      occurred_at: new Date().toISOString(),
    });
    await vi.waitFor(() => expect(received.some((each) => each.path === "/surfaces")).toBe(true), {
      timeout: 20_000,
      interval: 50,
    });
    // The delivery was charged (its record says so), and still it took no second view.
    const { rows } = await stack.harness.db.pool.query(
      "SELECT charged_at FROM dispatcher.deliveries WHERE tenant_id = $1",
      [tenant.tenantId],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]?.charged_at).toBeInstanceOf(Date);

    // The ledger, which every surface records into, counts one view; the meter agrees.
    await vi.waitFor(async () => expect((await usage()).used).toBe(1), { timeout: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const settled = await usage();
    expect(settled.used).toBe(1);
    expect(Number(rest.headers["x-quota-lead-views-limit"]) - settled.remaining).toBe(1);
  }, 60_000);
});
