// Manual runs per tenant: a tenant that fires many runs at once, each on a different watchlist
// (so the one-run-per-watchlist rule never bites), gets at most MANUAL_RUNS_PER_TENANT of them
// started; the rest answer 409 in the error shape and record nothing.
import { randomBytes } from "node:crypto";
import { createWatchlist, runWatchlist } from "@th/api-schemas";
import { createPool, type Pool, type PoolClient } from "@th/db";
import { type HttpApp, INTERNAL_HEADERS } from "@th/service-kit";
import { createTestHarness, signedInject, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";

let harness: TestHarness<Config>;
let app: Awaited<ReturnType<typeof buildApp>>;
let locker: Pool;

beforeAll(async () => {
  harness = await createTestHarness({
    config: readConfig({ MANUAL_RUNS_PER_TENANT: "2" }),
    migrations: [migrations],
  });
  app = await buildApp(harness, { projection: false });
  locker = createPool({ url: harness.db.url, schema: "matcher", max: 1 });
});
afterAll(async () => {
  await app.runs.settle();
  await app.http?.close();
  await locker.end();
  await harness.close();
});

function callerHeaders(tenantId: string) {
  return {
    [INTERNAL_HEADERS.tenant]: tenantId,
    [INTERNAL_HEADERS.member]: "mem_test",
    [INTERNAL_HEADERS.key]: "key_test",
  };
}

function httpOf(built: { http?: HttpApp }): HttpApp {
  if (!built.http) {
    throw new Error("no http app");
  }
  return built.http;
}

async function watchlistOf(tenantId: string, index: number): Promise<string> {
  const response = await httpOf(app).inject(
    signedInject(httpOf(app), "matcher", {
      method: "POST",
      url: createWatchlist.internalPath,
      headers: callerHeaders(tenantId),
      body: {
        name: `List ${index}`,
        recipe: { filters: { counties: [23] }, signals: { high_equity: 1 } },
      },
    }),
  );
  expect(response?.statusCode, response?.body).toBe(201);
  return response?.json().id;
}

function startRun(tenantId: string, watchlistId: string) {
  return httpOf(app).inject(
    signedInject(httpOf(app), "matcher", {
      method: "POST",
      url: runWatchlist.internalPath.replace(":id", watchlistId),
      headers: callerHeaders(tenantId),
    }),
  );
}

/**
 * Holds the parcel projection locked, so every run started meanwhile stays queued (in flight)
 * at its first read of the projection, as a run over 50,000 parcels would stay running.
 */
async function withRunsHeld<T>(work: () => Promise<T>): Promise<T> {
  const client: PoolClient = await locker.connect();
  try {
    await client.query("BEGIN");
    await client.query("LOCK TABLE parcel_projection IN ACCESS EXCLUSIVE MODE");
    return await work();
  } finally {
    await client.query("ROLLBACK");
    client.release();
  }
}

async function runsRecorded(tenantId: string): Promise<number> {
  const { rows } = await harness.pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM manual_runs WHERE tenant_id = $1",
    [tenantId],
  );
  return rows[0]?.n ?? 0;
}

describe("manual runs per tenant (POST /v1/watchlists/{id}/run)", () => {
  it("a burst of 10 runs on 10 watchlists at once starts 2 and answers the other 8 with 409 conflict, recording nothing", async () => {
    const tenant = `ten_${randomBytes(4).toString("hex")}`;
    const lists: string[] = [];
    for (let index = 0; index < 10; index++) {
      lists.push(await watchlistOf(tenant, index));
    }

    const answers = await withRunsHeld(async () => {
      const burst = await Promise.all(lists.map((id) => startRun(tenant, id)));
      expect(await runsRecorded(tenant)).toBe(2);
      return burst;
    });

    const statuses = answers.map((answer) => answer?.statusCode).sort();
    expect(statuses).toEqual([202, 202, 409, 409, 409, 409, 409, 409, 409, 409]);
    for (const refused of answers.filter((answer) => answer?.statusCode === 409)) {
      expect(refused?.json()).toMatchObject({
        error: "conflict",
        detail: expect.stringContaining("2 manual runs in progress"),
      });
    }
    await app.runs.settle();
    expect(await runsRecorded(tenant)).toBe(2);
  });

  it("counts only the tenant's own runs: another tenant starts while the first is at its limit", async () => {
    const busy = `ten_${randomBytes(4).toString("hex")}`;
    const other = `ten_${randomBytes(4).toString("hex")}`;
    const busyLists = [await watchlistOf(busy, 0), await watchlistOf(busy, 1)];
    const busyThird = await watchlistOf(busy, 2);
    const otherList = await watchlistOf(other, 0);

    await withRunsHeld(async () => {
      for (const id of busyLists) {
        expect((await startRun(busy, id))?.statusCode).toBe(202);
      }
      expect((await startRun(busy, busyThird))?.statusCode).toBe(409);
      expect((await startRun(other, otherList))?.statusCode).toBe(202);
    });
  });

  it("frees the slot when a run finishes: the next start is accepted", async () => {
    const tenant = `ten_${randomBytes(4).toString("hex")}`;
    const lists = [
      await watchlistOf(tenant, 0),
      await watchlistOf(tenant, 1),
      await watchlistOf(tenant, 2),
    ];
    for (const id of lists.slice(0, 2)) {
      expect((await startRun(tenant, id))?.statusCode).toBe(202);
    }
    await app.runs.settle();
    expect((await startRun(tenant, lists[2] as string))?.statusCode).toBe(202);
  });
});
