// The names a recipe may use and their meaning (the lead signals, the use classes and the US
// states) and the dashboard password's length rule. Free of zod and of any other dependency, so
// the dashboard's browser bundle can share this one copy with the validators.

/** A dashboard password's length, in characters: the trial, set and change bodies and the sign-up form. */
export const PASSWORD_LENGTH = { min: 12, max: 200 } as const;

/**
 * The lead signals the parcels service computes from the roll and lists in
 * `parcel.ingested.signals_fired` (and so in the webhook's `match.signals_fired`), in the order it
 * evaluates them. These are exactly the names it emits; recipes may name only these, so a recipe
 * can never wait for a signal that cannot fire. Adding a name is backward compatible; renaming or
 * removing one breaks stored recipes, so never do either within v1.
 */
export const LEAD_SIGNALS = [
  "absentee_owner",
  "out_of_state_owner",
  "corporate_owner",
  "trust_owner",
  "estate_owner",
  "long_term_owner",
  "high_equity",
  "free_and_clear",
  "negative_equity",
  "homestead_dropped",
  "value_jump",
  "recent_sale",
  "vacant_land",
  "distressed_transfer",
  "tired_landlord",
] as const;
export type LeadSignal = (typeof LEAD_SIGNALS)[number];

/** One line per signal, for the documentation, the dashboard and the OpenAPI description. */
export const LEAD_SIGNAL_DESCRIPTIONS: Readonly<Record<LeadSignal, string>> = {
  absentee_owner:
    "not homesteaded, and the owner's mailing street or ZIP differs from the property's (government land excluded)",
  out_of_state_owner: "the owner's mailing address is in a US state other than Florida",
  corporate_owner: "the owner name carries an entity word: LLC, INC, CORP, LTD, LP, HOLDINGS, ...",
  trust_owner: "the owner name names a trust or trustee",
  estate_owner: "the owner name marks an estate, heirs, a personal representative or a life estate",
  long_term_owner: "the last sale is 15 or more years before the roll was observed",
  high_equity: "estimated equity is at least 50% of the just value",
  free_and_clear: "the modelled purchase loan is paid off (an estimate; the roll has no mortgages)",
  negative_equity: "the modelled loan balance exceeds the just value (an estimate)",
  homestead_dropped: "homesteaded on the previous roll, not on this one",
  value_jump: "the just value rose 20% or more over the previous roll",
  recent_sale: "sold within the 12 months before the roll was observed",
  vacant_land:
    "a vacant land-use code: 000 residential, 010 commercial, 040 industrial, 070 institutional",
  distressed_transfer:
    "the last sale was a quit-claim or tax deed, a bank deed, off-market or forced (DOR codes 11, 12, 37, 38)",
  tired_landlord: "absentee owner of a non-homestead residential parcel for 10 or more years",
};

/**
 * The one list of use classes: leads show them, recipes filter by them, and `@th/contracts` takes
 * its `USE_CLASSES` from here (its `types.test.ts` checks the list against the Avro enum).
 */
export const RECIPE_USE_CLASSES = [
  "residential",
  "commercial",
  "industrial",
  "agricultural",
  "institutional",
  "governmental",
  "miscellaneous",
] as const;

/** USPS codes of the states, DC, the territories and the military "states", by full name. */
const US_STATE_CODES_BY_NAME: Readonly<Record<string, string>> = {
  ALABAMA: "AL",
  ALASKA: "AK",
  ARIZONA: "AZ",
  ARKANSAS: "AR",
  CALIFORNIA: "CA",
  COLORADO: "CO",
  CONNECTICUT: "CT",
  DELAWARE: "DE",
  "DISTRICT OF COLUMBIA": "DC",
  FLORIDA: "FL",
  GEORGIA: "GA",
  HAWAII: "HI",
  IDAHO: "ID",
  ILLINOIS: "IL",
  INDIANA: "IN",
  IOWA: "IA",
  KANSAS: "KS",
  KENTUCKY: "KY",
  LOUISIANA: "LA",
  MAINE: "ME",
  MARYLAND: "MD",
  MASSACHUSETTS: "MA",
  MICHIGAN: "MI",
  MINNESOTA: "MN",
  MISSISSIPPI: "MS",
  MISSOURI: "MO",
  MONTANA: "MT",
  NEBRASKA: "NE",
  NEVADA: "NV",
  "NEW HAMPSHIRE": "NH",
  "NEW JERSEY": "NJ",
  "NEW MEXICO": "NM",
  "NEW YORK": "NY",
  "NORTH CAROLINA": "NC",
  "NORTH DAKOTA": "ND",
  OHIO: "OH",
  OKLAHOMA: "OK",
  OREGON: "OR",
  PENNSYLVANIA: "PA",
  "RHODE ISLAND": "RI",
  "SOUTH CAROLINA": "SC",
  "SOUTH DAKOTA": "SD",
  TENNESSEE: "TN",
  TEXAS: "TX",
  UTAH: "UT",
  VERMONT: "VT",
  VIRGINIA: "VA",
  WASHINGTON: "WA",
  "WEST VIRGINIA": "WV",
  WISCONSIN: "WI",
  WYOMING: "WY",
  "PUERTO RICO": "PR",
  "US VIRGIN ISLANDS": "VI",
  "VIRGIN ISLANDS": "VI",
  GUAM: "GU",
  "AMERICAN SAMOA": "AS",
  "NORTHERN MARIANA ISLANDS": "MP",
  "ARMED FORCES AMERICAS": "AA",
  "ARMED FORCES EUROPE": "AE",
  "ARMED FORCES PACIFIC": "AP",
};
const US_STATE_CODES: ReadonlySet<string> = new Set(Object.values(US_STATE_CODES_BY_NAME));

/**
 * The USPS code for a state written as a code or a full name in any case ("fl", "Florida",
 * "FLORIDA" -> "FL"); null when it names no US state or territory. Rolls spell OWN_STATE both
 * ways, and so do people writing recipes.
 */
export function normalizeStateCode(state: string): string | null {
  const key = state.trim().toUpperCase().replaceAll(".", "").replace(/\s+/g, " ");
  if (US_STATE_CODES.has(key)) {
    return key;
  }
  return US_STATE_CODES_BY_NAME[key] ?? null;
}
