// Matches are kept 90 days (decision 0394), through the real gateway and matcher: a poll cursor
// from before the matches kept is refused with 410 cursor_expired on every polling surface (paid,
// free, MCP), uncharged and saying how far back polling reaches; a cursor inside still works.
import type { AddressInfo } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";

const DAY_MS = 86_400_000;
let stack: EdgeStack;
let mcpUrl: URL;

beforeAll(async () => {
  stack = await startEdgeStack();
  const http = stack.gateway.http;
  if (!http) {
    throw new Error("no gateway");
  }
  await http.listen({ port: 0, host: "127.0.0.1" });
  mcpUrl = new URL(`http://127.0.0.1:${(http.server.address() as AddressInfo).port}/mcp`);
});
afterAll(() => stack.close());

/** Matches of the watchlist made `daysAgo` days ago, each in a transaction of its own. */
async function insertMatches(
  tenantId: string,
  watchlistId: string,
  daysAgo: number,
  count: number,
) {
  const at = new Date(Date.now() - daysAgo * DAY_MS);
  const ids: string[] = [];
  for (let n = 0; n < count; n++) {
    const { rows } = await stack.harness.db.poolFor("matcher").query<{ match_id: string }>(
      `INSERT INTO matches (match_id, tenant_id, watchlist_id, recipe_version, folio, content_hash,
                            trigger, score, signals_fired, observed_at, created_at)
       VALUES (gen_random_uuid(), $1, $2, 1, '23-99' || lpad($3::text, 11, '0'), 'h', 'ingest',
               0.5, '{}', $4, $4)
       RETURNING match_id`,
      [tenantId, watchlistId, `${daysAgo}${n}`, at],
    );
    ids.push(rows[0]?.match_id as string);
  }
  return ids;
}

/** The cursor a client holds after each match, read one page of one match at a time. */
async function cursorsAfterEach(key: string, watchlistId: string, count: number) {
  const path = `/v1/watchlists/${watchlistId}/matches`;
  await expect
    .poll(
      async () => (await stack.request("GET", `${path}?limit=100`, { key })).json().matches.length,
      { timeout: 30_000 },
    )
    .toBe(count);
  const cursors = new Map<string, string>();
  let cursor: string | undefined;
  for (let n = 0; n < count; n++) {
    const page = (
      await stack.request("GET", `${path}?limit=1${cursor ? `&cursor=${cursor}` : ""}`, { key })
    ).json();
    cursor = page.next_cursor as string;
    cursors.set(page.matches[0].match_id, cursor);
  }
  return cursors;
}

describe("a poll cursor from before the matches kept", () => {
  it("answers 410 cursor_expired with retained_since on the paid, free and MCP polls, uncharged; a cursor inside still works", async () => {
    const tenant = await stack.startTrial("custom");
    await stack.setCustomLimits(tenant.tenantId, {
      lead_views_per_month: 1_000,
      rate_per_minute: 100_000,
    });
    const created = await stack.request("POST", "/v1/watchlists", {
      key: tenant.key,
      body: { name: "Aged", recipe: { filters: { counties: [23] } } },
    });
    expect(created.statusCode).toBe(201);
    const list = created.json().id as string;
    const old = await insertMatches(tenant.tenantId, list, 91, 4);
    const kept = await insertMatches(tenant.tenantId, list, 89, 3);
    const cursors = await cursorsAfterEach(tenant.key, list, 7);
    const removed = await stack.matcher.retention.runOnce();
    expect(removed.get("matcher.matches")).toBe(4);

    const expired = cursors.get(old[2] as string);
    const free = await stack.request("GET", `/v1/watchlists/${list}/matches?cursor=${expired}`, {
      key: tenant.key,
    });
    expect(free.statusCode, free.body).toBe(410);
    const body = free.json();
    expect(body).toMatchObject({
      error: "cursor_expired",
      detail: expect.stringMatching(/90 days/),
    });
    const since = Date.parse(body.retained_since);
    expect(Math.abs(since - (Date.now() - 90 * DAY_MS))).toBeLessThan(60_000);
    expect(free.headers["x-ratelimit-limit"]).toBeDefined();

    const before = (await stack.request("GET", "/v1/me", { key: tenant.key })).headers[
      "x-quota-lead-views-remaining"
    ];
    const paid = await stack.request("GET", `/v1/leads?watchlist_id=${list}&cursor=${expired}`, {
      key: tenant.key,
    });
    expect(paid.statusCode, paid.body).toBe(410);
    expect(paid.json()).toMatchObject({
      error: "cursor_expired",
      retained_since: expect.any(String),
    });
    expect(paid.headers["x-quota-lead-views-remaining"]).toBe(before);

    // Crafted: a position far in the past is refused the same way; garbage is not a cursor.
    const forged = Buffer.from("m:0.0", "utf8").toString("base64url");
    const crafted = await stack.request("GET", `/v1/leads?watchlist_id=${list}&cursor=${forged}`, {
      key: tenant.key,
    });
    expect(crafted.statusCode).toBe(410);
    const garbage = await stack.request("GET", `/v1/leads?watchlist_id=${list}&cursor=zzzz`, {
      key: tenant.key,
    });
    expect(garbage.statusCode).toBe(400);

    const client = new Client({ name: "retention-test", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(mcpUrl, {
        requestInit: { headers: { Authorization: `Bearer ${tenant.key}` } },
      }),
    );
    const tool = await client.callTool({
      name: "list_matches",
      arguments: { watchlist_id: list, cursor: expired },
    });
    expect(tool.isError).toBe(true);
    expect(JSON.parse((tool.content as { text: string }[])[0]?.text ?? "{}")).toMatchObject({
      error: "cursor_expired",
      retained_since: expect.any(String),
    });
    await client.close();

    // At the newest match removed nothing after it is gone: every match kept follows.
    const inside = await stack.request(
      "GET",
      `/v1/watchlists/${list}/matches?cursor=${cursors.get(old[3] as string)}`,
      { key: tenant.key },
    );
    expect(inside.statusCode).toBe(200);
    expect(inside.json().matches.map((match: { match_id: string }) => match.match_id)).toEqual(
      kept,
    );
  });
});
