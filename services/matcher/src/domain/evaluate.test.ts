import type { Recipe } from "@th/api-schemas";
import type { ParcelIngested } from "@th/contracts";
import { parcelIngested, parcelIngestedSparse } from "@th/contracts/samples";
import { describe, expect, it } from "vitest";
import { compileRecipe, evaluateRecipe, saleAgeYears } from "./evaluate.ts";

// The sample: Miami-Dade (23) single-family home at 1388 NW 7TH ST, MIAMI 33125, just value
// 412,300, est. equity 301,844 (ratio 0.7321), built 1954, not homesteaded, owner mailing from
// Connecticut, last sale a $10 quit-claim in June 2019, last arm's-length sale September 2011,
// observed 2025-10-14, signals absentee_owner, out_of_state_owner, long_term_owner, high_equity.
function parcelWith(overrides: Partial<ParcelIngested>): ParcelIngested {
  return { ...parcelIngested, ...overrides };
}

function failedFilterNames(recipe: Recipe, parcel: ParcelIngested): string[] {
  return evaluateRecipe(recipe, parcel).failed_filters.map((failed) => failed.filter);
}

describe("evaluateRecipe: a whole recipe", () => {
  const absenteeHighEquityMiamiDade: Recipe = {
    filters: {
      counties: [23],
      use_classes: ["residential"],
      homestead: false,
      equity_ratio: { min: 0.5 },
    },
    signals: { absentee_owner: 0.4, high_equity: 0.4, long_term_owner: 0.2, vacant_land: 0.5 },
    min_score: 0.6,
  };

  it("matches the sample parcel and explains the score", () => {
    // (0.4 + 0.4 + 0.2) / (0.4 + 0.4 + 0.2 + 0.5) = 1 / 1.5 = 0.6667
    expect(evaluateRecipe(absenteeHighEquityMiamiDade, parcelIngested)).toEqual({
      matched: true,
      score: 0.6667,
      signals_fired: ["absentee_owner", "high_equity", "long_term_owner"],
      contributions: [
        { signal: "absentee_owner", weight: 0.4, contribution: 0.2667 },
        { signal: "high_equity", weight: 0.4, contribution: 0.2667 },
        { signal: "long_term_owner", weight: 0.2, contribution: 0.1333 },
      ],
      failed_filters: [],
    });
  });

  it("lists every failed rule, not just the first, and still reports the score", () => {
    const parcel = parcelWith({
      county_no: 16,
      homestead: true,
      signals_fired: ["high_equity"],
    });
    const result = evaluateRecipe(absenteeHighEquityMiamiDade, parcel);
    expect(result.matched).toBe(false);
    expect(result.score).toBe(0.2667);
    expect(result.failed_filters).toEqual([
      { filter: "counties", reason: "not_met", expected: "one of 23", actual: 16 },
      { filter: "homestead", reason: "not_met", expected: "false", actual: true },
      { filter: "min_score", reason: "not_met", expected: ">= 0.6", actual: 0.2667 },
    ]);
  });

  it("gives the same result for a compiled recipe reused across parcels", () => {
    const compiled = compileRecipe(absenteeHighEquityMiamiDade);
    for (const parcel of [parcelIngested, parcelIngestedSparse]) {
      expect(evaluateRecipe(compiled, parcel)).toEqual(
        evaluateRecipe(absenteeHighEquityMiamiDade, parcel),
      );
    }
  });

  it("matches every parcel, scoring 1, with an explicitly allowed match-all recipe", () => {
    const result = evaluateRecipe({ allow_match_all: true }, parcelIngestedSparse);
    expect(result).toEqual({
      matched: true,
      score: 1,
      signals_fired: [],
      contributions: [],
      failed_filters: [],
    });
  });
});

describe("list filters", () => {
  it("counties", () => {
    expect(failedFilterNames({ filters: { counties: [16, 23] } }, parcelIngested)).toEqual([]);
    expect(
      evaluateRecipe({ filters: { counties: [16, 58] } }, parcelIngested).failed_filters,
    ).toEqual([{ filter: "counties", reason: "not_met", expected: "one of 16, 58", actual: 23 }]);
  });

  it("cities, ignoring case and extra spaces on either side", () => {
    expect(failedFilterNames({ filters: { cities: ["miami"] } }, parcelIngested)).toEqual([]);
    const spaced = parcelWith({ situs: { ...parcelIngested.situs, city: " north  miami " } });
    expect(failedFilterNames({ filters: { cities: ["North Miami"] } }, spaced)).toEqual([]);
    expect(failedFilterNames({ filters: { cities: ["Hialeah"] } }, parcelIngested)).toEqual([
      "cities",
    ]);
  });

  it("zip codes, on the first five digits of the situs ZIP", () => {
    expect(failedFilterNames({ filters: { zip_codes: ["33125"] } }, parcelIngested)).toEqual([]);
    const zipPlus4 = parcelWith({ situs: { ...parcelIngested.situs, zip: "33125-4410" } });
    expect(failedFilterNames({ filters: { zip_codes: ["33125"] } }, zipPlus4)).toEqual([]);
    expect(failedFilterNames({ filters: { zip_codes: ["33126"] } }, parcelIngested)).toEqual([
      "zip_codes",
    ]);
  });

  it("use classes and DOR land-use codes", () => {
    expect(
      failedFilterNames({ filters: { use_classes: ["residential"] } }, parcelIngested),
    ).toEqual([]);
    expect(failedFilterNames({ filters: { use_classes: ["commercial"] } }, parcelIngested)).toEqual(
      ["use_classes"],
    );
    expect(
      failedFilterNames({ filters: { dor_use_codes: ["000", "001"] } }, parcelIngested),
    ).toEqual([]);
    const unpadded = parcelWith({ land_use: { ...parcelIngested.land_use, dor_uc: "1" } });
    expect(failedFilterNames({ filters: { dor_use_codes: ["001"] } }, unpadded)).toEqual([]);
    expect(failedFilterNames({ filters: { dor_use_codes: ["000"] } }, parcelIngested)).toEqual([
      "dor_use_codes",
    ]);
  });
});

describe("range filters are inclusive at both ends", () => {
  const cases = [
    { filter: "just_value", value: 412_300 },
    { filter: "est_equity", value: 301_844 },
    { filter: "equity_ratio", value: 0.7321 },
    { filter: "year_built", value: 1954 },
    { filter: "living_area_sqft", value: 1_420 },
    { filter: "land_sqft", value: 5_750 },
  ] as const;

  for (const { filter, value } of cases) {
    it(filter, () => {
      const step = Number.isInteger(value) ? 1 : 0.0001;
      const at = (range: { min?: number; max?: number }) =>
        failedFilterNames({ filters: { [filter]: range } }, parcelIngested);
      expect(at({ min: value })).toEqual([]);
      expect(at({ max: value })).toEqual([]);
      expect(at({ min: value, max: value })).toEqual([]);
      expect(at({ min: value + step })).toEqual([filter]);
      expect(at({ max: value - step })).toEqual([filter]);
    });
  }

  it("reports the bound and the value that missed it", () => {
    expect(
      evaluateRecipe({ filters: { just_value: { min: 100_000, max: 400_000 } } }, parcelIngested)
        .failed_filters,
    ).toEqual([
      {
        filter: "just_value",
        reason: "not_met",
        expected: ">= 100000 and <= 400000",
        actual: 412_300,
      },
    ]);
  });

  it("accepts negative equity within a negative range", () => {
    const underwater = parcelWith({
      valuation: { ...parcelIngested.valuation, est_equity: -25_000, equity_ratio: -0.0606 },
    });
    expect(
      failedFilterNames(
        { filters: { est_equity: { max: 0 }, equity_ratio: { max: 0 } } },
        underwater,
      ),
    ).toEqual([]);
  });
});

describe("last sale age, in whole months from the sale to the observation", () => {
  it("measures months, not calendar years", () => {
    // Observed October 2025; sold June 2019 -> 76 months; September 2011 -> 169 months.
    expect(saleAgeYears(parcelIngested.last_sale, parcelIngested.observed_at)).toBeCloseTo(
      76 / 12,
      10,
    );
    expect(
      saleAgeYears(parcelIngested.last_qualified_sale, parcelIngested.observed_at),
    ).toBeCloseTo(169 / 12, 10);
  });

  it("is inclusive: a sale exactly 15 years before the observation month is 15 years old", () => {
    const sale = { price: 150_000, year: 2010, month: 10, qualification_code: "01" };
    const exact = parcelWith({ last_sale: sale });
    expect(failedFilterNames({ filters: { last_sale_age_years: { min: 15 } } }, exact)).toEqual([]);
    const oneMonthLater = parcelWith({ last_sale: { ...sale, month: 11 } });
    expect(
      failedFilterNames({ filters: { last_sale_age_years: { min: 15 } } }, oneMonthLater),
    ).toEqual(["last_sale_age_years"]);
  });

  it("uses the last sale of any kind or the last arm's-length sale, as the filter says", () => {
    // Any sale: the 2019 quit-claim (6.33 years); arm's length: 2011 (14.08 years).
    expect(
      failedFilterNames({ filters: { last_sale_age_years: { min: 10 } } }, parcelIngested),
    ).toEqual(["last_sale_age_years"]);
    expect(
      failedFilterNames(
        { filters: { last_qualified_sale_age_years: { min: 10 } } },
        parcelIngested,
      ),
    ).toEqual([]);
  });

  it("reports the age that missed, to four decimals", () => {
    expect(
      evaluateRecipe({ filters: { last_sale_age_years: { min: 15 } } }, parcelIngested)
        .failed_filters,
    ).toEqual([
      { filter: "last_sale_age_years", reason: "not_met", expected: ">= 15", actual: 6.3333 },
    ]);
  });

  it("is judged at the parcel's observation time, not the wall clock", () => {
    const later = parcelWith({ observed_at: "2030-10-14T00:00:00.000Z" });
    expect(failedFilterNames({ filters: { last_sale_age_years: { min: 10 } } }, later)).toEqual([]);
  });
});

describe("owner mailing states", () => {
  const withState = (mailingState: string | null, rawState: string | null) =>
    parcelWith({
      owner: {
        ...parcelIngested.owner,
        mailing_state: mailingState,
        mailing_address: { ...parcelIngested.owner.mailing_address, state: rawState },
      },
    });

  it("treats FL and FLORIDA as one state on the recipe side", () => {
    const floridian = withState("FL", "FL");
    for (const spelling of ["FL", "fl", "FLORIDA", "Florida"]) {
      expect(
        failedFilterNames(
          { filters: { owner_mailing_states: { include: [spelling] } } },
          floridian,
        ),
      ).toEqual([]);
      expect(
        failedFilterNames(
          { filters: { owner_mailing_states: { exclude: [spelling] } } },
          floridian,
        ),
      ).toEqual(["owner_mailing_states"]);
    }
  });

  it("treats FL and FLORIDA as one state on the parcel side", () => {
    const recipe: Recipe = { filters: { owner_mailing_states: { include: ["FL"] } } };
    expect(failedFilterNames(recipe, withState("FLORIDA", "FLORIDA"))).toEqual([]);
    // No normalized code, but the roll's own spelling names Florida.
    expect(failedFilterNames(recipe, withState(null, "FLORIDA"))).toEqual([]);
  });

  it("excludes Florida to find out-of-state owners", () => {
    const recipe: Recipe = { filters: { owner_mailing_states: { exclude: ["Florida"] } } };
    expect(failedFilterNames(recipe, parcelIngested)).toEqual([]);
    expect(evaluateRecipe(recipe, withState("FL", "FLORIDA")).failed_filters).toEqual([
      { filter: "owner_mailing_states", reason: "not_met", expected: "none of FL", actual: "FL" },
    ]);
  });

  it("combines include and exclude", () => {
    const recipe: Recipe = {
      filters: { owner_mailing_states: { include: ["NY", "CT"], exclude: ["FL"] } },
    };
    expect(failedFilterNames(recipe, parcelIngested)).toEqual([]);
    expect(evaluateRecipe(recipe, withState("NJ", "NJ")).failed_filters).toEqual([
      {
        filter: "owner_mailing_states",
        reason: "not_met",
        expected: "one of CT, NY and none of FL",
        actual: "NJ",
      },
    ]);
  });
});

describe("homestead", () => {
  it("matches yes or no", () => {
    expect(failedFilterNames({ filters: { homestead: false } }, parcelIngested)).toEqual([]);
    expect(failedFilterNames({ filters: { homestead: true } }, parcelIngested)).toEqual([
      "homestead",
    ]);
    expect(failedFilterNames({ filters: { homestead: true } }, parcelIngestedSparse)).toEqual([]);
  });
});

describe("missing parcel data fails the filter that needs it", () => {
  it("fails every filter on a fact the sparse parcel lacks, as missing_data", () => {
    const recipe: Recipe = {
      filters: {
        cities: ["MIAMI"],
        zip_codes: ["33125"],
        use_classes: ["residential"],
        dor_use_codes: ["001"],
        est_equity: { min: 0 },
        equity_ratio: { min: 0 },
        year_built: { min: 1900 },
        living_area_sqft: { min: 0 },
        land_sqft: { min: 0 },
        last_sale_age_years: { min: 0 },
        last_qualified_sale_age_years: { min: 0 },
        owner_mailing_states: { exclude: ["FL"] },
      },
    };
    const result = evaluateRecipe(recipe, parcelIngestedSparse);
    expect(result.matched).toBe(false);
    expect(
      result.failed_filters.map((failed) => [failed.filter, failed.reason, failed.actual]),
    ).toEqual([
      ["cities", "missing_data", null],
      ["zip_codes", "missing_data", null],
      ["use_classes", "missing_data", null],
      ["dor_use_codes", "missing_data", null],
      ["est_equity", "missing_data", null],
      ["equity_ratio", "missing_data", null],
      ["year_built", "missing_data", null],
      ["living_area_sqft", "missing_data", null],
      ["land_sqft", "missing_data", null],
      ["last_sale_age_years", "missing_data", null],
      ["last_qualified_sale_age_years", "missing_data", null],
      ["owner_mailing_states", "missing_data", null],
    ]);
  });

  it("fails a state filter, include or exclude, for a foreign mailing address", () => {
    const foreign = parcelWith({
      owner: {
        ...parcelIngested.owner,
        mailing_state: null,
        mailing_address: { ...parcelIngested.owner.mailing_address, state: "ONTARIO" },
      },
    });
    expect(
      evaluateRecipe({ filters: { owner_mailing_states: { exclude: ["FL"] } } }, foreign)
        .failed_filters,
    ).toEqual([
      {
        filter: "owner_mailing_states",
        reason: "missing_data",
        expected: "none of FL",
        actual: "ONTARIO",
      },
    ]);
  });

  it("passes filters the recipe leaves out, whatever the parcel lacks", () => {
    expect(evaluateRecipe({ filters: { counties: [16] } }, parcelIngestedSparse).matched).toBe(
      true,
    );
  });
});

describe("required and excluded signals", () => {
  it("requires every required signal and reports it in signals_fired with weight 0", () => {
    const recipe: Recipe = {
      required_signals: ["out_of_state_owner"],
      signals: { high_equity: 1 },
    };
    expect(evaluateRecipe(recipe, parcelIngested)).toEqual({
      matched: true,
      score: 1,
      signals_fired: ["high_equity", "out_of_state_owner"],
      contributions: [
        { signal: "high_equity", weight: 1, contribution: 1 },
        { signal: "out_of_state_owner", weight: 0, contribution: 0 },
      ],
      failed_filters: [],
    });
  });

  it("fails when a required signal did not fire, naming the missing ones", () => {
    expect(
      evaluateRecipe(
        { required_signals: ["vacant_land", "absentee_owner", "corporate_owner"] },
        parcelIngested,
      ).failed_filters,
    ).toEqual([
      {
        filter: "required_signals",
        reason: "not_met",
        expected: "all of absentee_owner, corporate_owner, vacant_land",
        actual: ["corporate_owner", "vacant_land"],
      },
    ]);
  });

  it("fails when an excluded signal fired", () => {
    expect(
      evaluateRecipe(
        { excluded_signals: ["out_of_state_owner", "corporate_owner"] },
        parcelIngested,
      ).failed_filters,
    ).toEqual([
      {
        filter: "excluded_signals",
        reason: "not_met",
        expected: "none of corporate_owner, out_of_state_owner",
        actual: ["out_of_state_owner"],
      },
    ]);
  });
});

describe("min_score", () => {
  const weights = { absentee_owner: 0.5, vacant_land: 0.5 } as const;

  it("matches a score exactly at the threshold", () => {
    // 0.5 / 1.0 = 0.5
    expect(evaluateRecipe({ signals: weights, min_score: 0.5 }, parcelIngested).matched).toBe(true);
  });

  it("fails a score just below it", () => {
    expect(
      evaluateRecipe({ signals: weights, min_score: 0.5001 }, parcelIngested).failed_filters,
    ).toEqual([{ filter: "min_score", reason: "not_met", expected: ">= 0.5001", actual: 0.5 }]);
  });

  it("compares the rounded score, the one the tenant sees", () => {
    // 1/3 rounds to 0.3333, which reaches a threshold of 0.3333.
    const recipe: Recipe = {
      signals: { absentee_owner: 1, vacant_land: 1, corporate_owner: 1 },
      min_score: 0.3333,
    };
    expect(evaluateRecipe(recipe, parcelIngested)).toMatchObject({ matched: true, score: 0.3333 });
  });
});
