// Lead reads and the lead-view quota end to end: gateway, keys, parcels and quota-ledger on real
// Postgres, Redis and Kafka, with the sample roll ingested. Each test names the rule it proves.
import { type AddressInfo, createServer, type Socket } from "node:net";
import { Bus } from "@th/bus";
import { buildApp as buildGateway } from "@th/gateway/app";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";

let stack: EdgeStack;
let folios: string[];
let clock = Date.parse("2026-11-21T12:00:00Z");

beforeAll(async () => {
  stack = await startEdgeStack({ now: () => clock });
  folios = await stack.ingestSample();
});
afterAll(() => stack.close());

async function customTenant(leadViews: number, keys = 1) {
  const tenant = await stack.startTrial("custom");
  await stack.setCustomLimits(tenant.tenantId, {
    lead_views_per_month: leadViews,
    rate_per_minute: 100_000,
  });
  const secrets = [tenant.key];
  for (let i = 1; i < keys; i++) {
    secrets.push(
      (
        await stack.request("POST", "/v1/team/api-keys", {
          key: tenant.key,
          body: { label: `k${i}` },
        })
      ).json().secret,
    );
  }
  return { ...tenant, keys: secrets };
}

function remaining(response: { headers: Record<string, unknown> }) {
  return Number(response.headers["x-quota-lead-views-remaining"]);
}

async function usage(key: string) {
  return (await stack.request("GET", "/v1/usage", { key })).json();
}

describe("Endpoints: lead reads", () => {
  it("GET /v1/leads/{folio} answers the whole lead and costs one lead-view", async () => {
    const tenant = await customTenant(10);
    const response = await stack.request("GET", `/v1/leads/${folios[0]}`, { key: tenant.key });
    expect(response.statusCode).toBe(200);
    const lead = response.json();
    expect(lead.folio).toBe(folios[0]);
    expect(lead).toHaveProperty("owner");
    expect(lead).toHaveProperty("signals");
    expect(remaining(response)).toBe(9);
  });

  it("GET /v1/leads/{folio} of a parcel that does not exist is 404 and free", async () => {
    const tenant = await customTenant(10);
    const response = await stack.request("GET", "/v1/leads/23-0000000000000", { key: tenant.key });
    expect(response.statusCode).toBe(404);
    expect(response.json().error).toBe("not_found");
    expect(remaining(response)).toBe(10);
  });

  it("HEAD on a metered read is 405 (Allow: GET) and costs nothing", async () => {
    const tenant = await customTenant(10);
    for (const url of [`/v1/leads/${folios[0]}`, "/v1/leads?county=23&limit=5"]) {
      const response = await stack.request("HEAD", url, { key: tenant.key });
      expect(response.statusCode, url).toBe(405);
      expect(response.headers.allow).toBe("GET");
      expect(remaining(response)).toBe(10);
    }
    expect((await usage(tenant.key)).used).toBe(0);
  });

  it("an unknown search parameter or batch field, or a number not in decimal digits, is 400 naming it, and free", async () => {
    const tenant = await customTenant(10);
    const cases: [string, string, unknown, string][] = [
      ["GET", "/v1/leads?county=23&min_just_vaule=500000", undefined, "querystring.min_just_vaule"],
      ["GET", "/v1/leads?min_just_value=0x10", undefined, "querystring.min_just_value"],
      ["GET", "/v1/leads?limit=1e2", undefined, "querystring.limit"],
      ["GET", "/v1/leads?max_just_value=-5", undefined, "querystring.max_just_value"],
      ["POST", "/v1/leads/batch", { folios: [folios[0]], extra: 1 }, "body.extra"],
    ];
    for (const [method, url, body, path] of cases) {
      const response = await stack.request(method as "GET" | "POST", url, {
        key: tenant.key,
        ...(body === undefined ? {} : { body }),
      });
      expect(response.statusCode, url).toBe(400);
      expect(
        response.json().fields.map((field: { path: string }) => field.path),
        url,
      ).toContain(path);
    }
    // Equity can be negative (a loan above the value), so its bounds may be.
    const negativeEquity = await stack.request("GET", "/v1/leads?min_equity=-50000&limit=1", {
      key: tenant.key,
    });
    expect(negativeEquity.statusCode).toBe(200);
    const charged = negativeEquity.json().leads.length;
    // The quota state answers at once; the ledger behind /v1/usage follows the topic.
    expect(remaining(negativeEquity)).toBe(10 - charged);
    await vi.waitFor(async () => expect((await usage(tenant.key)).used).toBe(charged), {
      timeout: 10_000,
    });
  });

  it("takes a folio pasted with spaces around it for the folio", async () => {
    const tenant = await customTenant(10);
    const response = await stack.request("GET", `/v1/leads/${folios[5]}%20`, { key: tenant.key });
    expect(response.statusCode).toBe(200);
    expect(response.json().folio).toBe(folios[5]);
    const batch = await stack.request("POST", "/v1/leads/batch", {
      key: tenant.key,
      body: { folios: [` ${folios[5]} `] },
    });
    expect(batch.json()).toMatchObject({ missing: [] });
    expect(remaining(batch)).toBe(9);
  });

  it("a NUL character in a folio or a filter is 400 invalid_request with the tenant's headers, and free", async () => {
    const tenant = await customTenant(10);
    for (const url of ["/v1/leads/23-%00", "/v1/leads?city=%00"]) {
      const response = await stack.request("GET", url, { key: tenant.key });
      expect(response.statusCode, url).toBe(400);
      expect(response.json().error).toBe("invalid_request");
      expect(remaining(response)).toBe(10);
      expect(response.headers["x-ratelimit-limit"]).toBeDefined();
    }
  });

  it("GET /v1/leads with results costs one lead-view per parcel returned", async () => {
    const tenant = await customTenant(100);
    const response = await stack.request("GET", "/v1/leads?county=23&limit=7", { key: tenant.key });
    expect(response.statusCode).toBe(200);
    expect(response.json().leads).toHaveLength(7);
    expect(remaining(response)).toBe(93);
    const next = await stack.request(
      "GET",
      `/v1/leads?county=23&limit=7&cursor=${encodeURIComponent(response.json().next_cursor)}`,
      {
        key: tenant.key,
      },
    );
    expect(next.json().leads[0].folio > response.json().leads[6].folio).toBe(true);
    expect(remaining(next)).toBe(86);
  });

  it("POST /v1/leads/batch charges only the folios that exist", async () => {
    const tenant = await customTenant(10);
    const response = await stack.request("POST", "/v1/leads/batch", {
      key: tenant.key,
      body: { folios: [folios[1], folios[2], "23-9999999999999"] },
    });
    expect(response.statusCode).toBe(200);
    expect(response.json().leads.map((lead: { folio: string }) => lead.folio)).toEqual([
      folios[1],
      folios[2],
    ]);
    expect(response.json().missing).toEqual(["23-9999999999999"]);
    expect(remaining(response)).toBe(8);
  });

  it("refuses more than 100 folios in one batch with 400", async () => {
    const tenant = await customTenant(10);
    const response = await stack.request("POST", "/v1/leads/batch", {
      key: tenant.key,
      body: { folios: Array.from({ length: 101 }, (_, i) => `23-${i}`) },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().fields[0].path).toBe("body.folios");
  });
});

describe("Lead-view: one unique (tenant, folio, UTC day)", () => {
  it("a second read of the same parcel on the same UTC day does not consume a second lead-view", async () => {
    const tenant = await customTenant(10, 2);
    const first = await stack.request("GET", `/v1/leads/${folios[3]}`, { key: tenant.keys[0] });
    expect(first.statusCode).toBe(200);
    const again = await stack.request("GET", `/v1/leads/${folios[3]}`, { key: tenant.keys[1] });
    expect(again.statusCode).toBe(200);
    expect(remaining(again)).toBe(9);
    const viaBatch = await stack.request("POST", "/v1/leads/batch", {
      key: tenant.key,
      body: { folios: [folios[3]] },
    });
    expect(viaBatch.statusCode).toBe(200);
    expect(remaining(viaBatch)).toBe(9);
    const fourth = await stack.request("GET", `/v1/leads/${folios[3]}`, { key: tenant.keys[0] });
    expect(fourth.statusCode).toBe(200);
    expect(remaining(fourth)).toBe(9);
  });

  it("counts reads at 23:59:59 and 00:00:01 UTC the next day as two lead-views", async () => {
    const tenant = await customTenant(10);
    const saved = clock;
    clock = Date.parse("2026-11-21T23:59:59Z");
    await stack.request("GET", `/v1/leads/${folios[4]}`, { key: tenant.key });
    clock = Date.parse("2026-11-22T00:00:01Z");
    const next = await stack.request("GET", `/v1/leads/${folios[4]}`, { key: tenant.key });
    expect(remaining(next)).toBe(8);
    clock = saved;
  });

  it("are recorded on leadview.recorded and land in the ledger behind GET /v1/usage", async () => {
    const tenant = await customTenant(50);
    await stack.request("POST", "/v1/leads/batch", {
      key: tenant.key,
      body: { folios: folios.slice(10, 15) },
    });
    await vi.waitFor(
      async () => {
        const current = await usage(tenant.key);
        expect(current).toMatchObject({ cap: 50, used: 5, remaining: 45 });
        expect(current.daily).toEqual([{ day: "2026-11-21", lead_views: 5 }]);
      },
      { timeout: 15_000, interval: 200 },
    );
  });
});

describe("Errors 402 and Per-tier caps: the monthly lead-view quota", () => {
  it("answers 402 {error, detail, quota_resets_at, upgrade_url} once the cap is reached", async () => {
    const tenant = await customTenant(2);
    await stack.request("POST", "/v1/leads/batch", {
      key: tenant.key,
      body: { folios: folios.slice(20, 22) },
    });
    const refused = await stack.request("GET", `/v1/leads/${folios[22]}`, { key: tenant.key });
    expect(refused.statusCode).toBe(402);
    const body = refused.json();
    expect(Object.keys(body).sort()).toEqual([
      "detail",
      "error",
      "quota_resets_at",
      "request_id",
      "upgrade_url",
    ]);
    expect(body.error).toBe("quota_exceeded");
    expect(new Date(body.quota_resets_at).toISOString()).toBe(body.quota_resets_at);
    expect(body.quota_resets_at).toBe(refused.headers["x-quota-resets"]);
    expect(body.upgrade_url).toMatch(/^https:\/\//);
    // More lead-views, not a cheaper tier: a Custom tenant is pointed at a larger contract.
    expect(Object.fromEntries(new URL(body.upgrade_url).searchParams)).toEqual({
      from: "custom",
      to: "custom",
      feature: "lead_views",
    });
    expect(remaining(refused)).toBe(0);
  });

  it("keeps free operations and already-viewed parcels working when the quota is exhausted", async () => {
    const tenant = await customTenant(1);
    await stack.request("GET", `/v1/leads/${folios[30]}`, { key: tenant.key });
    expect(
      (await stack.request("GET", `/v1/leads/${folios[31]}`, { key: tenant.key })).statusCode,
    ).toBe(402);
    expect(
      (await stack.request("GET", `/v1/leads/${folios[30]}`, { key: tenant.key })).statusCode,
    ).toBe(200);
    expect((await stack.request("GET", "/v1/me", { key: tenant.key })).statusCode).toBe(200);
    expect((await stack.request("GET", "/v1/usage", { key: tenant.key })).statusCode).toBe(200);
    expect((await stack.request("GET", "/v1/account", { key: tenant.key })).statusCode).toBe(200);
  });

  it("refuses a batch whole when the remaining lead-views cannot cover it", async () => {
    const tenant = await customTenant(3);
    await stack.request("GET", `/v1/leads/${folios[40]}`, { key: tenant.key });
    const refused = await stack.request("POST", "/v1/leads/batch", {
      key: tenant.key,
      body: { folios: folios.slice(40, 44) },
    });
    expect(refused.statusCode).toBe(402);
    expect(remaining(refused)).toBe(2);
    const fits = await stack.request("POST", "/v1/leads/batch", {
      key: tenant.key,
      body: { folios: folios.slice(40, 43) },
    });
    expect(fits.statusCode).toBe(200);
    expect(remaining(fits)).toBe(0);
  });

  it("never exceeds the cap: 500 concurrent reads from 5 keys at the edge of the cap", async () => {
    const tenant = await customTenant(120, 5);
    const responses = await Promise.all(
      Array.from({ length: 500 }, (_, i) =>
        stack.request("GET", `/v1/leads/${folios[i % 250]}`, { key: tenant.keys[i % 5] }),
      ),
    );
    const served = new Set(
      responses
        .filter((response) => response.statusCode === 200)
        .map((response) => response.json().folio),
    );
    expect(served.size).toBe(120);
    expect(responses.every((response) => [200, 402].includes(response.statusCode))).toBe(true);
    await vi.waitFor(async () => expect((await usage(tenant.key)).used).toBe(120), {
      timeout: 15_000,
      interval: 250,
    });
  });

  it("lifts the cap on upgrade from the next request", async () => {
    const tenant = await customTenant(1);
    await stack.request("GET", `/v1/leads/${folios[50]}`, { key: tenant.key });
    expect(
      (await stack.request("GET", `/v1/leads/${folios[51]}`, { key: tenant.key })).statusCode,
    ).toBe(402);
    const upgrade = await stack.request("POST", "/v1/account/tier", {
      key: tenant.key,
      body: { tier: "team" },
    });
    expect(upgrade.statusCode).toBe(200);
    // The answer to the change already carries the new tier's caps.
    expect(upgrade.headers["x-quota-lead-views-limit"]).toBe("5000");
    expect(upgrade.headers["x-ratelimit-limit"]).toBe(String(upgrade.json().rate_per_minute));
    const after = await stack.request("GET", `/v1/leads/${folios[51]}`, { key: tenant.key });
    expect(after.statusCode).toBe(200);
    expect(after.headers["x-quota-lead-views-limit"]).toBe("5000");
    expect(remaining(after)).toBe(4998);
  });

  it("reports what remains after an upgrade from a cap the tenant had used beyond", async () => {
    const tenant = await customTenant(3);
    await stack.request("POST", "/v1/leads/batch", {
      key: tenant.key,
      body: { folios: folios.slice(52, 55) },
    });
    // A smaller cap than the month's use so far: nothing remains, and that figure is clamped.
    await stack.setCustomLimits(tenant.tenantId, { lead_views_per_month: 1 });
    const lowered = await stack.request("GET", "/v1/usage", { key: tenant.key });
    expect(remaining(lowered)).toBe(0);
    const upgrade = await stack.request("POST", "/v1/account/tier", {
      key: tenant.key,
      body: { tier: "team" },
    });
    expect(upgrade.statusCode).toBe(200);
    expect(remaining(upgrade)).toBe(5000 - 3);
  });

  it("resets on the billing anniversary, not on the first of the month", async () => {
    const saved = clock;
    clock = Date.parse("2026-11-21T12:00:00Z");
    const tenant = await customTenant(1);
    await stack.request("GET", `/v1/leads/${folios[60]}`, { key: tenant.key });
    clock = Date.parse("2026-12-01T12:00:00Z");
    const firstOfMonth = await stack.request("GET", `/v1/leads/${folios[61]}`, { key: tenant.key });
    expect(firstOfMonth.statusCode).toBe(402);
    expect(firstOfMonth.headers["x-quota-resets"]).toBe("2026-12-21T00:00:00.000Z");
    clock = Date.parse("2026-12-21T00:00:01Z");
    const anniversary = await stack.request("GET", `/v1/leads/${folios[61]}`, { key: tenant.key });
    expect(anniversary.statusCode).toBe(200);
    expect(anniversary.headers["x-quota-resets"]).toBe("2027-01-21T00:00:00.000Z");
    clock = saved;
  });
});

describe("Recording before answering", () => {
  it("gives the reservation back and answers 503 when the lead-view cannot be recorded", async () => {
    const tenant = await customTenant(5);
    const deadBus = new Bus({
      brokers: ["127.0.0.1:1"],
      clientId: "dead",
      logger: stack.harness.logger,
      retries: 0,
    });
    const isolated = await buildGateway(
      { ...stack.harness, bus: deadBus, config: stack.gatewayConfig },
      { now: () => clock },
    );
    try {
      const response = await stack.request("GET", `/v1/leads/${folios[70]}`, {
        key: tenant.key,
        via: isolated,
      });
      expect(response.statusCode).toBe(503);
      expect(remaining(response)).toBe(5);
      const healthy = await stack.request("GET", `/v1/leads/${folios[70]}`, { key: tenant.key });
      expect(healthy.statusCode).toBe(200);
      expect(remaining(healthy)).toBe(4);
    } finally {
      await isolated.http?.close();
      await deadBus.close();
    }
  });
});

describe("Recording before answering: a concurrent read", () => {
  it("records a read of a folio whose first read is still being recorded, so that read is not free when the first one fails", async () => {
    const tenant = await customTenant(5);
    // A broker that accepts connections and never answers: the first read's publish waits
    // until the test cuts the connections, then fails.
    const sockets: Socket[] = [];
    let cut = false;
    const silent = createServer((socket) => {
      sockets.push(socket);
      // Once cut, it refuses at once: the failed read's void (decision 0190) is not left waiting.
      if (cut) {
        socket.destroy();
      }
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const stalledBus = new Bus({
      brokers: [`127.0.0.1:${(silent.address() as AddressInfo).port}`],
      clientId: "stalled",
      logger: stack.harness.logger,
      retries: 0,
    });
    const stalled = await buildGateway(
      { ...stack.harness, bus: stalledBus, config: stack.gatewayConfig },
      { now: () => clock },
    );
    const folio = folios[71] as string;
    try {
      const first = stack.request("GET", `/v1/leads/${folio}`, { key: tenant.key, via: stalled });
      // The view is reserved before the producer connects.
      await vi.waitFor(() => expect(sockets.length).toBeGreaterThan(0), { timeout: 10_000 });
      const second = await stack.request("GET", `/v1/leads/${folio}`, { key: tenant.key });
      expect(second.statusCode).toBe(200);
      expect(remaining(second)).toBe(4);
      cut = true;
      for (const socket of sockets) {
        socket.destroy();
      }
      const failed = await first;
      expect(failed.statusCode).toBe(503);
      // The first read could not give the view back: the second one recorded it.
      expect(remaining(failed)).toBe(4);
      await vi.waitFor(async () => expect((await usage(tenant.key)).used).toBe(1), {
        timeout: 10_000,
      });
    } finally {
      await stalled.http?.close();
      await stalled.stop();
      await stalledBus.close();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

describe("Recovery", () => {
  it("recovers from a flushed Redis without giving away or double-charging lead-views", async () => {
    const tenant = await customTenant(10);
    await stack.request("POST", "/v1/leads/batch", {
      key: tenant.key,
      body: { folios: folios.slice(80, 83) },
    });
    const prefix = stack.harness.redis.options.keyPrefix ?? "";
    const keys = (await stack.harness.redis.keys(`*lv:*${tenant.tenantId}*`)).map((key) =>
      key.slice(prefix.length),
    );
    expect(keys.length).toBeGreaterThan(0);
    await stack.harness.redis.del(...keys);
    const again = await stack.request("POST", "/v1/leads/batch", {
      key: tenant.key,
      body: { folios: folios.slice(81, 84) },
    });
    expect(again.statusCode).toBe(200);
    expect(remaining(again)).toBe(6);
  });
});
