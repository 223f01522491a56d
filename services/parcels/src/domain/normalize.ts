import type { UseClass } from "@th/contracts";

const STATE_CODES: Readonly<Record<string, string>> = {
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
  FLA: "FL",
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
  GUAM: "GU",
  "VIRGIN ISLANDS": "VI",
  "U.S. VIRGIN ISLANDS": "VI",
  "AMERICAN SAMOA": "AS",
  "NORTHERN MARIANA ISLANDS": "MP",
};

const US_CODES = new Set(Object.values(STATE_CODES).concat(["AA", "AE", "AP"]));

/**
 * USPS two-letter code for a roll's OWN_STATE, which counties write either way ("FL",
 * "FLORIDA", "Fla."). Null when blank or not a US state or territory (a foreign mailing address).
 */
export function stateCode(raw: string | null): string | null {
  if (raw === null) {
    return null;
  }
  const cleaned = raw.toUpperCase().replace(/\./g, "").replace(/\s+/g, " ").trim();
  if (cleaned === "") {
    return null;
  }
  if (cleaned.length === 2) {
    return US_CODES.has(cleaned) ? cleaned : null;
  }
  return STATE_CODES[cleaned] ?? null;
}

/** Words separated by single spaces, nothing around them: already clean but for the case. */
const SINGLE_SPACED = /^\S+(?: \S+)*$/;

/** Upper case with runs of whitespace collapsed; null when nothing is left. */
export function cleanText(raw: string | null): string | null {
  if (raw === null) {
    return null;
  }
  if (SINGLE_SPACED.test(raw)) {
    return raw.toUpperCase();
  }
  const cleaned = raw.replace(/\s+/g, " ").trim().toUpperCase();
  return cleaned === "" ? null : cleaned;
}

/** ZIP as text: 5 digits, or ZIP+4 as 12345-6789; a leading zero a spreadsheet dropped comes back. */
export function normalizeZip(raw: string | null): string | null {
  if (raw === null) {
    return null;
  }
  const trimmed = raw.trim();
  const digits = trimmed.replace(/\D/g, "");
  if (/^\d{5}(-?\d{4})?$/.test(trimmed) || /^\d{4}$/.test(trimmed)) {
    if (digits.length === 9) {
      return `${digits.slice(0, 5)}-${digits.slice(5)}`;
    }
    return digits.padStart(5, "0");
  }
  if (/^\d{8,9}$/.test(digits) && trimmed.length <= 10) {
    const padded = digits.padStart(9, "0");
    return `${padded.slice(0, 5)}-${padded.slice(5)}`;
  }
  return trimmed === "" ? null : trimmed.toUpperCase();
}

export function zip5(zip: string | null): string | null {
  if (zip === null) {
    return null;
  }
  const match = /^(\d{5})/.exec(zip);
  return match?.[1] ?? null;
}

const STREET_WORDS: Readonly<Record<string, string>> = {
  STREET: "ST",
  AVENUE: "AVE",
  AV: "AVE",
  BOULEVARD: "BLVD",
  DRIVE: "DR",
  ROAD: "RD",
  LANE: "LN",
  COURT: "CT",
  CIRCLE: "CIR",
  PLACE: "PL",
  TERRACE: "TER",
  TERR: "TER",
  PARKWAY: "PKWY",
  HIGHWAY: "HWY",
  TRAIL: "TRL",
  WAY: "WAY",
  NORTH: "N",
  SOUTH: "S",
  EAST: "E",
  WEST: "W",
  NORTHEAST: "NE",
  NORTHWEST: "NW",
  SOUTHEAST: "SE",
  SOUTHWEST: "SW",
  APARTMENT: "APT",
  SUITE: "STE",
  UNIT: "UNIT",
  "#": "UNIT",
};

/**
 * A street line reduced for comparison: upper case, punctuation dropped, USPS suffixes and
 * directionals abbreviated, so "123 North Main Street" and "123 N MAIN ST." compare equal.
 */
export function comparableStreet(raw: string | null): string | null {
  if (raw === null) {
    return null;
  }
  const upper = raw.toUpperCase();
  const words = (/[.,'#]/.test(upper) ? upper.replace(/[.,']/g, "").replace(/#/g, " # ") : upper)
    .split(/\s+/)
    .filter(Boolean)
    .map((word) => STREET_WORDS[word] ?? word);
  return words.length === 0 ? null : words.join(" ");
}

/** Joins address lines, skipping blanks. */
export function joinLines(...lines: (string | null)[]): string | null {
  const present = lines.filter((line): line is string => line !== null && line !== "");
  return present.length === 0 ? null : present.join(" ");
}

/** DOR_UC ranges: the first digit pair decides the class. */
export function useClassOf(dorUc: string | null): UseClass | null {
  if (dorUc === null) {
    return null;
  }
  const code = Number(dorUc);
  if (!Number.isInteger(code) || code < 0 || code > 99) {
    return null;
  }
  if (code <= 9) {
    return "residential";
  }
  if (code <= 39) {
    return "commercial";
  }
  if (code <= 49) {
    return "industrial";
  }
  if (code <= 69) {
    return "agricultural";
  }
  if (code <= 79) {
    return "institutional";
  }
  if (code <= 89) {
    return "governmental";
  }
  return "miscellaneous";
}
