import type { Lead, MatchSummary } from "@th/api-schemas";
import { spreadsheetCell } from "@th/api-schemas/csv";

/** One line of an export: spreadsheet-safe cells (decision 0071), CRLF at the end (RFC 4180). */
export function csvLine(fields: readonly (string | number | boolean | null | undefined)[]): string {
  return `${fields.map(spreadsheetCell).join(",")}\r\n`;
}

/**
 * The export's columns, in order: what a spreadsheet or CRM import wants, flat. Money in whole
 * dollars; estimates labelled as such; several signals joined with `;`.
 */
export const LEAD_CSV_COLUMNS: readonly {
  header: string;
  value: (lead: Lead) => string | number | boolean | null;
}[] = [
  { header: "folio", value: (lead) => lead.folio },
  { header: "county", value: (lead) => lead.county.name ?? String(lead.county.number) },
  { header: "parcel_id", value: (lead) => lead.parcel_id },
  { header: "address", value: (lead) => lead.address.line },
  { header: "city", value: (lead) => lead.address.city },
  { header: "zip", value: (lead) => lead.address.zip },
  { header: "owner", value: (lead) => lead.owner.name },
  {
    header: "mailing_address",
    value: (lead) =>
      [lead.owner.mailing_address.line1, lead.owner.mailing_address.line2]
        .filter(Boolean)
        .join(", "),
  },
  { header: "mailing_city", value: (lead) => lead.owner.mailing_address.city },
  {
    header: "mailing_state",
    value: (lead) => lead.owner.mailing_state ?? lead.owner.mailing_address.state,
  },
  { header: "mailing_zip", value: (lead) => lead.owner.mailing_address.zip },
  { header: "use_class", value: (lead) => lead.land_use.use_class },
  { header: "dor_use_code", value: (lead) => lead.land_use.dor_use_code },
  { header: "just_value", value: (lead) => lead.valuation.just_value },
  { header: "assessed_value", value: (lead) => lead.valuation.assessed_value },
  { header: "taxable_value", value: (lead) => lead.valuation.taxable_value },
  { header: "est_equity", value: (lead) => lead.valuation.est_equity },
  { header: "est_equity_ratio", value: (lead) => lead.valuation.equity_ratio },
  { header: "year_built", value: (lead) => lead.building.year_built },
  { header: "living_area_sqft", value: (lead) => lead.building.living_area_sqft },
  { header: "land_sqft", value: (lead) => lead.land_sqft },
  { header: "homestead", value: (lead) => lead.homestead },
  {
    header: "last_sale",
    value: (lead) => {
      const sale = lead.sales.last_qualified_sale ?? lead.sales.last_sale;
      return sale ? `${sale.year}-${String(sale.month).padStart(2, "0")}` : null;
    },
  },
  {
    header: "last_sale_price",
    value: (lead) => (lead.sales.last_qualified_sale ?? lead.sales.last_sale)?.price ?? null,
  },
  { header: "signals", value: (lead) => lead.signals_fired.join(";") },
  { header: "observed_at", value: (lead) => lead.observed_at },
];

export function leadCsvHeader(): string {
  return csvLine(LEAD_CSV_COLUMNS.map((column) => column.header));
}

export function leadCsvRow(lead: Lead): string {
  return csvLine(LEAD_CSV_COLUMNS.map((column) => column.value(lead)));
}

/** A watchlist export puts the match's own facts first, then the lead's columns. */
export function matchCsvHeader(): string {
  return csvLine([
    "score",
    "signals_fired",
    "matched_at",
    ...LEAD_CSV_COLUMNS.map((column) => column.header),
  ]);
}

export function matchCsvRow(match: MatchSummary, lead: Lead): string {
  return csvLine([
    match.score,
    match.signals_fired.join(";"),
    match.matched_at,
    ...LEAD_CSV_COLUMNS.map((column) => column.value(lead)),
  ]);
}
