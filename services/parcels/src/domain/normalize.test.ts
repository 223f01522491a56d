// The normalizers take shortcuts for the values nearly every roll row holds (a line already clean,
// five-digit ZIPs, a state spelling seen before). Each shortcut must give what the general rule
// gives: the general rules are written out below, as they were before the shortcuts, and every
// value of generated rolls plus hand-picked odd ones goes through both.
import { normalizeStateCode } from "@th/api-schemas/catalogue";
import { describe, expect, it } from "vitest";
import { generateNalLines } from "../testing/generate-nal.ts";
import { NAL_COLUMNS } from "./nal-layout.ts";
import { cleanText, comparableStreet, normalizeZip, stateCode, zip5 } from "./normalize.ts";
import { money } from "./signals.ts";

const generalCleanText = (raw: string): string | null => {
  const cleaned = raw.replace(/\s+/g, " ").trim().toUpperCase();
  return cleaned === "" ? null : cleaned;
};

const STREET_WORDS: Record<string, string> = {
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

const generalComparableStreet = (raw: string): string | null => {
  const text = raw.toUpperCase().replace(/[.,']/g, "").replace(/#/g, " # ");
  const words = text
    .split(/\s+/)
    .filter(Boolean)
    .map((word) => STREET_WORDS[word] ?? word);
  return words.length === 0 ? null : words.join(" ");
};

const generalZip = (raw: string): string | null => {
  const trimmed = raw.trim();
  const digits = trimmed.replace(/\D/g, "");
  if (/^\d{5}(-?\d{4})?$/.test(trimmed) || /^\d{4}$/.test(trimmed)) {
    return digits.length === 9
      ? `${digits.slice(0, 5)}-${digits.slice(5)}`
      : digits.padStart(5, "0");
  }
  if (/^\d{8,9}$/.test(digits) && trimmed.length <= 10) {
    const padded = digits.padStart(9, "0");
    return `${padded.slice(0, 5)}-${padded.slice(5)}`;
  }
  return trimmed === "" ? null : trimmed.toUpperCase();
};

const generalZip5 = (zip: string): string | null => /^(\d{5})/.exec(zip)?.[1] ?? null;

const generalState = (raw: string): string | null =>
  normalizeStateCode(raw) ??
  (raw.toUpperCase().replace(/\./g, "").replace(/\s+/g, " ").trim() === "FLA" ? "FL" : null);

const generalMoney = (value: number) =>
  `${value < 0 ? "-" : ""}$${String(Math.abs(Math.round(value))).replace(/\B(?=(\d{3})+(?!\d))/g, ",")}`;

/** Every value of the named columns in generated rolls of several counties. */
function generatedValues(columns: readonly string[]): string[] {
  const positions = columns.map((column) => NAL_COLUMNS.indexOf(column as never));
  const values = new Set<string>();
  for (const [seed, countyNo] of [
    [4, 23],
    [5, 16],
    [6, 39],
  ] as const) {
    for (const line of [...generateNalLines({ rows: 1500, seed, countyNo })].slice(1)) {
      // Quoted fields aside: a comma split is enough for the values wanted here.
      const fields = line.split(",");
      for (const position of positions) {
        values.add((fields[position] ?? "").replaceAll('"', ""));
      }
    }
  }
  return [...values];
}

const ODD_LINES = [
  "",
  " ",
  "A",
  "a",
  "1 MAIN ST",
  "1 main st",
  "1  MAIN ST",
  " 1 MAIN ST",
  "1 MAIN ST ",
  "1\tMAIN ST",
  "1 MAIN\nST",
  "1 MAIN ST.",
  "1 MAIN ST, APT 4",
  "O'BRIEN LN",
  "1 MAIN ST #4",
  "#4",
  "# 4",
  "1 MAIN STREET",
  "STREET",
  "1 NORTH MAIN",
  "NORTHWEST",
  "1 NORTHWESTERN AVE",
  "1 AV",
  "1 AVE",
  "1 WAY",
  "1 UNIT 4",
  "1 STREETS",
  "1 XSTREET",
  "SUITE 100 1 MAIN",
  "1 MAIN ST SUITE",
  "MÜLLER STRASSE 1",
  "müller straße 1",
  "ǅ DIGRAPH",
  "1 MAIN ST\u00a0",
  "1 MAIN\u2003ST",
  "PO BOX 12",
  "P.O. BOX 12",
  "@ HOME",
  "ST_JOHN",
  "[1] {2} |3| ~4~ `5`",
  "x".repeat(500),
  `${"AVENUE ".repeat(200)}END`,
];

describe("normalizer shortcuts", () => {
  it("clean text as the general rule does, whether the value is clean already or not", () => {
    const values = [
      ...ODD_LINES,
      ...generatedValues(["OWN_NAME", "OWN_ADDR1", "OWN_CITY", "PHY_ADDR1", "PHY_CITY"]),
    ];
    for (const value of values) {
      expect(cleanText(value), JSON.stringify(value)).toBe(generalCleanText(value));
    }
  });

  it("reduce streets for comparison as the general rule does, from raw and from cleaned lines", () => {
    const values = [...ODD_LINES, ...generatedValues(["OWN_ADDR1", "PHY_ADDR1"])];
    for (const value of values) {
      expect(comparableStreet(value), JSON.stringify(value)).toBe(generalComparableStreet(value));
      const cleaned = generalCleanText(value);
      if (cleaned !== null) {
        expect(comparableStreet(cleaned), JSON.stringify(cleaned)).toBe(
          generalComparableStreet(cleaned),
        );
      }
    }
  });

  it("normalize ZIPs and their first five digits as the general rule does", () => {
    const values = [
      ...generatedValues(["OWN_ZIPCD", "PHY_ZIPCD"]),
      "",
      " ",
      "33125",
      " 33125",
      "33125 ",
      "3312",
      "331251234",
      "33125-1234",
      "33125 1234",
      "03125",
      "3125",
      "12345678",
      "1234-5678",
      "123456",
      "K1A 0B1",
      "sw1a 1aa",
      "٣٣١٢٥",
      "33125\n",
    ];
    for (const value of values) {
      const zip = normalizeZip(value);
      expect(zip, JSON.stringify(value)).toBe(generalZip(value));
      if (zip !== null) {
        expect(zip5(zip), JSON.stringify(zip)).toBe(generalZip5(zip));
      }
      expect(zip5(value), JSON.stringify(value)).toBe(generalZip5(value));
    }
  });

  it("give a state spelling the same code the second time, and a thousand spellings too many do not change that", () => {
    const values = [
      ...generatedValues(["OWN_STATE"]),
      "FL",
      "fl",
      "Fla.",
      "FLA",
      " florida ",
      "New  York",
      "ONTARIO",
      "",
      "XX",
    ];
    for (let round = 0; round < 3; round++) {
      for (const value of values) {
        expect(stateCode(value), JSON.stringify(value)).toBe(generalState(value));
      }
      // Junk enough to fill the memory of spellings seen, which then starts again.
      for (let junk = 0; junk < 2500; junk++) {
        expect(stateCode(`NOWHERE ${round} ${junk}`)).toBeNull();
      }
    }
  });

  it("write money as the digit-grouping pattern did, for every magnitude and sign", () => {
    const values = [0, 0.4, 0.5, -0.4, -0.6, 1, -1, 999, 1000, -1000, 999_999.5, 1e12, -1e12];
    for (let digits = 1; digits <= 22; digits++) {
      values.push(10 ** digits - 1, 10 ** digits, -(10 ** digits) + 1, 1.234567 * 10 ** digits);
    }
    for (const value of values) {
      expect(money(value), String(value)).toBe(generalMoney(value));
    }
  });
});
