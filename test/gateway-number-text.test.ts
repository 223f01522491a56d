import { collectGarbage, inYoungGeneration } from "@th/db/testing";
import { describe, expect, it } from "vitest";
import { wholeNumberText } from "../services/gateway/src/edge/number-text.ts";

// The remaining count differs on every response. Its text must die young: a text V8's
// number-string cache holds survives young collections (the cache lives in the old generation)
// and is promoted, so every response would leave garbage for a mark-compact (see number-text.ts).
// The heap probe is the database package's testing tool; the gateway declares no database
// (decision 0241), so this case lives here.

/** A whole number no other code in this process is likely to have turned into text. */
function freshNumber(): number {
  return 900_000_000 + Math.floor(Math.random() * 90_000_000);
}

describe("gateway whole-number text", () => {
  it("builds a fresh young text each time, where String() hands back the cached one it promoted", () => {
    // A full collection first: one still marking could finish inside a young collection below,
    // and a full collection empties the cache.
    collectGarbage("major");
    const cached = freshNumber();
    const figured = cached + 1;
    // Twice each: the cache's first collision only grows it, without keeping that call's text.
    for (let call = 0; call < 2; call++) {
      String(cached);
      wholeNumberText(figured);
    }
    // Two young collections promote whatever survived both; nothing here holds either text.
    collectGarbage("minor");
    collectGarbage("minor");
    // The probe tells the two apart: String() of the same number is the text its cache kept,
    // now in the old generation.
    expect(inYoungGeneration(String(cached))).toBe(false);
    expect(inYoungGeneration(wholeNumberText(figured))).toBe(true);
  });
});
