import { createTestHarness, signedInject, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { recordIngestFinished, recordIngestStarted } from "../db/ingest-runs.ts";
import { migrations } from "../db/migrations.ts";

let harness: TestHarness<Config>;
let app: Awaited<ReturnType<typeof buildApp>>;

beforeAll(async () => {
  harness = await createTestHarness({ config: readConfig({}), migrations: [migrations] });
  app = await buildApp(harness);
});

afterAll(async () => {
  await app.http?.close();
  await harness.close();
});

async function get(url: string) {
  if (!app.http) {
    throw new Error("no http app");
  }
  return app.http.inject(signedInject(app.http, "parcels", { method: "GET", url }));
}

describe("operator ingest runs", () => {
  it("lists the most recent ingest runs newest first, with their counts and unfinished runs", async () => {
    await recordIngestStarted(
      harness.pool,
      "ing_old",
      "NAL23F202501.csv",
      new Date("2026-03-01T08:00:00Z"),
    );
    await recordIngestFinished(harness.pool, "ing_old", {
      kind: "nal",
      finishedAt: new Date("2026-03-01T08:20:00Z"),
      read: 1200,
      new: 1000,
      changed: 150,
      unchanged: 40,
      rejected: 10,
    });
    await recordIngestStarted(
      harness.pool,
      "ing_mid",
      "NAL16F202501.csv",
      new Date("2026-03-02T08:00:00Z"),
    );
    await recordIngestStarted(
      harness.pool,
      "ing_new",
      "NAL06F202501.csv",
      new Date("2026-03-03T08:00:00Z"),
    );

    const response = await get("/internal/v1/operator/ingest-runs?limit=2");
    expect(response.statusCode).toBe(200);
    expect(response.json().ingest_runs.map((run: { ingest_id: string }) => run.ingest_id)).toEqual([
      "ing_new",
      "ing_mid",
    ]);

    const all = (await get("/internal/v1/operator/ingest-runs")).json().ingest_runs;
    expect(all[1]).toMatchObject({ ingest_id: "ing_mid", kind: "pending", finished_at: null });
    expect(all[2]).toEqual({
      ingest_id: "ing_old",
      source_file: "NAL23F202501.csv",
      kind: "nal",
      started_at: "2026-03-01T08:00:00.000Z",
      finished_at: "2026-03-01T08:20:00.000Z",
      rows_read: 1200,
      rows_new: 1000,
      rows_changed: 150,
      rows_unchanged: 40,
      rows_rejected: 10,
    });
  });

  it("refuses an unsigned call", async () => {
    const response = await app.http?.inject({
      method: "GET",
      url: "/internal/v1/operator/ingest-runs",
    });
    expect(response?.statusCode).toBe(401);
  });
});
