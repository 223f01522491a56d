// "The six headers are present on every response, successful or error": on answers with no tenant
// behind them, and on errors raised before or outside the route, with the spec's error shape and
// a request id. Real Redis; the keys service is unreachable, so a cache miss is a 503.
import { randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { generateApiKey, hashApiKey } from "@th/api-keys";
import { pepperOf } from "@th/config";
import { tenantChanged } from "@th/contracts/samples";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";

let harness: TestHarness<Config>;
let app: Awaited<ReturnType<typeof buildApp>>;
let port: number;
const clock = Date.parse("2026-03-20T10:00:00Z");

const SIX = [
  "x-ratelimit-limit",
  "x-ratelimit-remaining",
  "x-ratelimit-reset",
  "x-quota-lead-views-limit",
  "x-quota-lead-views-remaining",
  "x-quota-resets",
] as const;

beforeAll(async () => {
  // Port 1 refuses connections: a key the cache does not know cannot be looked up.
  const config = { ...readConfig({}), KEYS_URL: "http://127.0.0.1:1" };
  harness = await createTestHarness({ config, migrations: [] });
  app = await buildApp(harness, { now: () => clock });
  const http = app.http as NonNullable<typeof app.http>;
  await http.listen({ port: 0, host: "127.0.0.1" });
  port = (http.server.address() as AddressInfo).port;
});
afterAll(async () => {
  await app.http?.close();
  await harness.close();
});

/** All six, well formed: whole numbers, and an RFC 3339 time. */
function expectSix(headers: Record<string, unknown>) {
  for (const name of SIX.slice(0, 5)) {
    expect(String(headers[name]), name).toMatch(/^\d+$/);
  }
  const resets = String(headers["x-quota-resets"]);
  expect(resets).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
  expect(new Date(resets).toISOString()).toBe(resets);
}

/** What no tenant and no window say: nothing metered, nothing to wait for. */
function expectTenantless(headers: Record<string, unknown>, window: "none" | "ip" = "none") {
  expectSix(headers);
  expect(headers["x-quota-lead-views-limit"]).toBe("0");
  expect(headers["x-quota-lead-views-remaining"]).toBe("0");
  expect(headers["x-quota-resets"]).toBe(new Date(clock).toISOString());
  if (window === "none") {
    expect(headers["x-ratelimit-limit"]).toBe("0");
    expect(headers["x-ratelimit-remaining"]).toBe("0");
    expect(headers["x-ratelimit-reset"]).toBe(String(clock / 1000));
  } else {
    expect(Number(headers["x-ratelimit-limit"])).toBeGreaterThan(0);
  }
}

async function tenantKey(): Promise<string> {
  const tenantId = `ten_${randomBytes(4).toString("hex")}`;
  await app.store.putTenant({
    ...tenantChanged,
    tenant_id: tenantId,
    revision: 1,
    status: "active",
  });
  const key = generateApiKey();
  await app.store.putKey(hashApiKey(key, pepperOf(harness.config)), {
    tenantId,
    memberId: "mem_1",
    keyId: "key_1",
    revoked: false,
  });
  return key;
}

function expectTenantHeaders(headers: Record<string, unknown>) {
  expectSix(headers);
  expect(headers["x-quota-lead-views-limit"]).toBe(
    String(tenantChanged.limits.lead_views_per_month),
  );
  expect(headers["x-ratelimit-limit"]).toBe(String(tenantChanged.limits.rate_per_minute));
}

function inject(url: string, init: { key?: string; method?: "GET" | "POST"; body?: object } = {}) {
  return (app.http as NonNullable<typeof app.http>).inject({
    method: init.method ?? "GET",
    url,
    remoteAddress: "198.51.100.7",
    headers: init.key ? { authorization: `Bearer ${init.key}` } : {},
    ...(init.body ? { payload: init.body } : {}),
  });
}

describe("Rate-limit headers: the six headers are present on every response, tenant or not", () => {
  it("are on a 401, carrying the client's failed-authentication window", async () => {
    const response = await inject("/v1/me");
    expect(response.statusCode).toBe(401);
    expectTenantless(response.headers, "ip");
  });

  it("are on /v1/health and on /v1/public/*, carrying the public per-IP window", async () => {
    const health = await inject("/v1/health");
    expect(health.statusCode).toBe(200);
    expectTenantless(health.headers, "ip");
    const contact = await inject("/v1/public/contact", { method: "POST", body: {} });
    expect(contact.statusCode).toBe(400);
    expectTenantless(contact.headers, "ip");
  });

  it("are on a 404 without credentials, with no window", async () => {
    for (const url of ["/v2/leads", "/favicon.ico"]) {
      const response = await inject(url);
      expect(response.statusCode, url).toBe(404);
      expectTenantless(response.headers);
    }
  });

  it("are on the 503 while authentication state is rebuilt", async () => {
    const response = await inject("/v1/me", { key: generateApiKey() });
    expect(response.statusCode).toBe(503);
    expect(response.json().error).toBe("unavailable");
    expectTenantless(response.headers);
  });

  it("are declared, with what they say where no tenant is known, on every operation of the OpenAPI document", async () => {
    const document = (await inject("/v1/openapi.json")).json();
    for (const name of ["X-RateLimit-Limit", "X-Quota-Lead-Views-Limit", "X-Quota-Resets"]) {
      expect(document.components.headers[name].description).toMatch(/no tenant/);
    }
    let responses = 0;
    for (const operations of Object.values(document.paths) as Record<string, unknown>[]) {
      for (const operation of Object.values(operations) as { responses: object }[]) {
        for (const response of Object.values(operation.responses) as { headers: object }[]) {
          responses++;
          expect(Object.keys(response.headers)).toEqual(
            expect.arrayContaining([
              "X-RateLimit-Limit",
              "X-RateLimit-Remaining",
              "X-RateLimit-Reset",
              "X-Quota-Lead-Views-Limit",
              "X-Quota-Lead-Views-Remaining",
              "X-Quota-Resets",
            ]),
          );
        }
      }
    }
    expect(responses).toBeGreaterThan(50);
  });
});

describe("Rate-limit headers and Errors: an error raised before the route, with a valid key", () => {
  it("answers a malformed percent-escape with 400 in the error shape, a request id and the tenant's six headers", async () => {
    const key = await tenantKey();
    const response = await inject("/v1/leads/%C3%28", { key });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({
      error: "invalid_request",
      detail: expect.stringMatching(/percent-escape/),
      request_id: response.headers["x-request-id"],
    });
    expect(response.headers["x-request-id"]).toEqual(expect.any(String));
    expectTenantHeaders(response.headers);
  });

  it("still refuses a key hidden beside a malformed percent-escape with 401", async () => {
    const key = await tenantKey();
    const response = await inject(`/v1/leads/%C3%28${generateApiKey()}`, { key });
    expect(response.statusCode).toBe(401);
  });

  it("answers a 10,000-character folio with 400 in the error shape, a request id and the tenant's six headers", async () => {
    const key = await tenantKey();
    const response = await inject(`/v1/leads/23-${"9".repeat(10_000)}`, { key });
    expect(response.statusCode).toBe(400);
    const body = response.json();
    expect(body.error).toBe("invalid_request");
    expect(body.request_id).toBe(response.headers["x-request-id"]);
    expect(body.fields).toEqual([{ path: "params.folio", message: expect.any(String) }]);
    expectTenantHeaders(response.headers);
  });

  it("answers a header over 16 KB with 431 in the error shape, a request id and the six tenant-less headers", async () => {
    const key = await tenantKey();
    const answer = await new Promise<{ status: number; headers: object; body: string }>(
      (resolve, reject) => {
        const request = httpRequest(
          {
            host: "127.0.0.1",
            port,
            path: "/v1/me",
            headers: { authorization: `Bearer ${key}`, "x-padding": "a".repeat(17_000) },
          },
          (response) => {
            let body = "";
            response.setEncoding("utf8");
            response.on("data", (chunk: string) => {
              body += chunk;
            });
            response.on("end", () =>
              resolve({ status: response.statusCode ?? 0, headers: response.headers, body }),
            );
          },
        );
        request.on("error", reject);
        request.end();
      },
    );
    expect(answer.status).toBe(431);
    const headers = answer.headers as Record<string, string>;
    const body = JSON.parse(answer.body);
    expect(body).toEqual({
      error: "headers_too_large",
      detail: expect.stringMatching(/header/),
      request_id: headers["x-request-id"],
    });
    expect(headers["content-type"]).toMatch(/^application\/json/);
    expectTenantless(headers);
  });
});

describe("Payload of watchlist.match in the OpenAPI document", () => {
  it("types match.owner.mailing_state a string and match.valuation.est_equity a number, and says how unknowns are written", async () => {
    const document = (await inject("/v1/openapi.json")).json();
    const schema =
      document.webhooks["watchlist.match"].post.requestBody.content["application/json"].schema;
    const match = schema.properties.match.properties;
    expect(match.owner.properties.mailing_state.type).toBe("string");
    expect(match.owner.properties.mailing_state.description).toMatch(/"" \(empty\)/);
    expect(match.valuation.properties.est_equity.type).toBe("number");
    expect(match.valuation.properties.est_equity.description).toMatch(
      /0 when the roll records no purchase/,
    );
    expect(schema.required).toEqual(
      expect.arrayContaining([
        "event_id",
        "event_type",
        "occurred_at",
        "tenant_id",
        "watchlist",
        "match",
      ]),
    );
  });
});
