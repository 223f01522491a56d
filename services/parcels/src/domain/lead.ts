import type { Lead } from "@th/api-schemas";
import { formatAddress, type ParcelIngested } from "@th/contracts";
import { EQUITY_ASSUMPTIONS } from "./equity.ts";
import { countyName } from "./nal-layout.ts";
import type { FiredSignal } from "./signals.ts";

/** Everything a lead read needs beyond the published record. */
export interface ParcelDetail {
  signals: FiredSignal[];
  equity: {
    est_loan_balance: number;
    rate_pct: number;
    basis: { price: number; year: number; month: number; qualification_code: string | null };
  } | null;
}

/** The public Lead record from a stored parcel. */
export function toLead(event: ParcelIngested, detail: ParcelDetail): Lead {
  const equity = detail.equity;
  return {
    folio: event.folio,
    county: { number: event.county_no, name: countyName(event.county_no) },
    parcel_id: event.parcel_id,
    roll_year: event.roll_year,
    roll_stage: event.roll_stage,
    address: {
      line: event.situs.address,
      city: event.situs.city,
      zip: event.situs.zip,
      formatted: formatAddress(event.situs),
    },
    owner: {
      name: event.owner.name,
      mailing_address: event.owner.mailing_address,
      mailing_state: event.owner.mailing_state,
    },
    valuation: event.valuation,
    equity_estimate:
      equity === null
        ? null
        : {
            is_estimate: true,
            est_loan_balance: equity.est_loan_balance,
            basis_sale: equity.basis,
            assumed_loan_to_value: EQUITY_ASSUMPTIONS.loanToValue,
            assumed_rate_pct: equity.rate_pct,
            assumed_term_years: EQUITY_ASSUMPTIONS.termMonths / 12,
            method:
              "just value minus the scheduled balance of a loan at 80% of the last purchase price, 30-year fixed at that year's average rate",
          },
    land_use: {
      use_class: event.land_use.use_class,
      dor_use_code: event.land_use.dor_uc,
      appraiser_use_code: event.land_use.appraiser_uc,
    },
    building: { year_built: event.year_built, living_area_sqft: event.living_area_sqft },
    land_sqft: event.land_sqft,
    sales: {
      last_qualified_sale: event.last_qualified_sale,
      last_sale: event.last_sale,
    },
    homestead: event.homestead,
    signals_fired: [...event.signals_fired],
    signals: detail.signals,
    observed_at: event.observed_at,
  };
}
