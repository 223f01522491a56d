import type { LeadSignal } from "@th/api-schemas";
import type { UseClass } from "@th/contracts";
import type { EquityEstimate } from "./equity.ts";
import type { RollSale } from "./nal-row.ts";

/** The facts of the previous roll of the same parcel, when one was ingested before. */
export interface PriorRoll {
  rollYear: number;
  homestead: boolean;
  justValue: number;
}

/** What every signal looks at: one parcel's normalized roll facts. */
export interface SignalInput {
  homestead: boolean;
  useClass: UseClass | null;
  dorUc: string | null;
  ownerName: string;
  fiduciaryName: string | null;
  /** Mailing street reduced by `comparableStreet`, and its 5-digit ZIP. */
  mailingStreet: string | null;
  mailingZip5: string | null;
  /** USPS code; null when blank or foreign. */
  mailingState: string | null;
  situsStreet: string | null;
  situsZip5: string | null;
  justValue: number;
  equity: EquityEstimate | null;
  lastSale: RollSale | null;
  publicLand: string | null;
  priorRoll: PriorRoll | null;
  asOf: Date;
}

export interface FiredSignal {
  name: string;
  reason: string;
}

const SIGNAL_THRESHOLDS = {
  longTenureYears: 15,
  tiredLandlordYears: 10,
  highEquityRatio: 0.5,
  valueJumpRatio: 0.2,
  recentSaleMonths: 12,
} as const;

/** "$1,234,567"; toLocaleString is an order of magnitude slower on the ingest hot path. */
export const money = (value: number) => {
  const digits = String(Math.abs(Math.round(value)));
  if (digits.includes("e")) {
    // Written with an exponent: no roll value comes near, grouped as it always was.
    return `${value < 0 ? "-" : ""}$${digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",")}`;
  }
  // Digits before the first comma, then a comma before every three.
  let grouped = digits.slice(0, ((digits.length - 1) % 3) + 1);
  for (let at = grouped.length; at < digits.length; at += 3) {
    grouped += `,${digits.slice(at, at + 3)}`;
  }
  return `${value < 0 ? "-" : ""}$${grouped}`;
};

function yearsSince(sale: { year: number; month: number }, asOf: Date): number {
  return ((asOf.getUTCFullYear() - sale.year) * 12 + (asOf.getUTCMonth() + 1 - sale.month)) / 12;
}

function isGovernment(input: SignalInput): boolean {
  return input.publicLand !== null || input.useClass === "governmental";
}

/** Fires when a non-homestead parcel's tax bills go to a street/ZIP other than the property's. */
export function absenteeOwner(input: SignalInput): string | null {
  if (input.homestead || input.mailingStreet === null || isGovernment(input)) {
    return null;
  }
  const sameStreet = input.mailingStreet === input.situsStreet;
  const sameZip = input.mailingZip5 === null || input.mailingZip5 === input.situsZip5;
  if (sameStreet && sameZip) {
    return null;
  }
  return input.mailingStreet.startsWith("PO BOX") || input.mailingStreet.startsWith("P O BOX")
    ? "Not homesteaded and the owner's mail goes to a PO box"
    : "Not homesteaded and the owner's mailing address differs from the property address";
}

/** Fires when the owner's mailing state is a US state other than Florida. */
export function outOfStateOwner(input: SignalInput): string | null {
  if (input.mailingState === null || input.mailingState === "FL" || isGovernment(input)) {
    return null;
  }
  return `Owner's mailing address is in ${input.mailingState}`;
}

const CORPORATE =
  /\b(LLC|L L C|INC|INCORPORATED|CORP|CORPORATION|CO|COMPANY|LTD|LP|LLLP|LLP|PLLC|PA|HOLDINGS?|PROPERTIES|INVESTMENTS?|GROUP|PARTNERS|PARTNERSHIP|CAPITAL|REALTY|MGMT|MANAGEMENT|ASSN|ASSOCIATION|ENTERPRISES?|VENTURES?|FUND|BANK|N A)\b/;

/** Fires when the owner name carries an entity word (LLC, INC, CORP, HOLDINGS, …), government excluded. */
export function corporateOwner(input: SignalInput): string | null {
  if (isGovernment(input)) {
    return null;
  }
  const match = CORPORATE.exec(input.ownerName);
  return match ? `Owned by an entity (${match[1]})` : null;
}

const TRUST = /\b(TR|TRS|TRUST|TRUSTEE|TRUSTEES|REV TR|LIV TR|LAND TR|REVOCABLE)\b/;

/** Fires when the owner name names a trust or trustee. */
export function trustOwner(input: SignalInput): string | null {
  return TRUST.test(input.ownerName) ? "Held in a trust" : null;
}

const ESTATE =
  /\b(EST OF|ESTATE OF|ESTATE|HEIRS|DEC'?D|DECEASED|PERS REP|P\/R|L\/E|LIFE EST(ATE)?)\b/;

/** Fires when the owner name marks an estate, heirs, a personal representative or a life estate. */
export function estateOwner(input: SignalInput): string | null {
  const match = ESTATE.exec(input.ownerName);
  return match ? `Owner name indicates an estate or heirs (${match[1]})` : null;
}

/** Fires when the last sale is at least 15 years before the as-of date. */
export function longTermOwner(input: SignalInput): string | null {
  if (input.lastSale === null) {
    return null;
  }
  const years = yearsSince(input.lastSale, input.asOf);
  return years >= SIGNAL_THRESHOLDS.longTenureYears
    ? `Same owner since ${input.lastSale.year} (${Math.floor(years)} years)`
    : null;
}

/** Fires when estimated equity is at least 50% of just value. */
export function highEquity(input: SignalInput): string | null {
  const ratio = input.equity?.equityRatio ?? null;
  if (input.equity === null || ratio === null || ratio < SIGNAL_THRESHOLDS.highEquityRatio) {
    return null;
  }
  return `Estimated equity ${money(input.equity.estEquity)} is ${Math.round(ratio * 100)}% of just value (estimate)`;
}

/** Fires when the modelled purchase loan is fully paid off (bought 30+ years ago). */
export function freeAndClear(input: SignalInput): string | null {
  if (input.equity === null || input.equity.estLoanBalance > 0) {
    return null;
  }
  return `Purchase loan of ${input.equity.basis.year} modelled as paid off; likely free and clear (estimate)`;
}

/** Fires when estimated equity is below zero. */
export function negativeEquity(input: SignalInput): string | null {
  if (input.equity === null || input.equity.estEquity >= 0) {
    return null;
  }
  return `Modelled loan balance exceeds just value by ${money(-input.equity.estEquity)} (estimate)`;
}

/** Fires when the previous roll had a homestead and this one has none. */
export function homesteadDropped(input: SignalInput): string | null {
  if (input.priorRoll === null || !input.priorRoll.homestead || input.homestead) {
    return null;
  }
  return `Homestead on the ${input.priorRoll.rollYear} roll, none now`;
}

/** Fires when just value rose at least 20% over the previous roll. */
export function valueJump(input: SignalInput): string | null {
  const prior = input.priorRoll;
  if (prior === null || prior.justValue <= 0) {
    return null;
  }
  const change = input.justValue / prior.justValue - 1;
  return change >= SIGNAL_THRESHOLDS.valueJumpRatio
    ? `Just value up ${Math.round(change * 100)}% since the ${prior.rollYear} roll (${money(prior.justValue)} to ${money(input.justValue)})`
    : null;
}

/** Fires when the last sale falls within the 12 months before the as-of date. */
export function recentSale(input: SignalInput): string | null {
  if (input.lastSale === null) {
    return null;
  }
  const months = yearsSince(input.lastSale, input.asOf) * 12;
  return months >= 0 && months <= SIGNAL_THRESHOLDS.recentSaleMonths
    ? `Sold ${String(input.lastSale.month).padStart(2, "0")}/${input.lastSale.year} for ${money(input.lastSale.price)}`
    : null;
}

const VACANT_CODES = new Set(["000", "010", "040", "070"]);

/** Fires for the DOR vacant land-use codes: 000 residential, 010 commercial, 040 industrial, 070 institutional. */
export function vacantLand(input: SignalInput): string | null {
  return input.dorUc !== null && VACANT_CODES.has(input.dorUc)
    ? `Vacant land (DOR use code ${input.dorUc})`
    : null;
}

const DISTRESSED_CODES: Readonly<Record<string, string>> = {
  "11": "corrective, quit-claim or tax deed",
  "12": "deed to or from a financial institution",
  "37": "not exposed to the open market",
  "38": "forced sale or duress",
};

/** Fires when the last sale's qualification code marks a distressed transfer (11, 12, 37, 38). */
export function distressedTransfer(input: SignalInput): string | null {
  const code = input.lastSale?.qualificationCode ?? null;
  const meaning = code === null ? undefined : DISTRESSED_CODES[code];
  return meaning ? `Last transfer was a ${meaning} (QUAL_CD ${code})` : null;
}

/** Fires for a non-homestead residential parcel with an absentee owner of 10+ years. */
export function tiredLandlord(input: SignalInput): string | null {
  if (input.useClass !== "residential" || input.homestead || input.lastSale === null) {
    return null;
  }
  if (absenteeOwner(input) === null || vacantLand(input) !== null) {
    return null;
  }
  const years = yearsSince(input.lastSale, input.asOf);
  return years >= SIGNAL_THRESHOLDS.tiredLandlordYears
    ? `Absentee owner of a residential rental for ${Math.floor(years)} years`
    : null;
}

/**
 * The catalogue, in the order reasons are listed. Names are the `signals_fired` vocabulary, which
 * recipes share through `@th/api-schemas`: a name outside it does not compile, and a test holds
 * the two lists equal, so no recipe waits for a signal that never fires.
 */
const SIGNAL_CATALOGUE: readonly {
  name: LeadSignal;
  evaluate: (input: SignalInput) => string | null;
}[] = [
  { name: "absentee_owner", evaluate: absenteeOwner },
  { name: "out_of_state_owner", evaluate: outOfStateOwner },
  { name: "corporate_owner", evaluate: corporateOwner },
  { name: "trust_owner", evaluate: trustOwner },
  { name: "estate_owner", evaluate: estateOwner },
  { name: "long_term_owner", evaluate: longTermOwner },
  { name: "high_equity", evaluate: highEquity },
  { name: "free_and_clear", evaluate: freeAndClear },
  { name: "negative_equity", evaluate: negativeEquity },
  { name: "homestead_dropped", evaluate: homesteadDropped },
  { name: "value_jump", evaluate: valueJump },
  { name: "recent_sale", evaluate: recentSale },
  { name: "vacant_land", evaluate: vacantLand },
  { name: "distressed_transfer", evaluate: distressedTransfer },
  { name: "tired_landlord", evaluate: tiredLandlord },
];

export const SIGNAL_NAMES: readonly string[] = SIGNAL_CATALOGUE.map((signal) => signal.name);

export function evaluateSignals(input: SignalInput): FiredSignal[] {
  const fired: FiredSignal[] = [];
  for (const signal of SIGNAL_CATALOGUE) {
    const reason = signal.evaluate(input);
    if (reason !== null) {
      fired.push({ name: signal.name, reason });
    }
  }
  return fired;
}
