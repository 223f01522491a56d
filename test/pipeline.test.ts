// The pipeline end to end: gateway, keys, parcels, ledger, matcher and the pipeline service on
// real Postgres, Redis and a dev broker, the sample roll ingested. Adding a parcel is a lead read;
// everything after is free. Each test names the rule it proves.
import type { AddressInfo } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { parse } from "csv-parse/sync";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dashboardClient } from "./support/dashboard-client.ts";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";

let stack: EdgeStack;
let folios: string[];
let mcpUrl: URL;
let nextFolioIndex = 0;
// Real time, but a test may step it a day ahead (and back) to see what a new UTC day charges.
let clock = Date.now();
let ahead = 0;

beforeAll(async () => {
  stack = await startEdgeStack({ now: () => (ahead === 0 ? Date.now() : clock + ahead) });
  folios = await stack.ingestSample();
  const http = stack.gateway.http;
  if (!http) {
    throw new Error("no gateway");
  }
  await http.listen({ port: 0, host: "127.0.0.1" });
  mcpUrl = new URL(`http://127.0.0.1:${(http.server.address() as AddressInfo).port}/mcp`);
});
afterAll(() => stack.close());

/** Folios no other test of this file has read. */
function freshFolios(count: number): string[] {
  const taken = folios.slice(nextFolioIndex, nextFolioIndex + count);
  nextFolioIndex += count;
  if (taken.length < count) {
    throw new Error("the sample roll has too few parcels for this file");
  }
  return taken;
}

async function customTenant(leadViews: number) {
  const tenant = await stack.startTrial("custom");
  await stack.setCustomLimits(tenant.tenantId, {
    lead_views_per_month: leadViews,
    rate_per_minute: 100_000,
  });
  return tenant;
}

async function remainingOf(key: string): Promise<number> {
  return Number(
    (await stack.request("GET", "/v1/me", { key })).headers["x-quota-lead-views-remaining"],
  );
}

function api(key: string) {
  return (method: "GET" | "POST" | "PATCH" | "DELETE", url: string, body?: unknown) =>
    stack.request(method, url, { key, ...(body !== undefined ? { body } : {}) });
}

async function stagesOf(key: string): Promise<{ id: string; name: string }[]> {
  return (await api(key)("GET", "/v1/pipeline/stages")).json().data;
}

async function connectMcp(key: string) {
  const client = new Client({ name: "pipeline-test", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(mcpUrl, {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    }),
  );
  return client;
}

describe("Pipeline: adding a parcel is a lead read", () => {
  it("adding a parcel costs one lead-view and keeps the lead as read then", async () => {
    const tenant = await customTenant(10);
    const call = api(tenant.key);
    const [folio] = freshFolios(1);
    const before = await remainingOf(tenant.key);
    const added = await call("POST", "/v1/pipeline/items", { folio, tags: ["hot"] });
    expect(added.statusCode, added.body).toBe(201);
    expect(Number(added.headers["x-quota-lead-views-remaining"])).toBe(before - 1);
    const item = added.json();
    const lead = (await call("GET", `/v1/leads/${folio}`)).json();
    expect(item.snapshot).toEqual(lead);
    expect(item).toMatchObject({ folio, version: 1, tags: ["hot"], added_by: tenant.memberId });
    expect(item.stage_id).toBe((await stagesOf(tenant.key))[0]?.id);
    // The read of the current record the same day is the same lead-view.
    expect(await remainingOf(tenant.key)).toBe(before - 1);
  });

  it("adding a parcel already viewed that UTC day costs no lead-view", async () => {
    const tenant = await customTenant(10);
    const [folio] = freshFolios(1);
    await api(tenant.key)("GET", `/v1/leads/${folio}`);
    const before = await remainingOf(tenant.key);
    const added = await api(tenant.key)("POST", "/v1/pipeline/items", { folio });
    expect(added.statusCode).toBe(201);
    expect(await remainingOf(tenant.key)).toBe(before);
  });

  it("a folio the pipeline holds answers 409, a folio with no parcel 404, and neither costs a lead-view", async () => {
    const tenant = await customTenant(10);
    const call = api(tenant.key);
    const [folio] = freshFolios(1);
    expect((await call("POST", "/v1/pipeline/items", { folio })).statusCode).toBe(201);
    // The next UTC day: a read of the folio would cost a lead-view again.
    clock = Date.now();
    ahead = 86_400_000;
    const before = await remainingOf(tenant.key);
    const again = await call("POST", "/v1/pipeline/items", { folio });
    ahead = 0;
    expect(again.statusCode).toBe(409);
    expect(again.json().error).toBe("conflict");
    const unknown = await call("POST", "/v1/pipeline/items", { folio: "23-0000000000000" });
    expect(unknown.statusCode).toBe(404);
    expect(await remainingOf(tenant.key)).toBe(before);
    const listed = await call("GET", `/v1/pipeline/items?folio=${folio}`);
    expect(listed.json().data).toHaveLength(1);
  });

  it("answers 402 when the quota is exhausted, and adds nothing", async () => {
    const tenant = await customTenant(1);
    const call = api(tenant.key);
    const [first, second] = freshFolios(2);
    expect((await call("POST", "/v1/pipeline/items", { folio: first })).statusCode).toBe(201);
    const refused = await call("POST", "/v1/pipeline/items", { folio: second });
    expect(refused.statusCode).toBe(402);
    expect(refused.json()).toMatchObject({
      error: "quota_exceeded",
      quota_resets_at: expect.any(String),
      upgrade_url: expect.any(String),
    });
    expect((await call("GET", `/v1/pipeline/items?folio=${second}`)).json().data).toEqual([]);
  });

  it("a bulk add is priced like POST /v1/leads/batch: all or nothing against the quota, held and unknown folios free", async () => {
    const tenant = await customTenant(4);
    const call = api(tenant.key);
    const picked = freshFolios(6);
    expect((await call("POST", "/v1/pipeline/items", { folio: picked[0] })).statusCode).toBe(201);
    // Five new folios and three lead-views left: refused whole, nothing added or charged.
    const refused = await call("POST", "/v1/pipeline/items/batch", { folios: picked.slice(1) });
    expect(refused.statusCode).toBe(402);
    expect(await remainingOf(tenant.key)).toBe(3);
    expect((await call("GET", "/v1/pipeline/items")).json().data).toHaveLength(1);
    // One held, three new, one unknown: three lead-views.
    const added = await call("POST", "/v1/pipeline/items/batch", {
      folios: [picked[0], ...picked.slice(1, 4), "23-0000000000000"],
      tags: ["from-watchlist"],
    });
    expect(added.statusCode, added.body).toBe(200);
    const body = added.json();
    expect(body.added.map((item: { folio: string }) => item.folio).sort()).toEqual(
      picked.slice(1, 4).sort(),
    );
    expect(body.already_in_pipeline).toEqual([picked[0]]);
    expect(body.missing).toEqual(["23-0000000000000"]);
    expect(body.added[0].tags).toEqual(["from-watchlist"]);
    expect(await remainingOf(tenant.key)).toBe(0);
  });
});

describe("Watchlist polling, pipeline updates and other free operations keep working when the quota is exhausted", () => {
  it("Watchlist polling, pipeline updates and other free operations keep working when the quota is exhausted", async () => {
    const tenant = await customTenant(1);
    const call = api(tenant.key);
    const watchlist = (
      await call("POST", "/v1/watchlists", {
        name: "Miami-Dade",
        recipe: { filters: { counties: [23] } },
      })
    ).json();
    const [folio, other] = freshFolios(2);
    const item = (await call("POST", "/v1/pipeline/items", { folio })).json();
    expect((await call("GET", `/v1/leads/${other}`)).statusCode).toBe(402);
    expect(await remainingOf(tenant.key)).toBe(0);

    const stages = await stagesOf(tenant.key);
    const moved = await call("POST", `/v1/pipeline/items/${item.id}/move`, {
      stage_id: stages[1]?.id,
      version: item.version,
    });
    expect(moved.statusCode).toBe(200);
    const updated = await call("PATCH", `/v1/pipeline/items/${item.id}`, {
      version: moved.json().version,
      note: "Called, no answer",
      tags: ["call-back"],
      follow_up_on: "2026-12-01",
      assignee_id: tenant.memberId,
    });
    expect(updated.statusCode, updated.body).toBe(200);
    for (const url of [
      "/v1/pipeline/stages",
      "/v1/pipeline/items?tag=call-back",
      `/v1/pipeline/items/${item.id}`,
      `/v1/pipeline/items/${item.id}/history`,
      "/v1/pipeline/export.csv",
      `/v1/watchlists/${watchlist.id}/matches`,
    ]) {
      expect((await call("GET", url)).statusCode, url).toBe(200);
    }
    const listed = (await call("GET", "/v1/pipeline/items")).json().data[0];
    expect(listed.lead.address).toBe(item.snapshot.address.formatted);
    expect(
      (
        await call(
          "DELETE",
          `/v1/pipeline/items/${item.id}?version=${updated.json().version as number}`,
        )
      ).statusCode,
    ).toBe(204);
    expect(await remainingOf(tenant.key)).toBe(0);
  });
});

describe("Pipeline REST", () => {
  it("another tenant's item answers 404 to every operation and is left as it was", async () => {
    const owner = await customTenant(10);
    const [folio] = freshFolios(1);
    const item = (await api(owner.key)("POST", "/v1/pipeline/items", { folio })).json();
    const intruder = await customTenant(10);
    const call = api(intruder.key);
    const stage = (await stagesOf(intruder.key))[1]?.id;
    const answers = [
      await call("GET", `/v1/pipeline/items/${item.id}`),
      await call("GET", `/v1/pipeline/items/${item.id}/history`),
      await call("PATCH", `/v1/pipeline/items/${item.id}`, { version: 1, note: "mine" }),
      await call("POST", `/v1/pipeline/items/${item.id}/move`, { version: 1, stage_id: stage }),
      await call("DELETE", `/v1/pipeline/items/${item.id}?version=1`),
    ];
    expect(answers.map((answer) => answer.statusCode)).toEqual([404, 404, 404, 404, 404]);
    const after = (await api(owner.key)("GET", `/v1/pipeline/items/${item.id}`)).json();
    expect(after).toEqual(item);
  });

  it("bad input answers 400 in the spec's error shape, costs nothing and changes nothing", async () => {
    const tenant = await customTenant(10);
    const call = api(tenant.key);
    const [folio, unadded] = freshFolios(2);
    const item = (await call("POST", "/v1/pipeline/items", { folio })).json();
    const before = await remainingOf(tenant.key);
    const answers = [
      await call("POST", "/v1/pipeline/items", { folio: unadded, stage: "New" }),
      await call("POST", "/v1/pipeline/items", { folio: unadded, follow_up_on: "tomorrow" }),
      await call("POST", "/v1/pipeline/items/batch", { folios: [] }),
      await call("PATCH", `/v1/pipeline/items/${item.id}`, { version: 1, tags: ["=cmd|x"] }),
      await call("PATCH", `/v1/pipeline/items/${item.id}`, { version: 1 }),
      await call("POST", `/v1/pipeline/items/${item.id}/move`, { stage_id: "stg_x" }),
      await call("GET", "/v1/pipeline/items?sort=price"),
      await call("GET", "/v1/pipeline/items?cursor=bm90LWEtY3Vyc29y"),
      await call("PATCH", `/v1/pipeline/items/${item.id}`, {
        version: 1,
        assignee_id: "mem_of_another_account",
      }),
    ];
    for (const answer of answers) {
      expect(answer.statusCode, answer.body).toBe(400);
      expect(answer.json()).toMatchObject({ error: "invalid_request", detail: expect.any(String) });
    }
    expect(answers[0]?.json().fields).toEqual([
      { path: "body.stage", message: expect.any(String) },
    ]);
    expect(await remainingOf(tenant.key)).toBe(before);
    expect((await call("GET", `/v1/pipeline/items?folio=${unadded}`)).json().data).toEqual([]);
    expect((await call("GET", `/v1/pipeline/items/${item.id}`)).json()).toEqual(item);
  });

  it("a stale version answers 409 and the item keeps the change that landed first", async () => {
    const tenant = await customTenant(10);
    const call = api(tenant.key);
    const [folio] = freshFolios(1);
    const item = (await call("POST", "/v1/pipeline/items", { folio })).json();
    const stages = await stagesOf(tenant.key);
    const [first, second] = await Promise.all([
      call("POST", `/v1/pipeline/items/${item.id}/move`, {
        stage_id: stages[2]?.id,
        version: 1,
      }),
      call("POST", `/v1/pipeline/items/${item.id}/move`, {
        stage_id: stages[3]?.id,
        version: 1,
      }),
    ]);
    expect([first.statusCode, second.statusCode].sort()).toEqual([200, 409]);
    const history = (await call("GET", `/v1/pipeline/items/${item.id}/history`)).json().data;
    expect(history.map((event: { type: string }) => event.type)).toEqual(["added", "moved"]);
  });

  it("stages change only by an admin: a member is refused 403 and nothing changes", async () => {
    const password = "a pipeline passphrase";
    const tenant = await stack.startTrial("team", { password });
    const admin = dashboardClient(stack, "192.0.2.91");
    expect((await admin.signIn(tenant.email, password)).statusCode).toBe(201);
    const email = `member-${Date.now()}@acme.test`;
    const added = await admin.call("POST", "/v1/team/members", { body: { email, role: "member" } });
    const token = (
      await admin.call("POST", `/v1/team/members/${added.json().id}/password-token`)
    ).json().token;
    await stack.request("POST", "/v1/public/password", {
      ip: "192.0.2.92",
      body: { token, password },
    });
    const member = dashboardClient(stack, "192.0.2.93");
    expect((await member.signIn(email, password)).statusCode).toBe(201);
    const [stage] = await stagesOf(tenant.key);
    const refused = [
      await member.call("POST", "/v1/pipeline/stages", { body: { name: "Mine" } }),
      await member.call("PATCH", `/v1/pipeline/stages/${stage?.id}`, { body: { name: "Mine" } }),
    ];
    expect(refused.map((answer) => answer.statusCode)).toEqual([403, 403]);
    expect(refused[0]?.json().error).toBe("forbidden");
    expect((await stagesOf(tenant.key)).map((each) => each.name)).not.toContain("Mine");
    // The admin may; and the member may still work items and be assigned them.
    expect(
      (await admin.call("PATCH", `/v1/pipeline/stages/${stage?.id}`, { body: { name: "Inbox" } }))
        .statusCode,
    ).toBe(200);
    const [folio] = freshFolios(1);
    const item = await member.call("POST", "/v1/pipeline/items", {
      body: { folio, assignee_id: added.json().id },
    });
    expect(item.statusCode, item.body).toBe(201);
  });

  it("a dashboard session's add needs the CSRF proof, as any read that costs lead-views", async () => {
    const password = "another pipeline passphrase";
    const tenant = await stack.startTrial("operator", { password });
    const page = dashboardClient(stack, "192.0.2.94");
    expect((await page.signIn(tenant.email, password)).statusCode).toBe(201);
    const [folio] = freshFolios(1);
    const forged = await page.call("POST", "/v1/pipeline/items", { body: { folio }, csrf: false });
    expect(forged.statusCode).toBe(403);
    expect((await api(tenant.key)("GET", `/v1/pipeline/items?folio=${folio}`)).json().data).toEqual(
      [],
    );
    expect((await page.call("POST", "/v1/pipeline/items", { body: { folio } })).statusCode).toBe(
      201,
    );
  });
});

describe("Pipeline tiers (decision 0370)", () => {
  it("every tier opens the pipeline, Starter included; its CSV export needs a tier with CSV", async () => {
    const tenant = await stack.startTrial("starter");
    const call = api(tenant.key);
    const [folio] = freshFolios(1);
    const item = await call("POST", "/v1/pipeline/items", { folio });
    expect(item.statusCode).toBe(201);
    expect((await call("GET", "/v1/pipeline/items")).statusCode).toBe(200);
    const exported = await call("GET", "/v1/pipeline/export.csv");
    expect(exported.statusCode).toBe(403);
    expect(exported.json().error).toBe("tier_required");
  });
});

describe("Pipeline CSV export", () => {
  it("streams every item, free, with the stage, notes count and follow-up columns", async () => {
    const tenant = await customTenant(10);
    const call = api(tenant.key);
    const picked = freshFolios(3);
    await call("POST", "/v1/pipeline/items/batch", { folios: picked });
    const items = (await call("GET", "/v1/pipeline/items")).json().data;
    const stages = await stagesOf(tenant.key);
    const target = items[0];
    await call("PATCH", `/v1/pipeline/items/${target.id}`, {
      version: target.version,
      note: '=HYPERLINK("x")',
      follow_up_on: "2026-12-02",
    });
    await call("POST", `/v1/pipeline/items/${target.id}/move`, {
      version: target.version + 2,
      stage_id: stages[3]?.id,
    });
    const before = await remainingOf(tenant.key);
    const exported = await call("GET", "/v1/pipeline/export.csv");
    expect(exported.statusCode).toBe(200);
    expect(exported.headers["content-type"]).toMatch(/^text\/csv/);
    const rows = parse(exported.body, { columns: true }) as Record<string, string>[];
    expect(rows.map((row) => row.folio).sort()).toEqual([...picked].sort());
    const row = rows.find((each) => each.folio === target.folio);
    expect(row).toMatchObject({
      stage: stages[3]?.name,
      notes_count: "1",
      follow_up_on: "2026-12-02",
      address: target.lead.address,
    });
    const filtered = await call("GET", `/v1/pipeline/export.csv?stage_id=${stages[3]?.id}`);
    expect(parse(filtered.body, { columns: true })).toHaveLength(1);
    expect(await remainingOf(tenant.key)).toBe(before);
  });
});

describe("Pipeline MCP tools", () => {
  it("list, add and move with the same key, limits and quota as REST", async () => {
    const tenant = await customTenant(1);
    const client = await connectMcp(tenant.key);
    const tools = (await client.listTools()).tools.map((tool) => tool.name);
    expect(tools).toEqual(
      expect.arrayContaining(["list_pipeline", "add_to_pipeline", "move_pipeline_item"]),
    );
    const [folio, second] = freshFolios(2);
    const added = await client.callTool({ name: "add_to_pipeline", arguments: { folio } });
    expect(added.isError, JSON.stringify(added.content)).toBeFalsy();
    const item = (added.structuredContent as { item: { id: string; version: number } }).item;
    expect(await remainingOf(tenant.key)).toBe(0);

    const refused = await client.callTool({
      name: "add_to_pipeline",
      arguments: { folio: second },
    });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toContain("quota_exceeded");

    const listed = await client.callTool({ name: "list_pipeline", arguments: {} });
    const page = listed.structuredContent as {
      stages: { id: string }[];
      items: { id: string }[];
    };
    expect(page.items.map((each) => each.id)).toEqual([item.id]);
    const moved = await client.callTool({
      name: "move_pipeline_item",
      arguments: { item_id: item.id, stage_id: page.stages[1]?.id, version: item.version },
    });
    expect(moved.isError, JSON.stringify(moved.content)).toBeFalsy();
    const stale = await client.callTool({
      name: "move_pipeline_item",
      arguments: { item_id: item.id, stage_id: page.stages[2]?.id, version: item.version },
    });
    expect(JSON.stringify(stale.content)).toContain("conflict");
    // The REST view of the same item: moved once, by the key's member.
    const rest = (await api(tenant.key)("GET", `/v1/pipeline/items/${item.id}`)).json();
    expect(rest.stage_id).toBe(page.stages[1]?.id);
    await client.close();
  });

  it("another tenant's item cannot be moved through MCP either", async () => {
    const owner = await customTenant(5);
    const [folio] = freshFolios(1);
    const item = (await api(owner.key)("POST", "/v1/pipeline/items", { folio })).json();
    const intruder = await customTenant(5);
    const client = await connectMcp(intruder.key);
    const stages = await stagesOf(intruder.key);
    const moved = await client.callTool({
      name: "move_pipeline_item",
      arguments: { item_id: item.id, stage_id: stages[1]?.id, version: 1 },
    });
    expect(moved.isError).toBe(true);
    expect(JSON.stringify(moved.content)).toContain("not_found");
    await client.close();
  });
});
