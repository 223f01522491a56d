// Lead data is never free: every answer that carries a lead's fields is a metered read or a copy
// of one the tenant already paid for. A tenant whose month's lead-views are spent, with watchlists,
// matches, a pipeline, webhook deliveries parked for quota and dead-lettered, walks every route of
// the gateway's route table (as its key and as its dashboard session) and every MCP tool, and no
// answer may hold a field of a parcel it has not paid for. Real Postgres, Redis and Kafka.
import type { AddressInfo } from "node:net";
import { matchFound as sampleMatch } from "@th/contracts/samples";
import { declaredRoutesOf } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dashboardClient } from "./support/dashboard-client.ts";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";
import {
  type Receiver,
  startReceiver,
  startWebhookStack,
  type WebhookStack,
  waitFor,
} from "./support/webhook-stack.ts";

const PASSWORD = "a long dashboard passphrase";
const PAID = 3;

let hooks: WebhookStack;
let edge: EdgeStack;
let receiver: Receiver;
/** Folios whose deliveries the receiver refuses with 410: dead-lettered, never charged. */
const refused = new Set<string>();

interface Lead {
  folio: string;
  address: { line: string | null; formatted: string };
  owner: { name: string; mailing_address: { line1: string | null } };
}

beforeAll(async () => {
  hooks = await startWebhookStack();
  const dispatcher = await hooks.startDispatcher();
  if (!dispatcher.http) {
    throw new Error("the dispatcher has no HTTP app");
  }
  await dispatcher.http.listen({ port: 0, host: "127.0.0.1" });
  const port = (dispatcher.http.server.address() as AddressInfo).port;
  edge = await startEdgeStack({
    gatewayEnv: {
      DISPATCHER_URL: `http://127.0.0.1:${port}`,
      // Room for the walk: the windows are not what is under test.
      PUBLIC_RATE_PER_MINUTE: "100000",
      AUTH_FAILURE_RATE_PER_MINUTE: "100000",
    },
  });
  receiver = await startReceiver(({ body }) =>
    [...refused].some((folio) => body.includes(folio)) ? 410 : 200,
  );
}, 120_000);

afterAll(async () => {
  await receiver?.close();
  await edge?.close();
  await hooks?.close();
});

/** Every lead of the sample, read by a tenant of its own (so nothing is charged to the walker). */
async function allLeads(folios: readonly string[]): Promise<Map<string, Lead>> {
  const reader = await edge.startTrial("custom");
  await edge.setCustomLimits(reader.tenantId, { lead_views_per_month: 100_000 });
  const leads = new Map<string, Lead>();
  for (let start = 0; start < folios.length; start += 100) {
    const batch = await edge.request("POST", "/v1/leads/batch", {
      key: reader.key,
      body: { folios: folios.slice(start, start + 100) },
    });
    for (const lead of batch.json().leads as Lead[]) {
      leads.set(lead.folio, lead);
    }
  }
  return leads;
}

/**
 * What would give an unpaid parcel away: its owner, its address, its owner's mailing line. A
 * string that also belongs to a parcel paid for, or that the public documentation prints as an
 * example, says nothing about which parcel an answer showed, and is left out.
 */
function markersOf(leads: Map<string, Lead>, paid: ReadonlySet<string>, published: string) {
  const paidText = [...paid].map((folio) => JSON.stringify(leads.get(folio))).join("\n");
  const markers = new Map<string, string>();
  for (const [folio, lead] of leads) {
    if (paid.has(folio)) {
      continue;
    }
    for (const value of [
      lead.owner.name,
      lead.address.formatted,
      lead.address.line,
      lead.owner.mailing_address.line1,
    ]) {
      if (value && value.length >= 8 && !paidText.includes(value) && !published.includes(value)) {
        markers.set(value, folio);
      }
    }
  }
  return markers;
}

/** A concrete path of a declared route, each parameter given its value (`::` is a colon). */
function concretePath(route: string, values: Record<string, string>): string {
  return route
    .split("::")
    .map((part) =>
      part.replace(/:(\w+)(\((?:[^()\\]|\\.)*\))?/g, (_, name: string) =>
        encodeURIComponent(values[name] ?? "p1"),
      ),
    )
    .join(":")
    .replace(/\*$/, "x");
}

type Method = "GET" | "POST" | "PATCH" | "PUT" | "DELETE";

/** Calls that end the walker's access: made last, after everything else was tried. */
const LAST = [
  "POST /v1/account/cancel",
  "POST /v1/team/security/compromise",
  "POST /v1/dashboard/security/compromise",
  "DELETE /v1/dashboard/session",
];

describe("lead data is never free", () => {
  it("S5: no route of the route table, nor any MCP tool, shows a field of a parcel the tenant has not paid for, once its quota is spent", async () => {
    const folios = [...(await edge.ingestSample())].sort();
    const leads = await allLeads(folios);
    const paid = new Set(folios.slice(0, PAID));
    const unpaid = folios.filter((folio) => !paid.has(folio));
    const docs = (await edge.request("GET", "/v1/openapi.json")).body;
    const markers = markersOf(leads, paid, docs);
    expect(markers.size).toBeGreaterThan(50);

    // The walker: a Custom tenant with a session, its month's lead-views spent on three parcels.
    const tenant = await edge.startTrial("custom", { password: PASSWORD });
    await edge.setCustomLimits(tenant.tenantId, {
      lead_views_per_month: PAID,
      rate_per_minute: 100_000,
    });
    const key = tenant.key;
    const session = dashboardClient(edge, "192.0.2.77");
    expect((await session.signIn(tenant.email, PASSWORD)).statusCode).toBe(201);
    const world = await furnish(tenant, [...paid], unpaid);
    const spent = await edge.request("GET", `/v1/leads/${unpaid[0]}`, { key });
    expect(spent.statusCode).toBe(402);

    const answers: { call: string; status: number; body: string }[] = [];
    const record = (call: string, response: { statusCode: number; body: string }) =>
      answers.push({ call, status: response.statusCode, body: response.body });

    const values = { ...world.ids, folio: unpaid[0] as string };
    const routes = declaredRoutesOf(edge.gateway.http as NonNullable<typeof edge.gateway.http>)
      .filter((route) => ["GET", "POST", "PATCH", "PUT", "DELETE"].includes(route.method))
      .map((route) => ({ method: route.method as Method, url: route.url }));
    expect(routes.length).toBeGreaterThan(50);
    const order = (route: { method: Method; url: string }) =>
      LAST.includes(`${route.method} ${route.url}`)
        ? 3
        : route.method === "DELETE"
          ? 2
          : route.method === "GET"
            ? 0
            : 1;
    const walked = [...routes].sort((a, b) => order(a) - order(b));

    const phase = async (which: (route: { method: Method; url: string }) => boolean) => {
      for (const route of walked.filter(which)) {
        for (const delivery of route.url.includes(":delivery_id") ? world.deliveries : [""]) {
          const path = concretePath(route.url, { ...values, delivery_id: delivery });
          const body =
            route.method === "GET" || route.method === "DELETE"
              ? undefined
              : bodyFor(route, unpaid);
          record(`key ${route.method} ${path}`, await asKey(key, route.method, path, body));
          record(
            `session ${route.method} ${path}`,
            await session.call(route.method, path, body === undefined ? {} : { body }),
          );
        }
      }
    };
    // Reads, then changes, then the searches and tools while everything still exists, then
    // removals, and last what ends the walker's access.
    await phase((route) => order(route) === 0);
    await phase((route) => order(route) === 1);
    for (const url of world.searches) {
      record(`key GET ${url}`, await edge.request("GET", url, { key }));
      record(`session GET ${url}`, await session.call("GET", url));
    }
    for (const answer of await mcpWalk(key, world, unpaid)) {
      answers.push(answer);
    }
    await phase((route) => order(route) === 2);
    await phase((route) => order(route) === 3);
    // The walk met the doors: lead reads were refused for the spent quota, others answered.
    expect(answers.filter((answer) => answer.status === 402).length).toBeGreaterThan(5);
    expect(answers.filter((answer) => answer.status === 200).length).toBeGreaterThan(30);
    const leaks = answers.flatMap((answer) =>
      [...markers]
        .filter(([marker]) => answer.body.includes(marker))
        .map(([marker, folio]) => `${answer.call} (${answer.status}) shows ${folio}: ${marker}`),
    );
    expect(leaks).toEqual([]);
    // The markers would be seen: a read of an unpaid parcel by someone who pays shows them.
    const shown = (await edge.request("GET", `/v1/leads/${unpaid[0]}`, { key: world.payer })).body;
    expect([...markers].some(([marker]) => shown.includes(marker))).toBe(true);
  }, 240_000);
});

interface World {
  ids: Record<string, string>;
  /** Deliveries: one charged (a paid parcel), one dead-lettered and one parked for quota (unpaid). */
  deliveries: string[];
  /** Searches to try besides the routes' plain spellings. */
  searches: string[];
  /** A key of another tenant that pays for what it reads. */
  payer: string;
}

/**
 * What the walker's account holds: three parcels read (its month's lead-views), a watchlist with
 * a manual run's matches, a webhook endpoint with a charged delivery, a dead letter and one parked
 * for quota, a pipeline holding a paid parcel, a second key and a second member.
 */
async function furnish(
  tenant: Awaited<ReturnType<EdgeStack["startTrial"]>>,
  paid: string[],
  unpaid: string[],
): Promise<World> {
  const key = tenant.key;
  for (const folio of paid) {
    expect((await edge.request("GET", `/v1/leads/${folio}`, { key })).statusCode).toBe(200);
  }
  const watchlist = (
    await edge.request("POST", "/v1/watchlists", {
      key,
      body: { name: "Everything", recipe: { filters: { counties: [23] } } },
    })
  ).json();
  const run = (await edge.request("POST", `/v1/watchlists/${watchlist.id}/run`, { key })).json();
  await edge.matcher.runs.settle();
  const stages = (await edge.request("GET", "/v1/pipeline/stages", { key })).json();
  const item = (
    await edge.request("POST", "/v1/pipeline/items", { key, body: { folio: paid[0] } })
  ).json();
  const spare = (
    await edge.request("POST", "/v1/team/api-keys", { key, body: { label: "spare" } })
  ).json();
  const member = (
    await edge.request("POST", "/v1/team/members", {
      key,
      body: { email: "walker-member@acme.test", role: "member" },
    })
  ).json();

  const endpoint = (
    await edge.request("POST", `/v1/watchlists/${watchlist.id}/webhooks`, {
      key,
      body: { url: receiver.url, events: ["watchlist.match"] },
    })
  ).json();
  const deliveries = await deliveriesOf(tenant.tenantId, watchlist.id, paid, unpaid);
  const payer = await edge.startTrial("custom");
  return {
    ids: {
      id: watchlist.id,
      endpoint_id: endpoint.id,
      run_id: run.id,
      key_id: spare.id,
      member_id: member.id,
      item_id: item.id ?? item.item?.id ?? "p1",
      stage_id: stages.data?.[0]?.id ?? stages.stages?.[0]?.id ?? "p1",
    },
    deliveries,
    searches: [
      "/v1/leads?county=23&limit=200",
      `/v1/leads?watchlist_id=${watchlist.id}`,
      "/v1/exports/leads.csv?county=23",
      `/v1/watchlists/${watchlist.id}/export.csv`,
      "/v1/dashboard/leads?county=23&limit=200",
      `/v1/watchlists/${watchlist.id}/matches?limit=100`,
      `/v1/watchlists/${watchlist.id}/webhooks/${endpoint.id}/deliveries?limit=50`,
      "/v1/pipeline/items?limit=100",
      "/v1/pipeline/export.csv",
    ],
    payer: payer.key,
  };
}

/**
 * The endpoint's deliveries, each with its lead's real fields: a paid parcel's, charged; an
 * unpaid one's, dead-lettered by the receiver; another unpaid one's, parked as over quota.
 */
async function deliveriesOf(
  tenantId: string,
  watchlistId: string,
  paid: string[],
  unpaid: string[],
): Promise<string[]> {
  const leads = await allLeads([paid[0], unpaid[1], unpaid[2]] as string[]);
  const matchOf = (folio: string) => {
    const lead = leads.get(folio) as Lead & {
      owner: { name: string };
      valuation: { just_value: number; est_equity: number | null };
    };
    return hooks.match(tenantId, watchlistId, {
      match: {
        ...sampleMatch.match,
        folio,
        address: lead.address.formatted,
        owner: { name: lead.owner.name, mailing_state: "FL" },
        valuation: { just_value: lead.valuation.just_value, est_equity: 0 },
      },
    });
  };
  const stateOf = (matchId: string, states: string[]) =>
    waitFor(
      async () =>
        (
          await hooks.pool.query(
            "SELECT id FROM dispatcher.deliveries WHERE match_id = $1 AND state = ANY($2)",
            [matchId, states],
          )
        ).rows[0]?.id as string | undefined,
      { what: `delivery of ${matchId}` },
    );
  await hooks.publishTenant(tenantId, "custom", { lead_views_per_month: 1 });
  await hooks.tenantApplied(tenantId);
  const dead = matchOf(unpaid[1] as string);
  refused.add(unpaid[1] as string);
  await hooks.publishMatches([dead]);
  const deadLetter = await stateOf(dead.match_id, ["dead_letter"]);
  const delivered = matchOf(paid[0] as string);
  await hooks.publishMatches([delivered]);
  const charged = await stateOf(delivered.match_id, ["complete"]);
  const over = matchOf(unpaid[2] as string);
  await hooks.publishMatches([over]);
  const parked = await stateOf(over.match_id, ["parked"]);
  return [charged, deadLetter, parked];
}

/** A call with the walker's key, any method. */
function asKey(key: string, method: Method, url: string, body?: object) {
  return (edge.gateway.http as NonNullable<typeof edge.gateway.http>).inject({
    method,
    url,
    remoteAddress: "203.0.113.77",
    headers: { authorization: `Bearer ${key}` },
    ...(body === undefined ? {} : { payload: body }),
  });
}

/** A route's body: the ones that would reach lead data if allowed, and `{}` for the rest. */
function bodyFor(route: { method: Method; url: string }, unpaid: string[]): object {
  const bodies: Record<string, object> = {
    "POST /v1/leads/batch": { folios: unpaid.slice(0, 5) },
    "POST /v1/pipeline/items": { folio: unpaid[3] },
    "POST /v1/pipeline/items/batch": { folios: unpaid.slice(4, 9) },
    "POST /v1/watchlists": { name: "walked", recipe: { filters: { counties: [23] } } },
    "POST /v1/watchlists/:id/webhooks": { url: receiver.url, events: ["watchlist.match"] },
    "POST /v1/team/api-keys": { label: "walked" },
    "POST /v1/dashboard/api-keys": { label: "walked" },
  };
  return bodies[`${route.method} ${route.url}`] ?? {};
}

/** Every MCP tool, called with arguments that name unpaid parcels where it takes any. */
async function mcpWalk(
  key: string,
  world: World,
  unpaid: string[],
): Promise<{ call: string; status: number; body: string }[]> {
  const rpc = (method: string, params: object) =>
    edge.request("POST", "/mcp", {
      key,
      headers: { accept: "application/json, text/event-stream" },
      body: { jsonrpc: "2.0", id: 1, method, params },
    });
  const listed = await rpc("tools/list", {});
  const tools = JSON.parse(listed.body).result.tools as {
    name: string;
    inputSchema: { properties?: Record<string, unknown> };
  }[];
  expect(tools.map((tool) => tool.name)).toEqual(
    expect.arrayContaining(["get_lead", "search_leads"]),
  );
  const argumentValues: Record<string, unknown> = {
    folio: unpaid[0],
    folios: unpaid.slice(0, 5),
    watchlist_id: world.ids.id,
    item_id: world.ids.item_id,
    stage_id: world.ids.stage_id,
    county: 23,
    limit: 50,
  };
  const answers = [];
  for (const tool of tools) {
    const args = Object.fromEntries(
      Object.keys(tool.inputSchema.properties ?? {})
        .filter((name) => name in argumentValues)
        .map((name) => [name, argumentValues[name]]),
    );
    const answer = await rpc("tools/call", { name: tool.name, arguments: args });
    answers.push({ call: `mcp ${tool.name}`, status: answer.statusCode, body: answer.body });
  }
  return answers;
}
