// The MCP surface through the real gateway over HTTP, driven by the official SDK client: the same
// key, tier gate, shared rate limit, six headers and lead-view metering as REST.
import type { AddressInfo } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";
import { SIX_HEADERS } from "./support/limit-headers.ts";

let stack: EdgeStack;
let folios: string[];
let mcpUrl: URL;

beforeAll(async () => {
  stack = await startEdgeStack();
  folios = await stack.ingestSample();
  const http = stack.gateway.http;
  if (!http) {
    throw new Error("no gateway");
  }
  await http.listen({ port: 0, host: "127.0.0.1" });
  mcpUrl = new URL(`http://127.0.0.1:${(http.server.address() as AddressInfo).port}/mcp`);
});
afterAll(() => stack.close());

async function connect(key: string) {
  const client = new Client({ name: "mcp-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(mcpUrl, {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  return client;
}

async function remainingOf(key: string) {
  return Number(
    (await stack.request("GET", "/v1/me", { key })).headers["x-quota-lead-views-remaining"],
  );
}

function initializeBody() {
  return JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "raw", version: "1" },
    },
  });
}

/** A JSON-RPC batch of `tools/call`s, one per folio, each reading one lead with get_lead. */
function getLeadBatch(folioList: readonly string[]) {
  return JSON.stringify(
    folioList.map((folio, index) => ({
      jsonrpc: "2.0",
      id: index + 1,
      method: "tools/call",
      params: { name: "get_lead", arguments: { folio } },
    })),
  );
}

interface JsonRpcAnswer {
  id: number;
  result?: { isError?: boolean; structuredContent?: { lead: { folio: string } } };
  error?: { code: number; message: string; data?: Record<string, unknown> };
}

async function rawPost(key: string | undefined, body = initializeBody()) {
  return fetch(mcpUrl, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
    body,
  });
}

describe("MCP", () => {
  it("initializes with the SDK client and lists get_lead, search_leads, list_watchlists, list_matches and the pipeline's tools", async () => {
    const tenant = await stack.startTrial("operator");
    const client = await connect(tenant.key);
    const tools = await client.listTools();
    expect(tools.tools.map((tool) => tool.name).sort()).toEqual([
      "add_to_pipeline",
      "get_lead",
      "list_matches",
      "list_pipeline",
      "list_watchlists",
      "move_pipeline_item",
      "search_leads",
    ]);
    for (const tool of tools.tools) {
      expect(tool.description?.length ?? 0).toBeGreaterThan(20);
      expect(tool.inputSchema.type).toBe("object");
    }
    await client.close();
  });

  it("get_lead returns the lead as structured output and costs one lead-view, once per UTC day", async () => {
    const tenant = await stack.startTrial("operator");
    const client = await connect(tenant.key);
    const result = await client.callTool({ name: "get_lead", arguments: { folio: folios[0] } });
    expect(result.isError).toBeFalsy();
    expect((result.structuredContent as { lead: { folio: string } }).lead.folio).toBe(folios[0]);
    await client.callTool({ name: "get_lead", arguments: { folio: folios[0] } });
    expect(await remainingOf(tenant.key)).toBe(1999);
    await client.close();
  });

  it("search_leads is metered per lead returned", async () => {
    const tenant = await stack.startTrial("operator");
    const client = await connect(tenant.key);
    const result = await client.callTool({
      name: "search_leads",
      arguments: { county: 23, limit: 3 },
    });
    const page = result.structuredContent as { leads: unknown[]; next_cursor: string | null };
    expect(page.leads).toHaveLength(3);
    expect(page.next_cursor).toBeTruthy();
    expect(await remainingOf(tenant.key)).toBe(1997);
    await client.close();
  });

  it("list_watchlists and list_matches answer the tenant's watchlists and match summaries for free", async () => {
    const tenant = await stack.startTrial("custom");
    await stack.setCustomLimits(tenant.tenantId, { lead_views_per_month: 1 });
    const created = await stack.request("POST", "/v1/watchlists", {
      key: tenant.key,
      body: {
        name: "Absentee Miami-Dade",
        recipe: { filters: { counties: [23] }, required_signals: ["absentee_owner"] },
      },
    });
    expect(created.statusCode).toBe(201);
    const watchlist = created.json();
    expect(
      (await stack.request("POST", `/v1/watchlists/${watchlist.id}/run`, { key: tenant.key }))
        .statusCode,
    ).toBe(202);
    await stack.matcher.runs.settle();
    const client = await connect(tenant.key);
    const listed = await client.callTool({ name: "list_watchlists", arguments: {} });
    const watchlists = (listed.structuredContent as { watchlists: { id: string; name: string }[] })
      .watchlists;
    expect(watchlists.map((item) => item.id)).toEqual([watchlist.id]);
    // Pages like the REST listing: one at a time, then the next by cursor.
    const second = await stack.request("POST", "/v1/watchlists", {
      key: tenant.key,
      body: { name: "Second", recipe: { filters: { counties: [23] } } },
    });
    const firstPage = (await client.callTool({ name: "list_watchlists", arguments: { limit: 1 } }))
      .structuredContent as { watchlists: { id: string }[]; next_cursor: string | null };
    expect(firstPage.watchlists).toHaveLength(1);
    expect(firstPage.next_cursor).not.toBeNull();
    const nextPage = (
      await client.callTool({
        name: "list_watchlists",
        arguments: { limit: 1, cursor: firstPage.next_cursor },
      })
    ).structuredContent as { watchlists: { id: string }[] };
    expect([...firstPage.watchlists, ...nextPage.watchlists].map((item) => item.id).sort()).toEqual(
      [watchlist.id, second.json().id].sort(),
    );
    // The largest page the tool advertises is one it serves.
    const largest = await client.callTool({
      name: "list_matches",
      arguments: { watchlist_id: watchlist.id, limit: 100 },
    });
    expect(largest.isError).toBeFalsy();
    type Page = { matches: { folio: string }[]; next_cursor: string | null };
    let page: Page = { matches: [], next_cursor: null };
    // Polls show a run's matches once every older writing transaction on the Postgres instance
    // has ended (decision 0397): other test files' transactions may hold them back a moment.
    await expect
      .poll(
        async () => {
          const matches = await client.callTool({
            name: "list_matches",
            arguments: { watchlist_id: watchlist.id, limit: 5 },
          });
          expect(matches.isError).toBeFalsy();
          page = matches.structuredContent as Page;
          return page.matches.length;
        },
        { timeout: 30_000 },
      )
      .toBe(5);
    expect(page.matches[0]?.folio).toMatch(/^23-/);
    // Summaries are free: the single lead-view of the month is still there.
    expect(await remainingOf(tenant.key)).toBe(1);
    const other = await stack.startTrial("operator");
    const foreign = await (await connect(other.key)).callTool({
      name: "list_matches",
      arguments: { watchlist_id: watchlist.id },
    });
    expect(foreign.isError).toBe(true);
    expect(JSON.stringify(foreign.content)).toContain("not_found");
    await client.close();
  });

  it("answers an exhausted quota as a tool error carrying the 402 facts, not a transport failure", async () => {
    const tenant = await stack.startTrial("custom");
    await stack.setCustomLimits(tenant.tenantId, { lead_views_per_month: 1 });
    const client = await connect(tenant.key);
    await client.callTool({ name: "get_lead", arguments: { folio: folios[1] } });
    const refused = await client.callTool({ name: "get_lead", arguments: { folio: folios[2] } });
    expect(refused.isError).toBe(true);
    const text = (refused.content as { type: string; text: string }[])[0]?.text ?? "{}";
    const body = JSON.parse(text);
    expect(body).toMatchObject({ error: "quota_exceeded" });
    expect(body.quota_resets_at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    expect(body.upgrade_url).toMatch(/^https:/);
    await client.close();
  });

  it("refuses a missing, unknown or revoked key with 401, and a key-shaped query string too", async () => {
    expect((await rawPost(undefined)).status).toBe(401);
    const tenant = await stack.startTrial("team");
    const spare = (
      await stack.request("POST", "/v1/team/api-keys", { key: tenant.key, body: { label: "mcp" } })
    ).json();
    expect((await rawPost(spare.secret)).status).toBe(200);
    await stack.request("DELETE", `/v1/team/api-keys/${spare.id}`, { key: tenant.key });
    expect((await rawPost(spare.secret)).status).toBe(401);
    const inQuery = await fetch(`${mcpUrl}?key=${tenant.key}`, {
      method: "POST",
      body: initializeBody(),
    });
    expect(inQuery.status).toBe(401);
    await expect(connect("th_live_notakey")).rejects.toThrow();
  });

  it("refuses Starter, whose tier lacks MCP, with 403 and an upgrade URL", async () => {
    const tenant = await stack.startTrial("starter");
    const response = await rawPost(tenant.key);
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({
      error: "tier_required",
      upgrade_url: expect.stringContaining("to=operator"),
    });
  });

  it("answers a bad request as a JSON-RPC error: -32700 for what is not JSON, -32600 for the rest", async () => {
    const tenant = await stack.startTrial("operator");
    const cases: [string, number][] = [
      ["{not json", -32700],
      [JSON.stringify({ id: 1, method: "tools/list" }), -32600],
      ["[]", -32600],
      [JSON.stringify([{ jsonrpc: "2.0", id: 1, method: "tools/list" }, 7]), -32600],
      [JSON.stringify({ jsonrpc: "2.0", id: 1, method: "x", params: { q: "\u0000" } }), -32600],
    ];
    for (const [body, code] of cases) {
      const response = await rawPost(tenant.key, body);
      expect(response.status, body).toBe(400);
      const answer = await response.json();
      expect(answer, body).toMatchObject({ jsonrpc: "2.0", id: null, error: { code } });
      expect(response.headers.get("x-ratelimit-limit"), body).not.toBeNull();
    }
  });

  it("answers GET and DELETE with 405 and Allow: POST (the endpoint keeps no sessions)", async () => {
    const tenant = await stack.startTrial("operator");
    for (const method of ["GET", "DELETE"] as const) {
      const response = await stack.request(method, "/mcp", { key: tenant.key });
      expect(response.statusCode, method).toBe(405);
      expect(response.headers.allow, method).toBe("POST");
      expect(response.json().error, method).toBe("method_not_allowed");
    }
  });

  it("carries the six headers on its responses", async () => {
    const tenant = await stack.startTrial("operator");
    const response = await rawPost(tenant.key);
    expect(response.status).toBe(200);
    for (const name of SIX_HEADERS) {
      expect(response.headers.get(name), name).not.toBeNull();
    }
  });

  it("Authentication 3: charges every call of a JSON-RPC batch to the tenant's rolling minute, so X-RateLimit-Remaining drops by the batch's size", async () => {
    const tenant = await stack.startTrial("custom");
    await stack.setCustomLimits(tenant.tenantId, { rate_per_minute: 100 });
    const before = Number(
      (await stack.request("GET", "/v1/me", { key: tenant.key })).headers["x-ratelimit-remaining"],
    );
    const batch = JSON.stringify(
      Array.from({ length: 5 }, (_, index) => ({ jsonrpc: "2.0", id: index + 1, method: "ping" })),
    );
    const response = await rawPost(tenant.key, batch);
    expect(response.status).toBe(200);
    const answers = (await response.json()) as JsonRpcAnswer[];
    expect(answers.map((answer) => answer.id).sort()).toEqual([1, 2, 3, 4, 5]);
    expect(answers.every((answer) => answer.error === undefined)).toBe(true);
    expect(Number(response.headers.get("x-ratelimit-remaining"))).toBe(before - 5);
    // The next request sees all five gone, as if they had come one by one.
    const after = await stack.request("GET", "/v1/me", { key: tenant.key });
    expect(Number(after.headers["x-ratelimit-remaining"])).toBe(before - 6);
  });

  it("Authentication 3: refuses the calls of a batch past the tenant's remaining minute with a JSON-RPC 429 error each, and never runs them", async () => {
    const tenant = await stack.startTrial("custom");
    await stack.setCustomLimits(tenant.tenantId, { rate_per_minute: 10 });
    for (let i = 0; i < 3; i++) {
      expect((await stack.request("GET", "/v1/me", { key: tenant.key })).statusCode).toBe(200);
    }
    const leadViews = await remainingOf(tenant.key);
    // Ten lead reads in one request, with six requests of the minute left (the /v1/me above
    // took the fourth): the first six are read and charged, the last four refused.
    const wanted = folios.slice(0, 10);
    expect(wanted).toHaveLength(10);
    const response = await rawPost(tenant.key, getLeadBatch(wanted));
    expect(response.status).toBe(200);
    expect(response.headers.get("x-ratelimit-remaining")).toBe("0");
    const answers = ((await response.json()) as JsonRpcAnswer[]).sort((a, b) => a.id - b.id);
    expect(answers).toHaveLength(10);
    const served = answers.filter((answer) => answer.result !== undefined);
    const refused = answers.filter((answer) => answer.error !== undefined);
    expect(served.map((answer) => answer.id)).toEqual([1, 2, 3, 4, 5, 6]);
    for (const answer of served) {
      expect(answer.result?.isError).toBeFalsy();
      expect(answer.result?.structuredContent?.lead.folio).toBe(wanted[answer.id - 1]);
    }
    expect(refused.map((answer) => answer.id)).toEqual([7, 8, 9, 10]);
    for (const answer of refused) {
      expect(answer.error?.code).toBe(429);
      expect(answer.error?.data).toMatchObject({
        error: "rate_limited",
        retry_after_seconds: expect.any(Number),
      });
    }
    // Only the six calls that ran read a lead: four lead-views were never spent.
    expect(Number(response.headers.get("x-quota-lead-views-remaining"))).toBe(leadViews - 6);
    expect((await stack.request("GET", "/v1/me", { key: tenant.key })).statusCode).toBe(429);
  });

  it("refuses a batch of more than 100 messages as an invalid request costing one call, before running or charging any of it", async () => {
    const tenant = await stack.startTrial("operator");
    const before = Number(
      (await stack.request("GET", "/v1/me", { key: tenant.key })).headers["x-ratelimit-remaining"],
    );
    const response = await rawPost(
      tenant.key,
      getLeadBatch(Array.from({ length: 101 }, () => folios[0] as string)),
    );
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: -32600 } });
    expect(Number(response.headers.get("x-ratelimit-remaining"))).toBe(before - 1);
    expect(await remainingOf(tenant.key)).toBe(2000);
  });

  it("shares the tenant's per-minute limit with REST", async () => {
    const tenant = await stack.startTrial("custom");
    await stack.setCustomLimits(tenant.tenantId, { rate_per_minute: 10 });
    for (let i = 0; i < 3; i++) {
      expect((await stack.request("GET", "/v1/me", { key: tenant.key })).statusCode).toBe(200);
    }
    const client = await connect(tenant.key);
    let succeeded = 0;
    let refusal: unknown;
    for (let i = 0; i < 10 && !refusal; i++) {
      try {
        await client.callTool({ name: "list_watchlists", arguments: {} });
        succeeded++;
      } catch (error) {
        refusal = error;
      }
    }
    expect(String(refusal)).toMatch(/rate_limited/);
    // The three REST requests and the client's own handshake came out of the same ten.
    expect(succeeded).toBeGreaterThanOrEqual(1);
    expect(succeeded).toBeLessThanOrEqual(5);
    expect((await stack.request("GET", "/v1/me", { key: tenant.key })).statusCode).toBe(429);
    await client.close();
  });
});
