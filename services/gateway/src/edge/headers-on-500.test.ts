// "The six headers are present on every response, successful or error": a 500 included. The
// keys service here answers the account read with a body the public schema refuses, so the
// gateway fails on its own side after the edge admitted the tenant. Real Redis.
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
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
let keys: Server;
const clock = Date.parse("2026-03-20T10:00:00Z");

beforeAll(async () => {
  // Answers every call with 200 and a body no public schema accepts.
  keys = createServer((request, response) => {
    request.resume();
    request.on("end", () =>
      response.writeHead(200, { "content-type": "application/json" }).end('{"not":"a tenant"}'),
    );
  });
  await new Promise<void>((resolve) => keys.listen(0, "127.0.0.1", resolve));
  const keysUrl = `http://127.0.0.1:${(keys.address() as AddressInfo).port}`;
  harness = await createTestHarness({
    config: { ...readConfig({}), KEYS_URL: keysUrl },
    migrations: [],
  });
  app = await buildApp(harness, { now: () => clock });
});
afterAll(async () => {
  await app.http?.close();
  await harness.close();
  await new Promise((resolve) => keys.close(resolve));
});

/** A key of a tenant the edge already knows, so authentication asks the keys service nothing. */
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

describe("Rate-limit headers on a server error", () => {
  it("RH1–RH6: a 500 carries the six headers with the tenant's figures, in the error shape with a request id", async () => {
    const response = await (app.http as NonNullable<typeof app.http>).inject({
      method: "GET",
      url: "/v1/account",
      remoteAddress: "198.51.100.7",
      headers: { authorization: `Bearer ${await tenantKey()}` },
    });
    expect(response.statusCode).toBe(500);
    expect(response.json()).toMatchObject({ error: "internal", request_id: expect.any(String) });
    // Nothing of what failed (the upstream's body, a stack) reaches the client.
    expect(response.body).not.toContain("a tenant");
    expect(response.headers["x-ratelimit-limit"]).toBe(
      String(tenantChanged.limits.rate_per_minute),
    );
    expect(Number(response.headers["x-ratelimit-remaining"])).toBe(
      tenantChanged.limits.rate_per_minute - 1,
    );
    expect(String(response.headers["x-ratelimit-reset"])).toMatch(/^\d+$/);
    expect(response.headers["x-quota-lead-views-limit"]).toBe(
      String(tenantChanged.limits.lead_views_per_month),
    );
    expect(String(response.headers["x-quota-lead-views-remaining"])).toMatch(/^\d+$/);
    const resets = String(response.headers["x-quota-resets"]);
    expect(new Date(resets).toISOString()).toBe(resets);
  });
});
