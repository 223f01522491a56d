// Seeded synthetic parcels and recipes for the property tests and the benchmarks: shaped like
// Florida rolls (residential-heavy, a few big counties) and like recipes people write (a county
// or two, a use class, a value band, a handful of weighted signals).
import { LEAD_SIGNALS, RECIPE_USE_CLASSES, type Recipe, validateRecipe } from "@th/api-schemas";
import type { ParcelIngested, UseClass } from "@th/contracts";

/** The seeded generator every synthetic parcel and recipe here draws from. */
export { seededRandom as rng } from "@th/contracts/samples";

type Random = () => number;

const pick = <T>(random: Random, items: readonly T[]): T =>
  items[Math.floor(random() * items.length)] as T;

function pickSome<T>(random: Random, items: readonly T[], count: number): T[] {
  const chosen = new Set<T>();
  while (chosen.size < Math.min(count, items.length)) {
    chosen.add(pick(random, items));
  }
  return [...chosen];
}

// The big counties carry most parcels: Miami-Dade, Broward, Palm Beach, Hillsborough, Orange...
const BIG_COUNTIES = [23, 16, 60, 39, 58, 46, 64, 52, 26, 36];
const ALL_COUNTIES = Array.from({ length: 67 }, (_, index) => 11 + index);
const CITIES = [
  "MIAMI",
  "HIALEAH",
  "FORT LAUDERDALE",
  "TAMPA",
  "ORLANDO",
  "UNINCORPORATED",
  "NAPLES",
  "CAPE CORAL",
];
const STATES = ["FL", "FL", "FL", "FL", "NY", "NJ", "GA", "CT", "FLORIDA", "TX"];
const USE_WEIGHTS: readonly [UseClass, number][] = [
  ["residential", 0.78],
  ["commercial", 0.08],
  ["agricultural", 0.05],
  ["industrial", 0.03],
  ["institutional", 0.02],
  ["governmental", 0.02],
  ["miscellaneous", 0.02],
];
const SIGNAL_RATE: Readonly<Record<string, number>> = {
  absentee_owner: 0.3,
  out_of_state_owner: 0.1,
  corporate_owner: 0.12,
  trust_owner: 0.05,
  estate_owner: 0.02,
  long_term_owner: 0.35,
  high_equity: 0.45,
  free_and_clear: 0.2,
  negative_equity: 0.03,
  homestead_dropped: 0.01,
  value_jump: 0.05,
  recent_sale: 0.07,
  vacant_land: 0.08,
  distressed_transfer: 0.04,
  tired_landlord: 0.08,
};

export function countyOf(random: Random): number {
  return random() < 0.7 ? pick(random, BIG_COUNTIES) : pick(random, ALL_COUNTIES);
}

function zipOf(county: number, random: Random): string {
  return String(32000 + (county - 11) * 30 + Math.floor(random() * 30)).padStart(5, "0");
}

function useClassOf(random: Random): UseClass {
  let roll = random();
  for (const [useClass, weight] of USE_WEIGHTS) {
    roll -= weight;
    if (roll <= 0) {
      return useClass;
    }
  }
  return "residential";
}

export interface ParcelOptions {
  /** Share of parcels with missing facts (nulls everywhere the roll allows). */
  sparseShare?: number;
  observedAt?: string;
  ingestId?: string;
}

export function syntheticParcel(
  random: Random,
  index: number,
  options: ParcelOptions = {},
): ParcelIngested {
  const county = countyOf(random);
  const sparse = random() < (options.sparseShare ?? 0);
  const justValue = Math.round(40_000 + random() ** 2 * 2_000_000);
  const ratio = Math.round((random() * 1.4 - 0.2) * 10_000) / 10_000;
  const saleYear = 1970 + Math.floor(random() * 55);
  const signals = LEAD_SIGNALS.filter((signal) => random() < (SIGNAL_RATE[signal] ?? 0.05));
  const rawState = pick(random, STATES);
  const parcelId = String(1_000_000_000 + index);
  return {
    ingest_id: options.ingestId ?? "ing_synthetic",
    folio: `${county}-${parcelId}`,
    county_no: county,
    parcel_id: parcelId,
    roll_year: 2025,
    roll_stage: "final",
    source_file: null,
    content_hash: `h${index.toString(16).padStart(63, "0")}`,
    previous_content_hash: null,
    situs: {
      address: sparse ? null : `${100 + (index % 9000)} NW ${1 + (index % 90)}TH ST`,
      city: sparse ? null : pick(random, CITIES),
      zip: sparse ? null : random() < 0.2 ? `${zipOf(county, random)}-1234` : zipOf(county, random),
    },
    land_use: {
      dor_uc: sparse ? null : String(Math.floor(random() * 100)).padStart(3, "0"),
      use_class: sparse && random() < 0.5 ? null : useClassOf(random),
      appraiser_uc: null,
    },
    owner: {
      name: `OWNER ${index}`,
      mailing_state: sparse ? null : rawState === "FLORIDA" ? "FL" : rawState,
      mailing_address: {
        line1: null,
        line2: null,
        city: null,
        state: sparse ? (random() < 0.5 ? "FLORIDA" : null) : rawState,
        zip: null,
      },
    },
    valuation: {
      just_value: justValue,
      assessed_value: null,
      taxable_value: null,
      land_value: null,
      est_equity: sparse ? null : Math.round(justValue * ratio),
      equity_ratio: sparse ? null : ratio,
    },
    year_built: sparse ? null : 1920 + Math.floor(random() * 105),
    living_area_sqft: sparse ? null : 600 + Math.floor(random() * 4000),
    land_sqft: sparse ? null : 2000 + Math.floor(random() * 40_000),
    homestead: random() < 0.45,
    last_sale: sparse
      ? null
      : {
          price: 100_000,
          year: saleYear,
          month: 1 + Math.floor(random() * 12),
          qualification_code: "01",
        },
    last_qualified_sale:
      sparse || random() < 0.3
        ? null
        : {
            price: 90_000,
            year: saleYear - 2,
            month: 1 + Math.floor(random() * 12),
            qualification_code: "01",
          },
    signals_fired: signals,
    observed_at: options.observedAt ?? "2025-10-14T06:12:44.318Z",
  };
}

/** A valid recipe shaped like what tenants write; `broad` widens it (for property tests). */
export function syntheticRecipe(random: Random, options: { broad?: boolean } = {}): Recipe {
  for (;;) {
    const filters: NonNullable<Recipe["filters"]> = {};
    const where = random();
    if (where < 0.75) {
      filters.counties = pickSome(
        random,
        random() < 0.8 ? BIG_COUNTIES : ALL_COUNTIES,
        1 + Math.floor(random() * 3),
      );
    } else if (where < 0.85) {
      const county = countyOf(random);
      filters.zip_codes = Array.from({ length: 1 + Math.floor(random() * 4) }, () =>
        zipOf(county, random),
      );
    } else if (where < 0.9) {
      filters.cities = pickSome(random, CITIES, 1 + Math.floor(random() * 2)).map((city) =>
        random() < 0.3 ? city.toLowerCase() : city,
      );
    }
    if (random() < 0.6) {
      filters.use_classes =
        random() < 0.7 ? ["residential"] : pickSome(random, RECIPE_USE_CLASSES, 2);
    }
    if (random() < 0.4) {
      const min = Math.round(random() * 600_000);
      filters.just_value =
        random() < 0.5 ? { min } : { min, max: min + Math.round(random() * 1_500_000) };
    }
    if (random() < 0.25) {
      filters.equity_ratio = { min: Math.round(random() * 80) / 100 };
    }
    if (random() < 0.15) {
      filters.est_equity = { min: Math.round(random() * 300_000) };
    }
    if (random() < 0.25) {
      filters.homestead = !(random() < 0.7);
    }
    if (random() < 0.15) {
      filters.year_built = { max: 1950 + Math.floor(random() * 60) };
    }
    if (random() < 0.1) {
      filters.living_area_sqft = { min: 800 + Math.floor(random() * 1500) };
    }
    if (random() < 0.05) {
      filters.land_sqft = { max: 5000 + Math.floor(random() * 30_000) };
    }
    if (random() < 0.15) {
      filters.last_sale_age_years = { min: Math.floor(random() * 25) };
    }
    if (random() < 0.05) {
      filters.last_qualified_sale_age_years = { max: 5 + Math.floor(random() * 30) };
    }
    if (random() < 0.05) {
      filters.dor_use_codes = ["001", String(Math.floor(random() * 100)).padStart(3, "0")];
    }
    if (random() < 0.15) {
      filters.owner_mailing_states =
        random() < 0.5
          ? { exclude: ["FL"] }
          : { include: pickSome(random, ["NY", "NJ", "Georgia", "CT"], 2) };
    }
    const signals: Record<string, number> = {};
    for (const signal of pickSome(random, LEAD_SIGNALS, 1 + Math.floor(random() * 4))) {
      signals[signal] = Math.round((random() * 0.9 + 0.1) * 100) / 100;
    }
    if (random() < 0.2) {
      const penalty = pick(random, LEAD_SIGNALS);
      if (signals[penalty] === undefined) {
        signals[penalty] = -0.3;
      }
    }
    const weighted = Object.keys(signals);
    const unweighted = LEAD_SIGNALS.filter((signal) => !weighted.includes(signal));
    const required = random() < 0.3 ? pickSome(random, unweighted, 1) : [];
    const excluded =
      random() < 0.2
        ? pickSome(
            random,
            unweighted.filter((s) => !required.includes(s)),
            1,
          )
        : [];
    const candidate: Recipe = {
      filters,
      signals,
      required_signals: required,
      excluded_signals: excluded,
      min_score: random() < (options.broad ? 0.4 : 0.6) ? Math.round(random() * 70) / 100 : 0,
      ...(options.broad ? { allow_match_all: true } : {}),
    };
    const valid = validateRecipe(candidate);
    if (valid.ok) {
      return valid.recipe;
    }
  }
}

/**
 * A recipe as a paying tenant writes one: where (one or two counties, or a few ZIP codes), what
 * (a use class, a value band), and which leads (a required signal, weighted signals, a minimum
 * score). Each selects well under one parcel in a thousand of its area, which is what a lead-view
 * quota can pay for.
 */
export function realisticRecipe(random: Random): Recipe {
  for (;;) {
    const filters: NonNullable<Recipe["filters"]> = {};
    if (random() < 0.85) {
      filters.counties = pickSome(
        random,
        random() < 0.6 ? BIG_COUNTIES : ALL_COUNTIES,
        1 + Math.floor(random() * 2),
      );
    } else {
      const county = countyOf(random);
      filters.zip_codes = Array.from({ length: 1 + Math.floor(random() * 5) }, () =>
        zipOf(county, random),
      );
    }
    filters.use_classes =
      random() < 0.8 ? ["residential"] : pickSome(random, RECIPE_USE_CLASSES, 2);
    const min = Math.round(random() * 500_000);
    filters.just_value = { min, max: min + 100_000 + Math.round(random() * 1_000_000) };
    if (random() < 0.4) {
      filters.equity_ratio = { min: 0.3 + Math.round(random() * 50) / 100 };
    }
    if (random() < 0.3) {
      filters.homestead = false;
    }
    if (random() < 0.2) {
      filters.year_built = { max: 1960 + Math.floor(random() * 40) };
    }
    if (random() < 0.2) {
      filters.owner_mailing_states = { exclude: ["FL"] };
    }
    const signals: Record<string, number> = {};
    for (const signal of pickSome(random, LEAD_SIGNALS, 2 + Math.floor(random() * 3))) {
      signals[signal] = Math.round((random() * 0.8 + 0.2) * 100) / 100;
    }
    const unweighted = LEAD_SIGNALS.filter((signal) => signals[signal] === undefined);
    const candidate: Recipe = {
      filters,
      signals,
      required_signals: random() < 0.7 ? pickSome(random, unweighted, 1) : [],
      excluded_signals: random() < 0.3 ? [pick(random, unweighted)] : [],
      min_score: 0.4 + Math.round(random() * 40) / 100,
    };
    const valid = validateRecipe(candidate);
    if (valid.ok) {
      return valid.recipe;
    }
  }
}
