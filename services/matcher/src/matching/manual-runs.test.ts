import { parcelIngested } from "@th/contracts/samples";
import { describe, expect, it } from "vitest";
import type { RunRow } from "../db/manual-runs.ts";
import { compileRecipe, evaluateRecipe } from "../domain/evaluate.ts";
import { compilePredicate } from "../domain/predicate.ts";
import { rng, syntheticParcel, syntheticRecipe } from "../testing/synthetic.ts";
import { matchesOfPage, type RunTarget, toRun } from "./manual-runs.ts";

const created = new Date("2026-06-01T10:00:00.000Z");
const row: RunRow = {
  id: "run_1",
  tenant_id: "ten_1",
  watchlist_id: "wl_1",
  recipe_version: 2,
  status: "running",
  parcel_limit: 1000,
  parcels_total: 400,
  parcels_scanned: 100,
  matches_found: 3,
  error: null,
  created_at: created,
  started_at: created,
  finished_at: null,
  heartbeat_at: created,
};

describe("a manual run as the API shows it", () => {
  it("stays running while its worker reported within the last minute", () => {
    expect(toRun(row, created.getTime() + 60_000)).toMatchObject({
      status: "running",
      error: null,
    });
  });

  it("shows as failed, interrupted, once its worker has been quiet for over a minute", () => {
    expect(toRun(row, created.getTime() + 60_001)).toMatchObject({
      status: "failed",
      error: "interrupted: the matcher instance running it stopped",
    });
    expect(toRun({ ...row, status: "queued" }, created.getTime() + 60_001).status).toBe("failed");
  });

  it("keeps a finished run's outcome however old it is", () => {
    const done = { ...row, status: "succeeded" as const, finished_at: created };
    expect(toRun(done, created.getTime() + 86_400_000)).toMatchObject({
      status: "succeeded",
      finished_at: "2026-06-01T10:00:00.000Z",
    });
  });
});

describe("the matches of one page of a manual run", () => {
  const target: RunTarget = {
    id: "run_1",
    tenant_id: "ten_1",
    watchlist_id: "wl_1",
    recipe_version: 2,
    name: "Equity in Dade",
  };

  it("are exactly the parcels the recipe matches, as manual_run events of the run", () => {
    const random = rng(11);
    const compiled = compileRecipe(syntheticRecipe(random, { broad: true }));
    const recipe = { compiled, predicate: compilePredicate(compiled) };
    const parcels = Array.from({ length: 300 }, (_, index) => syntheticParcel(random, index));
    const expected = parcels.filter((parcel) => evaluateRecipe(compiled, parcel).matched);
    expect(expected.length).toBeGreaterThan(0);

    const matches = matchesOfPage(target, recipe, parcels, "2026-06-01T10:05:00.000Z");
    expect(matches.map((match) => match.event.match.folio)).toEqual(
      expected.map((parcel) => parcel.folio),
    );
    for (const match of matches) {
      expect(match.runId).toBe("run_1");
      expect(match.event).toMatchObject({
        tenant_id: "ten_1",
        watchlist: { id: "wl_1", name: "Equity in Dade" },
        recipe_version: 2,
        trigger: "manual_run",
        ingest_id: null,
        occurred_at: "2026-06-01T10:05:00.000Z",
      });
    }
  });

  it("skip a parcel that cannot be judged instead of failing the run", () => {
    const compiled = compileRecipe({ filters: { counties: [23] }, signals: { high_equity: 1 } });
    const recipe = { compiled, predicate: compilePredicate(compiled) };
    const broken = { ...parcelIngested, observed_at: "yesterday" };
    expect(matchesOfPage(target, recipe, [broken], "2026-06-01T10:05:00.000Z")).toEqual([]);
  });
});
