// Leads as the parcels service answers them, for this service's tests and the pipeline bench
// (never imported by the service).
import type { Lead } from "@th/api-schemas";

/** A whole lead for `folio`; its number picks the street, so leads differ. */
export function syntheticLead(folio: string, overrides: Partial<Lead> = {}): Lead {
  const n = Number.parseInt(folio.replace(/\D/g, "").slice(-5) || "1", 10);
  return {
    folio,
    county: { number: 23, name: "Miami-Dade" },
    parcel_id: folio.split("-")[1] ?? folio,
    roll_year: 2025,
    roll_stage: "final",
    address: {
      line: `${n} NW ${(n % 90) + 1}TH ST`,
      city: "MIAMI",
      zip: "33125",
      formatted: `${n} NW ${(n % 90) + 1}TH ST, MIAMI, FL 33125`,
    },
    owner: {
      name: `OWNER ${n}`,
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
      just_value: 200_000 + n,
      assessed_value: 180_000,
      taxable_value: 150_000,
      land_value: 90_000,
      est_equity: 120_000,
      equity_ratio: 0.6,
    },
    equity_estimate: null,
    land_use: { use_class: "residential", dor_use_code: "001", appraiser_use_code: null },
    building: { year_built: 1961, living_area_sqft: 1500 },
    land_sqft: 6000,
    sales: { last_qualified_sale: null, last_sale: null },
    homestead: false,
    signals_fired: ["absentee_owner"],
    signals: [{ name: "absentee_owner", reason: "mailing address differs from the situs" }],
    observed_at: "2026-11-01T00:00:00.000Z",
    ...overrides,
  };
}
