import { leadSchema } from "@th/api-schemas";
import { parse } from "csv-parse/sync";
import { describe, expect, it } from "vitest";
import { csvLine, LEAD_CSV_COLUMNS, leadCsvHeader, leadCsvRow } from "./csv.ts";

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
