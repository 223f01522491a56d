import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
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
// A whole second, so header seconds and window milliseconds compare without rounding.
let clock = Date.parse("2026-03-20T10:00:00Z");

beforeAll(async () => {
  harness = await createTestHarness({ config: readConfig({}), migrations: [] });
  app = await buildApp(harness, { now: () => clock });
});
afterAll(async () => {
  await app.http?.close();
  await harness.close();
});

/** A tenant with a small per-minute cap and two keys, known to the edge without the keys service. */
async function tenantWithKeys(ratePerMinute: number): Promise<[string, string]> {
  const tenantId = `ten_${randomBytes(4).toString("hex")}`;
  await app.store.putTenant({
    ...tenantChanged,
    tenant_id: tenantId,
    revision: 1,
    status: "active",
    limits: { ...tenantChanged.limits, rate_per_minute: ratePerMinute },
  });
  const keys: [string, string] = [generateApiKey(), generateApiKey()];
  for (const [index, key] of keys.entries()) {
    await app.store.putKey(hashApiKey(key, pepperOf(harness.config)), {
      tenantId,
      memberId: "mem_1",
      keyId: `key_${index}`,
      revoked: false,
    });
  }
  return keys;
}

/** The tenant's keys in turn. */
function alternate(keys: [string, string], i: number): string {
  return i % 2 === 0 ? keys[0] : keys[1];
}

async function me(key: string) {
  const response = await app.http?.inject({
    method: "GET",
    url: "/v1/me",
    headers: { authorization: `Bearer ${key}` },
  });
  if (!response) {
    throw new Error("no gateway app");
  }
  return response;
}

describe("Rate-limit headers follow the tenant's rolling minute", () => {
  it("count down across all keys of the tenant, and reset when the minute's oldest request leaves it", async () => {
    const keys = await tenantWithKeys(3);
    clock += 120_000;
    const first = clock;
    const answers = [];
    for (let i = 0; i < 3; i++) {
      answers.push(await me(alternate(keys, i)));
      clock += 1_000;
    }
    expect(answers.map((response) => response.statusCode)).toEqual([200, 200, 200]);
    expect(answers.map((response) => response.headers["x-ratelimit-remaining"])).toEqual([
      "2",
      "1",
      "0",
    ]);
    for (const response of answers) {
      expect(response.headers["x-ratelimit-limit"]).toBe("3");
      expect(response.headers["x-ratelimit-reset"]).toBe(String((first + 60_000) / 1000));
    }
  });

  it("give a 429 a Retry-After and an X-RateLimit-Reset that name the moment one more request fits", async () => {
    const keys = await tenantWithKeys(3);
    clock += 120_000;
    const first = clock;
    for (let i = 0; i < 3; i++) {
      expect((await me(keys[0])).statusCode).toBe(200);
      clock += 1_000;
    }
    clock = first + 10_000;
    const refused = await me(keys[1]);
    expect(refused.statusCode).toBe(429);
    // The refusal counts too, so the minute has room again when the request of 1 s leaves.
    expect(refused.json()).toMatchObject({ error: "rate_limited", retry_after_seconds: 51 });
    expect(refused.headers["retry-after"]).toBe("51");
    expect(refused.headers["x-ratelimit-remaining"]).toBe("0");
    expect(Number(refused.headers["x-ratelimit-reset"])).toBe(clock / 1000 + 51);
    // The request of 0 s has left, but those of 1 and 2 s and the refusal of 10 s fill the minute.
    clock = first + 60_000;
    const retried = await me(keys[0]);
    expect(retried.statusCode).toBe(429);
    expect(retried.headers["retry-after"]).toBe("2");
    expect(Number(retried.headers["x-ratelimit-reset"])).toBe((first + 62_000) / 1000);
  });

  it("lengthen the cool-down while the tenant keeps retrying, then let it in when the minute clears", async () => {
    const keys = await tenantWithKeys(2);
    clock += 120_000;
    const first = clock;
    await me(keys[0]);
    await me(keys[1]);
    const waits = [];
    for (const at of [5_000, 20_000, 40_000]) {
      clock = first + at;
      const response = await me(keys[at === 20_000 ? 1 : 0]);
      expect(response.statusCode).toBe(429);
      waits.push(first + at + Number(response.headers["retry-after"]) * 1000);
    }
    // Each refusal moves the moment a request fits: to when the second-newest refusal leaves.
    expect(waits).toEqual([first + 60_000, first + 65_000, first + 80_000]);
    clock = first + 79_999;
    expect((await me(keys[0])).statusCode).toBe(429);
    clock = first + 99_999;
    expect((await me(keys[1])).statusCode).toBe(429);
    // The refusal of 99.999 s is the only request left in the minute.
    clock = first + 159_000;
    const admitted = await me(keys[0]);
    expect(admitted.statusCode).toBe(200);
    expect(admitted.headers["x-ratelimit-remaining"]).toBe("0");
  });
});

/**
 * A gateway whose keys service is a stand-in for the key lookup: it counts its calls and answers
 * each once `answerWhen` has resolved.
 */
async function gatewayWithSlowKeys(key: string, tenantId: string, answerWhen: () => Promise<void>) {
  const keyHash = hashApiKey(key, pepperOf(harness.config));
  const served = { lookups: 0 };
  const server = createServer((request, response) => {
    if (request.url !== `/internal/v1/keys/by-hash/${keyHash}`) {
      response.writeHead(404).end();
      return;
    }
    served.lookups++;
    void answerWhen().then(() => {
      response.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({
          key_id: "key_cold",
          tenant_id: tenantId,
          member_id: "mem_1",
          revoked: false,
          tenant: { ...tenantChanged, tenant_id: tenantId, revision: 1, status: "active" },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const gateway = await buildApp(
    { ...harness, config: { ...harness.config, KEYS_URL: `http://127.0.0.1:${port}` } },
    { now: () => clock },
  );
  return {
    served,
    keyHash,
    gateway,
    async close() {
      await gateway.http?.close();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe("a tenant record near its expiry", () => {
  it("is renewed by one background lookup while the requests are answered from the cache", async () => {
    const tenantId = `ten_${randomBytes(4).toString("hex")}`;
    const key = generateApiKey();
    // The lookup answers only after every request below has been answered: an edge that waited
    // for it would never answer them.
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const keys = await gatewayWithSlowKeys(key, tenantId, () => released);
    try {
      await keys.gateway.store.putTenant({
        ...tenantChanged,
        tenant_id: tenantId,
        revision: 1,
        status: "active",
      });
      await keys.gateway.store.putKey(keys.keyHash, {
        tenantId,
        memberId: "mem_1",
        keyId: "key_cold",
        revoked: false,
      });
      await harness.redis.pexpire(`th:tenant:${tenantId}`, 2_000);
      const responses = await Promise.all(
        Array.from({ length: 20 }, () =>
          keys.gateway.http?.inject({
            method: "GET",
            url: "/v1/me",
            headers: { authorization: `Bearer ${key}` },
          }),
        ),
      );
      expect(responses.map((response) => response?.statusCode)).toEqual(Array(20).fill(200));
      await expect.poll(() => keys.served.lookups).toBe(1);
      release();
      await expect.poll(() => harness.redis.pttl(`th:tenant:${tenantId}`)).toBeGreaterThan(20_000);
    } finally {
      await keys.close();
    }
  });
});

describe("a key the edge has not cached", () => {
  it("is looked up once however many of its requests arrive together", async () => {
    const tenantId = `ten_${randomBytes(4).toString("hex")}`;
    const key = generateApiKey();
    // The lookup answers after 100 ms, so every request below misses before it answers.
    const keys = await gatewayWithSlowKeys(
      key,
      tenantId,
      () => new Promise((resolve) => setTimeout(resolve, 100)),
    );
    const cold = keys.gateway;
    try {
      const responses = await Promise.all(
        Array.from({ length: 40 }, () =>
          cold.http?.inject({
            method: "GET",
            url: "/v1/me",
            headers: { authorization: `Bearer ${key}` },
          }),
        ),
      );
      expect(responses.map((response) => response?.statusCode)).toEqual(Array(40).fill(200));
      expect(responses.every((response) => response?.json().tenant_id === tenantId)).toBe(true);
      expect(keys.served.lookups).toBe(1);
    } finally {
      await keys.close();
    }
  });
});
