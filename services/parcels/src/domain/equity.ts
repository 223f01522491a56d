import type { RollSale } from "./nal-row.ts";

/**
 * Assumptions of the equity estimate. The roll records no mortgages, so the loan is modelled:
 * the last purchase was financed at 80% loan-to-value on a 30-year fixed loan at that year's
 * average 30-year rate, and paid as scheduled since. Refinances, HELOCs, cash purchases and
 * seller financing are invisible to it; every figure built on it is labelled an estimate.
 */
export const EQUITY_ASSUMPTIONS = {
  loanToValue: 0.8,
  termMonths: 360,
  /** Used for sale years outside the rate table. */
  fallbackRatePct: 7.5,
  /** Sales below this price are nominal transfers (quit-claims for $10), never a loan basis. */
  nominalPriceFloor: 1000,
} as const;

/**
 * Approximate annual averages of the Freddie Mac PMMS 30-year fixed rate, percent. Rounded
 * figures good enough for a balance estimate; replace with the official history file when exact
 * rates matter.
 */
const ANNUAL_30Y_RATE_PCT: Readonly<Record<number, number>> = {
  1971: 7.54,
  1972: 7.38,
  1973: 8.04,
  1974: 9.19,
  1975: 9.05,
  1976: 8.87,
  1977: 8.85,
  1978: 9.64,
  1979: 11.2,
  1980: 13.74,
  1981: 16.63,
  1982: 16.04,
  1983: 13.24,
  1984: 13.88,
  1985: 12.43,
  1986: 10.19,
  1987: 10.21,
  1988: 10.34,
  1989: 10.32,
  1990: 10.13,
  1991: 9.25,
  1992: 8.39,
  1993: 7.31,
  1994: 8.38,
  1995: 7.93,
  1996: 7.81,
  1997: 7.6,
  1998: 6.94,
  1999: 7.44,
  2000: 8.05,
  2001: 6.97,
  2002: 6.54,
  2003: 5.83,
  2004: 5.84,
  2005: 5.87,
  2006: 6.41,
  2007: 6.34,
  2008: 6.03,
  2009: 5.04,
  2010: 4.69,
  2011: 4.45,
  2012: 3.66,
  2013: 3.98,
  2014: 4.17,
  2015: 3.85,
  2016: 3.65,
  2017: 3.99,
  2018: 4.54,
  2019: 3.94,
  2020: 3.11,
  2021: 2.96,
  2022: 5.34,
  2023: 6.81,
  2024: 6.72,
  2025: 6.6,
  2026: 6.3,
};

function annualRatePct(year: number): number {
  return ANNUAL_30Y_RATE_PCT[year] ?? EQUITY_ASSUMPTIONS.fallbackRatePct;
}

/** QUAL_CD 01 and 02 are the arm's-length sales DOR uses for its ratio studies. */
export function isQualifiedSale(sale: RollSale): boolean {
  return (sale.qualificationCode === "01" || sale.qualificationCode === "02") && !sale.multiParcel;
}

/**
 * Sales newest first, of two in the same month the one listed first first (a stable sort). A roll's
 * history comes ordered already and is returned as it is: sorting it copied it for every row.
 */
export function byNewestFirst<T extends readonly RollSale[]>(sales: T): T {
  for (let index = 1; index < sales.length; index++) {
    const before = sales[index - 1] as RollSale;
    const after = sales[index] as RollSale;
    if (
      after.year - before.year > 0 ||
      (after.year === before.year && after.month > before.month)
    ) {
      return [...sales].sort((a, b) => b.year - a.year || b.month - a.month) as unknown as T;
    }
  }
  return sales;
}

/** Codes whose price says nothing about a purchase loan: corrective/quit-claim, affiliated parties. */
const NON_PURCHASE_CODES = new Set(["11", "30"]);

/**
 * The purchase the loan is modelled on: the latest qualified sale, else the latest single-parcel
 * sale above the nominal floor that is not a corrective deed or a transfer between related parties.
 */
export function purchaseBasis(sales: readonly RollSale[]): RollSale | null {
  const newestFirst = byNewestFirst(sales);
  return (
    newestFirst.find(isQualifiedSale) ??
    newestFirst.find(
      (sale) =>
        !sale.multiParcel &&
        sale.price >= EQUITY_ASSUMPTIONS.nominalPriceFloor &&
        !NON_PURCHASE_CODES.has(sale.qualificationCode ?? ""),
    ) ??
    null
  );
}

/** Months between the sale's month and the as-of month, never negative. */
export function monthsSince(sale: { year: number; month: number }, asOf: Date): number {
  const months = (asOf.getUTCFullYear() - sale.year) * 12 + (asOf.getUTCMonth() + 1 - sale.month);
  return Math.max(0, months);
}

/**
 * Remaining balance of a fixed-rate loan of `principal` after `paidMonths` of `termMonths`
 * scheduled payments: B = P·((1+i)^n − (1+i)^k) / ((1+i)^n − 1).
 */
export function remainingBalance(
  principal: number,
  annualRatePercent: number,
  termMonths: number,
  paidMonths: number,
): number {
  const k = Math.min(Math.max(paidMonths, 0), termMonths);
  if (k >= termMonths) {
    return 0;
  }
  const i = annualRatePercent / 100 / 12;
  if (i === 0) {
    return principal * (1 - k / termMonths);
  }
  const growthN = (1 + i) ** termMonths;
  const growthK = (1 + i) ** k;
  return (principal * (growthN - growthK)) / (growthN - 1);
}

export interface EquityEstimate {
  estEquity: number;
  /** est_equity / just_value, four decimals; null when just value is 0. */
  equityRatio: number | null;
  estLoanBalance: number;
  basis: RollSale;
  ratePct: number;
}

/** Estimated equity = just value − modelled balance of the last purchase's loan; negative is kept. */
export function estimateEquity(
  justValue: number,
  sales: readonly RollSale[],
  asOf: Date,
): EquityEstimate | null {
  const basis = purchaseBasis(sales);
  if (basis === null) {
    return null;
  }
  const ratePct = annualRatePct(basis.year);
  const balance = Math.round(
    remainingBalance(
      basis.price * EQUITY_ASSUMPTIONS.loanToValue,
      ratePct,
      EQUITY_ASSUMPTIONS.termMonths,
      monthsSince(basis, asOf),
    ),
  );
  const estEquity = justValue - balance;
  return {
    estEquity,
    equityRatio: justValue > 0 ? Math.round((estEquity / justValue) * 10_000) / 10_000 : null,
    estLoanBalance: balance,
    basis,
    ratePct,
  };
}
