// Recipes name signals from the shared catalogue in @th/api-schemas; the parcels service's own
// test holds its emitted names equal to that catalogue, so both sides meet in the package.
import { LEAD_SIGNAL_DESCRIPTIONS, LEAD_SIGNALS } from "@th/api-schemas";
import { parcelIngested } from "@th/contracts/samples";
import { describe, expect, it } from "vitest";

describe("signal catalogue", () => {
  it("covers the signals of the parcel.ingested sample", () => {
    for (const signal of parcelIngested.signals_fired) {
      expect(LEAD_SIGNALS as readonly string[]).toContain(signal);
    }
  });

  it("describes every signal", () => {
    expect(Object.keys(LEAD_SIGNAL_DESCRIPTIONS)).toEqual([...LEAD_SIGNALS]);
  });
});
