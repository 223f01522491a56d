// Cross-site requests riding on a signed-in member's session cookie: an `<img src>`, a link or a
// form on another site makes the member's browser send the cookie with a GET. A read that costs
// lead-views must not be spendable that way; with the session's CSRF token, or from a page of
// this origin, it is served and charged as before. Gateway, keys, parcels, ledger and matcher
// on real Postgres, Redis and Kafka.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dashboardClient } from "./support/dashboard-client.ts";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";

let stack: EdgeStack;
let folios: string[];
const PASSWORD = "correct horse battery staple";
let ips = 0;
const nextIp = () => `192.0.2.${100 + ++ips}`;

beforeAll(async () => {
  stack = await startEdgeStack();
  folios = await stack.ingestSample();
});
afterAll(() => stack.close());

async function signedIn() {
  const tenant = await stack.startTrial("team", { password: PASSWORD });
  const client = dashboardClient(stack, nextIp());
  expect((await client.signIn(tenant.email, PASSWORD)).statusCode).toBe(201);
  return { tenant, client };
}

type Client = Awaited<ReturnType<typeof signedIn>>["client"];

/** The month's remaining lead-views, read by a free call of the session. */
async function leadViewsLeft(client: Client): Promise<number> {
  const account = await client.call("GET", "/v1/account");
  expect(account.statusCode).toBe(200);
  return Number(account.headers["x-quota-lead-views-remaining"]);
}

/** What another site's page makes the browser send: the cookie, and what Fetch Metadata says. */
const CROSS_SITE_SENDS: Record<string, Record<string, string>>[] = [
  { "an <img src> on another site": { "sec-fetch-site": "cross-site", "sec-fetch-dest": "image" } },
  { "a link followed from another site": { "sec-fetch-site": "cross-site" } },
  { "a page on a sibling subdomain": { "sec-fetch-site": "same-site" } },
  { "a browser that sends no Fetch Metadata": {} },
  {
    "a forged token beside a cross-site fetch": {
      "x-csrf-token": "forged",
      "sec-fetch-site": "cross-site",
    },
  },
];

describe("CSRF on reads that cost lead-views, with a dashboard session", () => {
  it("refuses a lead read, a search and a 100,000-row CSV export sent with the session cookie alone, and charges nothing", async () => {
    const { client } = await signedIn();
    const before = await leadViewsLeft(client);
    const paid = [
      `/v1/leads/${folios[0]}`,
      "/v1/leads?county=23&limit=50",
      "/v1/exports/leads.csv?max_rows=100000",
    ];
    for (const url of paid) {
      for (const send of CROSS_SITE_SENDS) {
        const [[how, headers] = ["", {}]] = Object.entries(send);
        const response = await client.call("GET", url, { csrf: false, headers });
        expect(response.statusCode, `${how}: ${url}`).toBe(403);
        expect(response.json(), `${how}: ${url}`).toMatchObject({
          error: "forbidden",
          detail: expect.stringMatching(/X-CSRF-Token/),
        });
      }
    }
    expect(await leadViewsLeft(client)).toBe(before);
  });

  it("refuses a watchlist's CSV export sent with the session cookie alone", async () => {
    const { client } = await signedIn();
    const created = await client.call("POST", "/v1/watchlists", {
      body: { name: "Absentee Miami-Dade", recipe: { filters: { counties: [23] } } },
    });
    expect(created.statusCode).toBe(201);
    const url = `/v1/watchlists/${created.json().id}/export.csv`;
    const before = await leadViewsLeft(client);
    const refused = await client.call("GET", url, {
      csrf: false,
      headers: { "sec-fetch-site": "cross-site" },
    });
    expect(refused.statusCode).toBe(403);
    expect(await leadViewsLeft(client)).toBe(before);
    // The dashboard's own download link: the browser says this origin sent it.
    const own = await client.call("GET", url, {
      csrf: false,
      headers: { "sec-fetch-site": "same-origin" },
    });
    expect(own.statusCode).toBe(200);
    expect(own.headers["content-type"]).toMatch(/^text\/csv/);
  });

  it("serves and charges the same read with the session's X-CSRF-Token, or from a page of this origin", async () => {
    const { client } = await signedIn();
    const before = await leadViewsLeft(client);
    const withToken = await client.call("GET", `/v1/leads/${folios[0]}`);
    expect(withToken.statusCode).toBe(200);
    expect(withToken.json().folio).toBe(folios[0]);
    const sameOrigin = await client.call("GET", `/v1/leads/${folios[1]}`, {
      csrf: false,
      headers: { "sec-fetch-site": "same-origin" },
    });
    expect(sameOrigin.statusCode).toBe(200);
    expect(await leadViewsLeft(client)).toBe(before - 2);
  });

  it("leaves free reads to the cookie alone, and API keys, which browsers do not send, unasked", async () => {
    const { tenant, client } = await signedIn();
    for (const url of ["/v1/account", "/v1/dashboard/leads?county=23", "/v1/watchlists"]) {
      const response = await client.call("GET", url, {
        csrf: false,
        headers: { "sec-fetch-site": "cross-site" },
      });
      expect(response.statusCode, url).toBe(200);
    }
    const byKey = await stack.request("GET", `/v1/leads/${folios[2]}`, { key: tenant.key });
    expect(byKey.statusCode).toBe(200);
  });
});
