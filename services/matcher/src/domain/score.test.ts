import { describe, expect, it } from "vitest";
import { roundScore, SCORE_DECIMALS, scoreSignals } from "./score.ts";

describe("scoreSignals: the fraction of the recipe's positive weight that fired", () => {
  it("scores 1 when the recipe weights no signal (nothing to fall short of)", () => {
    expect(scoreSignals({}, ["absentee_owner"])).toEqual({
      score: 1,
      contributions: [],
      signals_fired: [],
    });
  });

  it("scores 0 when none of the recipe's signals fired", () => {
    expect(scoreSignals({ absentee_owner: 0.5, high_equity: 0.5 }, [])).toEqual({
      score: 0,
      contributions: [],
      signals_fired: [],
    });
  });

  it("scores 1 when every weighted signal fired", () => {
    const result = scoreSignals({ absentee_owner: 0.3, high_equity: 0.5, long_term_owner: 0.2 }, [
      "long_term_owner",
      "high_equity",
      "absentee_owner",
    ]);
    expect(result.score).toBe(1);
    expect(result.signals_fired).toEqual(["high_equity", "absentee_owner", "long_term_owner"]);
  });

  it("divides the fired weights by the total positive weight", () => {
    // 0.3 + 0.5 fired out of 0.3 + 0.5 + 0.2 = 0.8
    expect(
      scoreSignals({ absentee_owner: 0.3, high_equity: 0.5, long_term_owner: 0.2 }, [
        "absentee_owner",
        "high_equity",
      ]),
    ).toEqual({
      score: 0.8,
      contributions: [
        { signal: "high_equity", weight: 0.5, contribution: 0.5 },
        { signal: "absentee_owner", weight: 0.3, contribution: 0.3 },
      ],
      signals_fired: ["high_equity", "absentee_owner"],
    });
  });

  it("treats weights as relative: scaling every weight changes nothing", () => {
    const small = scoreSignals({ absentee_owner: 0.1, high_equity: 0.3 }, ["high_equity"]);
    const large = scoreSignals({ absentee_owner: 0.25, high_equity: 0.75 }, ["high_equity"]);
    expect(small.score).toBe(0.75);
    expect(large.score).toBe(0.75);
  });

  it("rounds the score and each contribution to 4 decimals", () => {
    const weights = { absentee_owner: 1, high_equity: 1, vacant_land: 1 };
    expect(scoreSignals(weights, ["absentee_owner"]).score).toBe(0.3333);
    const two = scoreSignals(weights, ["absentee_owner", "high_equity"]);
    expect(two.score).toBe(0.6667);
    // Contributions are rounded one by one, so they can sum to a hair off the score.
    expect(two.contributions.map((entry) => entry.contribution)).toEqual([0.3333, 0.3333]);
  });

  it("subtracts penalties (negative weights) without adding them to the total", () => {
    // (0.6 + 0.4 - 0.25) / (0.6 + 0.4) = 0.75
    expect(
      scoreSignals({ absentee_owner: 0.6, high_equity: 0.4, corporate_owner: -0.25 }, [
        "absentee_owner",
        "high_equity",
        "corporate_owner",
      ]),
    ).toEqual({
      score: 0.75,
      contributions: [
        { signal: "absentee_owner", weight: 0.6, contribution: 0.6 },
        { signal: "high_equity", weight: 0.4, contribution: 0.4 },
        { signal: "corporate_owner", weight: -0.25, contribution: -0.25 },
      ],
      signals_fired: ["absentee_owner", "high_equity", "corporate_owner"],
    });
  });

  it("clamps a score pulled below 0 by penalties to 0, keeping the contributions", () => {
    const weights = { high_equity: 0.5, corporate_owner: -0.8 };
    const penaltyOnly = scoreSignals(weights, ["corporate_owner"]);
    expect(penaltyOnly.score).toBe(0);
    expect(penaltyOnly.contributions).toEqual([
      { signal: "corporate_owner", weight: -0.8, contribution: -1.6 },
    ]);
    // (0.5 - 0.8) / 0.5 = -0.6 -> 0
    expect(scoreSignals(weights, ["high_equity", "corporate_owner"]).score).toBe(0);
    expect(scoreSignals(weights, ["high_equity"]).score).toBe(1);
  });

  it("never exceeds 1, whatever floating-point sums do", () => {
    const weights = { absentee_owner: 0.1, high_equity: 0.2, vacant_land: 0.3, recent_sale: 0.4 };
    const all = scoreSignals(weights, Object.keys(weights));
    expect(all.score).toBe(1);
  });

  it("ignores fired signals the recipe does not mention, and duplicates", () => {
    expect(
      scoreSignals({ high_equity: 1, vacant_land: 1 }, [
        "high_equity",
        "high_equity",
        "corporate_owner",
        "some_future_signal",
      ]),
    ).toEqual({
      score: 0.5,
      contributions: [{ signal: "high_equity", weight: 1, contribution: 0.5 }],
      signals_fired: ["high_equity"],
    });
  });

  it("reports a tracked zero-weight signal without moving the score", () => {
    expect(
      scoreSignals({ vacant_land: 0, high_equity: 1 }, ["vacant_land", "high_equity"]),
    ).toEqual({
      score: 1,
      contributions: [
        { signal: "high_equity", weight: 1, contribution: 1 },
        { signal: "vacant_land", weight: 0, contribution: 0 },
      ],
      signals_fired: ["high_equity", "vacant_land"],
    });
  });

  it("orders equal contributions by signal name", () => {
    const result = scoreSignals({ vacant_land: 0.5, absentee_owner: 0.5 }, [
      "vacant_land",
      "absentee_owner",
    ]);
    expect(result.signals_fired).toEqual(["absentee_owner", "vacant_land"]);
  });

  it("is deterministic whatever order weights and signals arrive in", () => {
    const weights = { absentee_owner: 0.1, high_equity: 0.7, vacant_land: 0.2, recent_sale: 0.3 };
    const reversed = Object.fromEntries(Object.entries(weights).reverse());
    const fired = ["recent_sale", "absentee_owner", "vacant_land"];
    const first = scoreSignals(weights, fired);
    const second = scoreSignals(reversed, [...fired].reverse());
    expect(second).toStrictEqual(first);
    expect(Object.is(first.score, second.score)).toBe(true);
  });
});

describe("roundScore: half away from zero at 4 decimals", () => {
  it("uses 4 decimals", () => {
    expect(SCORE_DECIMALS).toBe(4);
    expect(roundScore(2 / 3)).toBe(0.6667);
    expect(roundScore(0.123_44)).toBe(0.1234);
  });

  it("rounds decimal halves the way they read, despite binary representation", () => {
    expect(roundScore(0.123_45)).toBe(0.1235);
    expect(roundScore(0.000_05)).toBe(0.0001);
    expect(roundScore(0.999_95)).toBe(1);
    expect(roundScore(1.005)).toBe(1.005);
  });

  it("rounds negative halves away from zero and never returns -0", () => {
    expect(roundScore(-0.000_05)).toBe(-0.0001);
    expect(roundScore(-0.123_45)).toBe(-0.1235);
    expect(Object.is(roundScore(-0.000_01), 0)).toBe(true);
    expect(Object.is(roundScore(-0), 0)).toBe(true);
  });
});
