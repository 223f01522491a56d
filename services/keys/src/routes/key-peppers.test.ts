// The keys service under a rotated pepper (decision 0345): new keys are hashed under the current
// version and record it; a key under an older listed version is found and moved to the current
// one, the hash recomputed here from the key; a version left out of KEY_PEPPER finds nothing.
import { randomBytes } from "node:crypto";
import { hashApiKey } from "@th/api-keys";
import { DEV_SECRETS } from "@th/config";
import { contracts } from "@th/contracts";
import type { HttpApp } from "@th/service-kit";
import { createTestHarness, signedInject, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";

const V1 = DEV_SECRETS.KEY_PEPPER;
const V2 = randomBytes(32).toString("hex");
const bytes = (hex: string) => Buffer.from(hex, "hex");

let harness: TestHarness<Config>;
const apps: Awaited<ReturnType<typeof buildApp>>[] = [];

beforeAll(async () => {
  harness = await createTestHarness({
    config: readConfig({}),
    migrations: [migrations],
    topics: [contracts.tenantChanged, contracts.keyIssued, contracts.keyRevoked],
  });
});
afterAll(async () => {
  for (const app of apps) {
    await app.http?.close();
  }
  await harness.close();
});

/** The keys service on the test's database with this KEY_PEPPER. */
async function keysWith(keyPepper: string): Promise<HttpApp> {
  const app = await buildApp({
    ...harness,
    config: { ...harness.config, KEY_PEPPER: readConfig({ KEY_PEPPER: keyPepper }).KEY_PEPPER },
  });
  apps.push(app);
  if (!app.http) {
    throw new Error("no http app");
  }
  return app.http;
}

function call(http: HttpApp, method: "GET" | "POST", url: string, body?: object) {
  return http.inject(signedInject(http, "keys", { method, url, headers: {}, body }));
}

async function trialOn(http: HttpApp) {
  const response = await call(http, "POST", "/internal/v1/trials", {
    tier: "team",
    company: "Acme",
    admin_email: `owner-${randomBytes(4).toString("hex")}@acme.test`,
    payment_method: "pm_card_visa",
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().api_key as { id: string; secret: string };
}

async function stored(keyId: string) {
  const { rows } = await harness.pool.query<{ key_hash: string; pepper_version: number }>(
    "SELECT key_hash, pepper_version FROM api_keys WHERE id = $1",
    [keyId],
  );
  return rows[0];
}

const lookup = (http: HttpApp, hash: string) =>
  call(http, "GET", `/internal/v1/keys/by-hash/${hash}`);

describe("API-key hashes under a versioned pepper", () => {
  it("records version 1 for a key hashed under the single KEY_PEPPER, and the current version for new keys", async () => {
    const single = await keysWith(V1);
    const old = await trialOn(single);
    expect(await stored(old.id)).toEqual({
      key_hash: hashApiKey(old.secret, bytes(V1)),
      pepper_version: 1,
    });
    const rotated = await keysWith(`2:${V2},1:${V1}`);
    const fresh = await trialOn(rotated);
    expect(await stored(fresh.id)).toEqual({
      key_hash: hashApiKey(fresh.secret, bytes(V2)),
      pepper_version: 2,
    });
  });

  it("finds a v1 key while v1 is listed, moves it to v2 from the key itself, and then knows it only by its v2 hash", async () => {
    const old = await trialOn(await keysWith(V1));
    const rotated = await keysWith(`2:${V2},1:${V1}`);
    const v1Hash = hashApiKey(old.secret, bytes(V1));
    const v2Hash = hashApiKey(old.secret, bytes(V2));
    expect((await lookup(rotated, v1Hash)).statusCode).toBe(200);

    const moved = await call(rotated, "POST", "/internal/v1/keys/rehash", {
      key: old.secret,
      pepper_version: 2,
    });
    expect(moved.statusCode, moved.body).toBe(200);
    expect(moved.json()).toEqual({ key_hash: v2Hash, pepper_version: 2 });
    expect(await stored(old.id)).toEqual({ key_hash: v2Hash, pepper_version: 2 });
    expect((await lookup(rotated, v1Hash)).statusCode).toBe(404);
    expect((await lookup(rotated, v2Hash)).json()).toMatchObject({ key_id: old.id });
    // Already current: nothing to move.
    const again = await call(rotated, "POST", "/internal/v1/keys/rehash", {
      key: old.secret,
      pepper_version: 2,
    });
    expect(again.statusCode).toBe(404);
  });

  it("moves nothing for a caller that holds another version current (a rotation mid-rollout)", async () => {
    const old = await trialOn(await keysWith(V1));
    const rotated = await keysWith(`2:${V2},1:${V1}`);
    const answer = await call(rotated, "POST", "/internal/v1/keys/rehash", {
      key: old.secret,
      pepper_version: 1,
    });
    expect(answer.statusCode).toBe(409);
    expect(answer.json()).toMatchObject({ error: "conflict" });
    expect((await stored(old.id))?.pepper_version).toBe(1);
  });

  it("answers 404 for a key nobody holds, and refuses a body that is not a key", async () => {
    const rotated = await keysWith(`2:${V2},1:${V1}`);
    const { secret } = await trialOn(rotated);
    const unknown = `${secret.slice(0, 8)}${"Q".repeat(38)}`;
    const answer = await call(rotated, "POST", "/internal/v1/keys/rehash", {
      key: unknown,
      pepper_version: 2,
    });
    expect(answer.statusCode).toBe(404);
    const malformed = await call(rotated, "POST", "/internal/v1/keys/rehash", {
      key: "not a key",
      pepper_version: 2,
    });
    expect(malformed.statusCode).toBe(400);
  });

  it("finds nothing under a version left out of KEY_PEPPER, though the row still holds that hash", async () => {
    const old = await trialOn(await keysWith(V1));
    const v1Hash = hashApiKey(old.secret, bytes(V1));
    const removed = await keysWith(`2:${V2}`);
    expect((await stored(old.id))?.key_hash).toBe(v1Hash);
    expect((await lookup(removed, v1Hash)).statusCode).toBe(404);
    const rehash = await call(removed, "POST", "/internal/v1/keys/rehash", {
      key: old.secret,
      pepper_version: 2,
    });
    expect(rehash.statusCode).toBe(404);
    expect((await stored(old.id))?.pepper_version).toBe(1);
  });
});
