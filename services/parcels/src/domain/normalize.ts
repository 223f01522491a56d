import { normalizeStateCode } from "@th/api-schemas/catalogue";
import type { UseClass } from "@th/contracts";

/**
 * Spellings counties write on rolls that recipes do not accept: a recipe names a state by code or
 * full name, and the roll's abbreviations stay a roll matter.
 */
const ROLL_ONLY_STATE_SPELLINGS: Readonly<Record<string, string>> = { FLA: "FL" };

/**
 * USPS two-letter code for a roll's OWN_STATE, which counties write either way ("FL",
 * "FLORIDA", "Fla."). Null when blank or not a US state or territory (a foreign mailing address).
 */
export function stateCode(raw: string | null): string | null {
  if (raw === null) {
    return null;
  }
  const known = STATE_CODES_SEEN.get(raw);
  if (known !== undefined) {
    return known;
  }
  const code = spelledStateCode(raw);
  // A roll writes a few dozen spellings; the bound only matters for a file of nonsense.
  if (STATE_CODES_SEEN.size >= 4096) {
    STATE_CODES_SEEN.clear();
  }
  STATE_CODES_SEEN.set(raw, code);
  return code;
}

/** Codes of the spellings met so far: a roll repeats a few of them on every row. */
const STATE_CODES_SEEN = new Map<string, string | null>();

function spelledStateCode(raw: string): string | null {
  const code = normalizeStateCode(raw);
  if (code !== null) {
    return code;
  }
  const cleaned = raw.toUpperCase().replace(/\./g, "").replace(/\s+/g, " ").trim();
  return ROLL_ONLY_STATE_SPELLINGS[cleaned] ?? null;
}

/** Words separated by single spaces, nothing around them: already clean but for the case. */
const SINGLE_SPACED = /^\S+(?: \S+)*$/;

/** Single-spaced words of printable ASCII without a lower-case letter: upper case already. */
const CLEAN_ALREADY = /^[!-`{-~]+(?: [!-`{-~]+)*$/;

/** Upper case with runs of whitespace collapsed; null when nothing is left. */
export function cleanText(raw: string | null): string | null {
  if (raw === null) {
    return null;
  }
  if (CLEAN_ALREADY.test(raw)) {
    return raw;
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
  // Most rows: five digits, already as they should be.
  if (FIVE_DIGITS.test(raw)) {
    return raw;
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

const FIVE_DIGITS = /^\d{5}$/;
const STARTS_WITH_FIVE_DIGITS = /^\d{5}/;

export function zip5(zip: string | null): string | null {
  if (zip === null || !STARTS_WITH_FIVE_DIGITS.test(zip)) {
    return null;
  }
  return zip.length === 5 ? zip : zip.slice(0, 5);
}

const STREET_WORDS: ReadonlyMap<string, string> = new Map(
  Object.entries({
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
  }),
);

/**
 * A line that `comparableStreet` would give back as it is: upper-case letters, digits and single
 * spaces between words, none of them a word it abbreviates. Nearly every cleaned roll line is one;
 * telling them by one pattern skips the split and join.
 */
const ALREADY_COMPARABLE = new RegExp(
  `^(?!(?:.* )?(?:${[...STREET_WORDS]
    .filter(([word, short]) => word !== short && /^[A-Z]+$/.test(word))
    .map(([word]) => word)
    .join("|")})(?: |$))[A-Z0-9]+(?: [A-Z0-9]+)*$`,
);

/**
 * A street line reduced for comparison: upper case, punctuation dropped, USPS suffixes and
 * directionals abbreviated, so "123 North Main Street" and "123 N MAIN ST." compare equal.
 */
export function comparableStreet(raw: string | null): string | null {
  if (raw === null) {
    return null;
  }
  if (ALREADY_COMPARABLE.test(raw)) {
    return raw;
  }
  const upper = raw.toUpperCase();
  const text = /[.,'#]/.test(upper) ? upper.replace(/[.,']/g, "").replace(/#/g, " # ") : upper;
  // Lines come single-spaced from cleanText: a split on the space is then all it takes.
  const words = SINGLE_SPACED.test(text) ? text.split(" ") : text.split(/\s+/).filter(Boolean);
  for (let index = 0; index < words.length; index++) {
    const short = STREET_WORDS.get(words[index] as string);
    if (short !== undefined) {
      words[index] = short;
    }
  }
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
