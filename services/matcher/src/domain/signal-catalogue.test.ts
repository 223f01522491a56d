// The recipe catalogue and the names the parcels service emits must be the same list: a recipe
// naming a signal that never fires would wait forever, and a fired signal missing from the
// catalogue could never be weighted. Services share no runtime code, so this test reads the
// parcels service's catalogue directly to catch drift in either direction at build time.
import { LEAD_SIGNAL_DESCRIPTIONS, LEAD_SIGNALS } from "@th/api-schemas";
import { parcelIngested } from "@th/contracts/samples";
import { describe, expect, it } from "vitest";
import { SIGNAL_NAMES } from "../../../parcels/src/domain/signals.ts";

describe("signal catalogue", () => {
  it("is exactly the list the parcels service emits, in its order", () => {
    expect([...LEAD_SIGNALS]).toEqual([...SIGNAL_NAMES]);
  });

  it("covers the signals of the parcel.ingested sample", () => {
    for (const signal of parcelIngested.signals_fired) {
      expect(LEAD_SIGNALS as readonly string[]).toContain(signal);
    }
  });

  it("describes every signal", () => {
    expect(Object.keys(LEAD_SIGNAL_DESCRIPTIONS)).toEqual([...LEAD_SIGNALS]);
  });
});
