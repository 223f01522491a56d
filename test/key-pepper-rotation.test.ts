// Rotating the API-key pepper (decision 0345), end to end through the gateway and the keys
// service on real Postgres and Redis: keys issued under pepper version 1 keep working once
// version 2 is current, and move to it when next used; a key revoked after moving stays revoked
// whatever its old hash still says; a key whose pepper is removed stops working.
import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import { hashApiKey } from "@th/api-keys";
import { DEV_SECRETS } from "@th/config";
import { buildApp as buildGateway } from "@th/gateway/app";
import { readConfig as readGatewayConfig } from "@th/gateway/config";
import { buildApp as buildKeys } from "@th/keys/app";
import { readConfig as readKeysConfig } from "@th/keys/config";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";

const V1 = DEV_SECRETS.KEY_PEPPER;
const V2 = randomBytes(32).toString("hex");
const bytes = (hex: string) => Buffer.from(hex, "hex");

let stack: EdgeStack;
const closers: (() => Promise<unknown>)[] = [];
let ips = 0;

beforeAll(async () => {
  stack = await startEdgeStack();
}, 120_000);
afterAll(async () => {
  for (const close of closers.reverse()) {
    await close();
  }
  await stack.close();
});

type Gateway = Awaited<ReturnType<typeof buildGateway>>;

/** A keys service and a gateway, both on the stack's stores, with this KEY_PEPPER. */
async function deployWith(keyPepper: string): Promise<Gateway> {
  const keys = await buildKeys({
    ...stack.harness,
    config: {
      ...readKeysConfig({ KEY_PEPPER: keyPepper }),
      DATABASE_URL: stack.harness.db.url,
      KAFKA_BROKERS: stack.harness.brokers,
    },
    pool: stack.harness.db.poolFor("keys"),
  });
  const http = keys.http;
  if (!http) {
    throw new Error("the keys service has no HTTP app");
  }
  await http.listen({ port: 0, host: "127.0.0.1" });
  closers.push(async () => http.close());
  const port = (http.server.address() as AddressInfo).port;
  const gateway = await buildGateway({
    ...stack.harness,
    config: {
      ...stack.gatewayConfig,
      KEY_PEPPER: readGatewayConfig({ KEY_PEPPER: keyPepper }).KEY_PEPPER,
      KEYS_URL: `http://127.0.0.1:${port}`,
    },
  });
  await gateway.http?.ready();
  closers.push(async () => gateway.http?.close());
  return gateway;
}

async function trialVia(gateway: Gateway, tier: "operator" | "team" = "operator") {
  ips++;
  const response = await stack.request("POST", "/v1/public/trials", {
    via: gateway,
    ip: `198.51.100.${200 + ips}`,
    body: {
      tier,
      company: `Pepper ${ips}`,
      admin_email: `pepper${ips}@acme.test`,
      payment_method: "pm_card_visa",
    },
  });
  expect(response.statusCode, response.body).toBe(201);
  const body = response.json();
  return { key: body.api_key.secret as string, keyId: body.api_key.id as string };
}

const me = (gateway: Gateway, key: string) =>
  stack.request("GET", "/v1/me", { key, via: gateway, ip: "203.0.113.77" });

async function storedHash(keyId: string) {
  const { rows } = await stack.harness.db
    .poolFor("keys")
    .query<{ key_hash: string; pepper_version: number }>(
      "SELECT key_hash, pepper_version FROM api_keys WHERE id = $1",
      [keyId],
    );
  return rows[0];
}

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("rotating the API-key pepper", () => {
  it("keeps a key issued under pepper v1 working after v2 becomes current, moves it to v2, and voids a key whose pepper is removed", async () => {
    // Version 1: the single KEY_PEPPER the deployment always had.
    const used = await trialVia(stack.gateway);
    const idle = await trialVia(stack.gateway);
    expect((await me(stack.gateway, used.key)).statusCode).toBe(200);
    expect((await me(stack.gateway, idle.key)).statusCode).toBe(200);
    expect(await storedHash(used.keyId)).toEqual({
      key_hash: hashApiKey(used.key, bytes(V1)),
      pepper_version: 1,
    });

    // Version 2 current, version 1 still listed.
    const rotated = await deployWith(`2:${V2},1:${V1}`);
    expect((await me(rotated, used.key)).statusCode).toBe(200);
    const moved = await until("the key to move to pepper v2", async () => {
      const row = await storedHash(used.keyId);
      return row?.pepper_version === 2 ? row : undefined;
    });
    expect(moved.key_hash).toBe(hashApiKey(used.key, bytes(V2)));
    const v1Hash = hashApiKey(used.key, bytes(V1));
    await until("the edge to drop the old hash's record", async () =>
      (await stack.harness.redis.exists(`th:key:${v1Hash}`)) === 0 ? true : undefined,
    );
    expect((await me(rotated, used.key)).statusCode).toBe(200);
    const fresh = await trialVia(rotated);
    expect((await storedHash(fresh.keyId))?.pepper_version).toBe(2);

    // Version 1 removed: the key that never came back under v2 is void; v2 keys work.
    const removed = await deployWith(`2:${V2}`);
    const refused = await me(removed, idle.key);
    expect(refused.statusCode).toBe(401);
    expect(refused.json()).toMatchObject({ error: "unauthorized" });
    expect((await me(removed, used.key)).statusCode).toBe(200);
    expect((await me(removed, fresh.key)).statusCode).toBe(200);
  }, 60_000);

  it("keeps a moved key revoked, though its old hash was once cached as live and v1 is still listed", async () => {
    const rotated = await deployWith(`2:${V2},1:${V1}`);
    // Issued and cached at the edge under v1, then moved to v2 by its first use under v2.
    const victim = await trialVia(stack.gateway, "team");
    expect((await me(stack.gateway, victim.key)).statusCode).toBe(200);
    expect((await me(rotated, victim.key)).statusCode).toBe(200);
    await until("the key to move to pepper v2", async () =>
      (await storedHash(victim.keyId))?.pepper_version === 2 ? true : undefined,
    );
    // Its old hash's record comes back as live (a gateway still on v1 alone answered from it).
    await stack.harness.redis.hset(
      `th:key:${hashApiKey(victim.key, bytes(V1))}`,
      (await stack.harness.redis.hgetall(`th:key:${hashApiKey(victim.key, bytes(V2))}`)) as Record<
        string,
        string
      >,
    );

    const revoked = await stack.request("DELETE", `/v1/team/api-keys/${victim.keyId}`, {
      key: victim.key,
      via: rotated,
    });
    expect(revoked.statusCode, revoked.body).toBe(204);
    const after = await me(rotated, victim.key);
    expect(after.statusCode).toBe(401);
    expect(after.json().detail).toMatch(/revoked/);
  }, 60_000);
});
