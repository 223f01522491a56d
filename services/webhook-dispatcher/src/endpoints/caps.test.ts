import { createPool, type Pool } from "@th/db";
import { createTestDatabase, type TestDatabase } from "@th/db/testing";
import { ApiError } from "@th/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_SECRET_KEYS } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import { createSecretStore } from "../delivery/secret-store.ts";
import { EVENT_TYPE } from "../domain/payload.ts";
import { createSecretBox } from "../domain/secrets.ts";
import { createEndpointService, type EndpointService } from "./service.ts";

let db: TestDatabase;
/** As many connections as the burst, so every subscribe of it is in its own transaction at once. */
let pool: Pool;
let endpoints: EndpointService;
const LIMITS = { perWatchlist: 5, perTenant: 8 };

beforeAll(async () => {
  db = await createTestDatabase([migrations]);
  pool = createPool({ url: db.url, schema: migrations.schema, max: 24 });
  const now = () => Date.now();
  endpoints = createEndpointService({
    pool,
    secrets: createSecretStore({ pool, box: createSecretBox(DEV_SECRET_KEYS), now }),
    watchlists: { owns: async () => true },
    // A literal loopback URL: no name to resolve, so the burst meets only at the database.
    policy: { allowLoopback: true },
    limits: LIMITS,
    now,
    wake: () => {},
  });
});
afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

const caller = (tenantId: string) => ({ tenantId, memberId: "mb_1", keyId: "key_1" });
const subscribe = (tenantId: string, watchlistId: string) =>
  endpoints.create(caller(tenantId), watchlistId, {
    url: "http://127.0.0.1:9/hooks",
    events: [EVENT_TYPE],
  });

async function stored(tenantId: string) {
  const { rows } = await pool.query<{ endpoints: number; secrets: number }>(
    `SELECT count(DISTINCT e.id)::int AS endpoints, count(s.id)::int AS secrets
       FROM endpoints e LEFT JOIN endpoint_secrets s ON s.endpoint_id = e.id
      WHERE e.tenant_id = $1 AND e.deleted_at IS NULL`,
    [tenantId],
  );
  return rows[0];
}

/** Fires every subscribe at once and sorts the answers. */
async function burst(calls: (() => Promise<unknown>)[]) {
  const settled = await Promise.allSettled(calls.map((call) => call()));
  const refused = settled
    .filter((result) => result.status === "rejected")
    .map((result) => (result as PromiseRejectedResult).reason);
  return { created: settled.length - refused.length, refused };
}

describe("endpoint caps", () => {
  it("hold when an attacker fires 20 subscribes at one watchlist at once: five are created, the rest answer 409 conflict and create nothing", async () => {
    const { created, refused } = await burst(
      Array.from({ length: 20 }, () => () => subscribe("tn_burst", "wl_one")),
    );
    expect(created).toBe(LIMITS.perWatchlist);
    expect(refused).toHaveLength(15);
    for (const error of refused) {
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).status).toBe(409);
      expect((error as ApiError).body()).toEqual({
        error: "conflict",
        detail: expect.stringMatching(/watchlist wl_one already has 5 webhook endpoints/),
      });
    }
    // Nothing half-made: one secret per endpoint, none for a refused one.
    expect(await stored("tn_burst")).toEqual({ endpoints: 5, secrets: 5 });
  });

  it("hold across watchlists: 20 subscribes on 20 watchlists at once create the tenant's cap and no more", async () => {
    const { created, refused } = await burst(
      Array.from({ length: 20 }, (_, i) => () => subscribe("tn_spread", `wl_${i}`)),
    );
    expect(created).toBe(LIMITS.perTenant);
    expect(refused.map((error) => (error as ApiError).code)).toEqual(
      new Array(20 - LIMITS.perTenant).fill("conflict"),
    );
    expect(await stored("tn_spread")).toEqual({ endpoints: 8, secrets: 8 });
  });

  it("count only live endpoints of the same tenant: a removed one frees its place, another tenant is not counted", async () => {
    const first = await subscribe("tn_turns", "wl_t");
    for (let i = 1; i < LIMITS.perWatchlist; i++) {
      await subscribe("tn_turns", "wl_t");
    }
    await expect(subscribe("tn_turns", "wl_t")).rejects.toMatchObject({ code: "conflict" });
    // Another tenant's watchlist of the same id has its own room.
    await expect(subscribe("tn_other", "wl_t")).resolves.toMatchObject({ watchlist_id: "wl_t" });
    await endpoints.remove("tn_turns", "wl_t", first.id);
    await expect(subscribe("tn_turns", "wl_t")).resolves.toMatchObject({ watchlist_id: "wl_t" });
  });
});
