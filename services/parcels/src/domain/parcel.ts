import { hash } from "node:crypto";
import type { ParcelIngested, RollStage, Sale } from "@th/contracts";
import { byNewestFirst, type EquityEstimate, estimateEquity, isQualifiedSale } from "./equity.ts";
import type { NalRow, RollSale } from "./nal-row.ts";
import {
  cleanText,
  comparableStreet,
  joinLines,
  normalizeZip,
  stateCode,
  useClassOf,
  zip5,
} from "./normalize.ts";
import { evaluateSignals, type FiredSignal, type PriorRoll } from "./signals.ts";

/**
 * A lead's folio: the two-digit DOR county number, a dash, and the county's PARCEL_ID as on the
 * roll. A bare PARCEL_ID is unique only within its county.
 */
export function folioOf(countyNo: number, parcelId: string): string {
  return (COUNTY_PREFIXES[countyNo] ?? `${String(countyNo).padStart(2, "0")}-`) + parcelId;
}

/** "NN-" of each county number a row can hold, made once rather than for every row. */
const COUNTY_PREFIXES: readonly string[] = Array.from(
  { length: 78 },
  (_, countyNo) => `${String(countyNo).padStart(2, "0")}-`,
);

/**
 * The folios of one county, compared byte by byte: from "NN-" up to but not including "NN."
 * ("." is the byte after "-"), whatever the parcel ids hold.
 */
export function countyFolioRange(countyNo: number): { from: string; before: string } {
  const county = String(countyNo).padStart(2, "0");
  return { from: `${county}-`, before: `${county}.` };
}

/** Splits a folio back into county and parcel id; null when it is not shaped like one. */
export function parseFolio(folio: string): { countyNo: number; parcelId: string } | null {
  const match = /^(\d{2})-(.+)$/.exec(folio);
  if (!match?.[1] || !match[2]) {
    return null;
  }
  const countyNo = Number(match[1]);
  return countyNo >= 11 && countyNo <= 77 ? { countyNo, parcelId: match[2] } : null;
}

/**
 * Where a parcel's record sits in the roll file it came from. `fileId` names the file by its name
 * and size, so a corrected file delivered under the same name is another file.
 */
export interface SourceRecord {
  fileId: string;
  line: number;
  seqNo: number | null;
}

/** What the store remembers of a parcel between ingests. */
export interface StoredParcelState {
  contentHash: string;
  rollYear: number;
  rollStage: RollStage;
  homestead: boolean;
  justValue: number;
  priorRoll: PriorRoll | null;
  /** Null for parcels stored before records were tracked. */
  source: SourceRecord | null;
}

/**
 * DOR rolls can repeat a PARCEL_ID: the record with the highest SEQ_NO is the current one, and of
 * two with the same SEQ_NO (or none) the later line.
 */
export function isLaterRecord(
  record: { line: number; seqNo: number | null },
  than: { line: number; seqNo: number | null },
): boolean {
  const seqNo = record.seqNo ?? 0;
  const thanSeqNo = than.seqNo ?? 0;
  return seqNo !== thanSeqNo ? seqNo > thanSeqNo : record.line > than.line;
}

/**
 * How a row stands against the stored record of its parcel when both come from the same file:
 * it is that record (a re-ingest), an earlier record the stored one replaces, or a later one that
 * replaces it. Null when the stored parcel came from another file (or an unknown one).
 */
export function standingInFile(
  stored: SourceRecord | null,
  fileId: string,
  row: { line: number; seqNo: number | null },
): "same" | "earlier" | "later" | null {
  if (stored === null || stored.fileId !== fileId) {
    return null;
  }
  if (stored.line === row.line) {
    return "same";
  }
  return isLaterRecord(row, stored) ? "later" : "earlier";
}

export interface ParcelContext {
  ingestId: string;
  sourceFile: string | null;
  /** The file's identity for `SourceRecord`; without it the parcel records no source. */
  sourceFileId?: string;
  rollStage: RollStage;
  observedAt: string;
  /** Reference date of tenure, recent-sale and loan-age arithmetic. */
  asOf: Date;
  previous: StoredParcelState | null;
  /** Sales of this parcel from SDF files, beyond the two slots on the roll row. */
  recordedSales: readonly RollSale[];
}

/** One parcel with every derived fact, ready to store and publish. */
export interface BuiltParcel {
  event: ParcelIngested;
  signals: FiredSignal[];
  equity: EquityEstimate | null;
  priorRoll: PriorRoll | null;
  /** Situs line and owner name for search, already normalized. */
  situsCity: string | null;
  situsZip5: string | null;
  source: SourceRecord | null;
  /**
   * The digest of the row its facts were built from (`NalRow.digest`), which a re-ingest tells
   * that row by; null when those facts hold more than the row: recorded sales.
   */
  rowDigest: string | null;
}

function toSale(sale: RollSale | null): Sale | null {
  return sale === null
    ? null
    : {
        price: sale.price,
        year: sale.year,
        month: sale.month,
        qualification_code: sale.qualificationCode,
      };
}

function sameSale(a: RollSale, b: RollSale): boolean {
  return a.year === b.year && a.month === b.month && a.price === b.price;
}

/** The roll's two sale slots plus recorded SDF sales, newest first, each sale once. */
function saleHistory(row: NalRow, recorded: readonly RollSale[]): RollSale[] {
  const all: RollSale[] = [];
  for (const sales of [row.sales, recorded]) {
    for (const sale of sales) {
      if (!all.some((known) => sameSale(known, sale))) {
        all.push(sale);
      }
    }
  }
  return byNewestFirst(all);
}

/** Homestead: a homestead just value or the base homestead exemption (EXMPT_01). */
function isHomestead(row: NalRow): boolean {
  return (row.homesteadJustValue ?? 0) > 0 || (row.homesteadExemption ?? 0) > 0;
}

/**
 * The prior roll a comparison signal looks at: the stored parcel when it came from an earlier
 * roll year, else whatever prior roll the stored parcel already carried (a restated roll of the
 * same year compares with the same previous year).
 */
function priorRollOf(previous: StoredParcelState | null, rollYear: number): PriorRoll | null {
  if (previous === null) {
    return null;
  }
  if (previous.rollYear < rollYear) {
    return {
      rollYear: previous.rollYear,
      homestead: previous.homestead,
      justValue: previous.justValue,
    };
  }
  return previous.priorRoll;
}

/**
 * What a roll row says once normalized, and its content hash: all a diff needs to tell an
 * unchanged parcel, which then needs nothing more (`finishParcel` derives the rest).
 */
export interface RollFacts {
  row: NalRow;
  /** The facts the content hash is taken over, in the record's shape. */
  facts: {
    county_no: number;
    parcel_id: string;
    roll_year: number;
    roll_stage: RollStage;
    situs: ParcelIngested["situs"];
    land_use: ParcelIngested["land_use"];
    owner: ParcelIngested["owner"];
    just_value: number;
    assessed_value: number | null;
    taxable_value: number | null;
    land_value: number | null;
    year_built: number | null;
    living_area_sqft: number | null;
    land_sqft: number | null;
    homestead: boolean;
    last_sale: Sale | null;
    last_qualified_sale: Sale | null;
  };
  contentHash: string;
  history: RollSale[];
  lastSale: RollSale | null;
  situsLine1: string | null;
  mailingLine1: string | null;
}

/** Normalizes a roll row's facts and hashes them. Pure. */
export function rollFactsOf(
  row: NalRow,
  context: Pick<ParcelContext, "rollStage" | "recordedSales">,
): RollFacts {
  const history = saleHistory(row, context.recordedSales);
  const lastSale = history[0] ?? null;
  const lastQualified = history.find(isQualifiedSale) ?? null;
  const situsLine1 = cleanText(row.situsAddress1);
  const mailingLine1 = cleanText(row.ownerAddress1);
  const facts = {
    county_no: row.countyNo,
    parcel_id: row.parcelId,
    roll_year: row.rollYear,
    roll_stage: context.rollStage,
    situs: {
      address: joinLines(situsLine1, cleanText(row.situsAddress2)),
      city: cleanText(row.situsCity),
      zip: normalizeZip(row.situsZip),
    },
    land_use: {
      dor_uc: row.dorUc,
      use_class: useClassOf(row.dorUc),
      appraiser_uc: row.appraiserUc,
    },
    owner: {
      name: cleanText(row.ownerName) ?? "",
      mailing_state: stateCode(row.ownerState),
      mailing_address: {
        line1: mailingLine1,
        line2: cleanText(row.ownerAddress2),
        city: cleanText(row.ownerCity),
        state: row.ownerState,
        zip: normalizeZip(row.ownerZip),
      },
    },
    just_value: row.justValue,
    assessed_value: row.assessedValue,
    taxable_value: row.taxableValue,
    land_value: row.landValue,
    year_built: row.yearBuilt,
    living_area_sqft: row.livingAreaSqft,
    land_sqft: row.landSqft,
    homestead: isHomestead(row),
    last_sale: toSale(lastSale),
    last_qualified_sale: toSale(lastQualified),
  };
  return {
    row,
    facts,
    contentHash: contentHashOf(facts),
    history,
    lastSale,
    situsLine1,
    mailingLine1,
  };
}

/**
 * Derives a lead from one roll row: normalized owner and situs, use class, homestead, sales,
 * the equity estimate and the signals. Pure: the same row and context give the same result.
 */
export function buildParcel(row: NalRow, context: ParcelContext): BuiltParcel {
  return finishParcel(rollFactsOf(row, context), context);
}

/** The rest of a lead from its roll facts: the equity estimate, the signals and the record. */
export function finishParcel(roll: RollFacts, context: ParcelContext): BuiltParcel {
  const { row, facts } = roll;
  const equity = estimateEquity(row.justValue, roll.history, context.asOf);
  const priorRoll = priorRollOf(context.previous, row.rollYear);
  const situsZip5 = zip5(facts.situs.zip);
  const mailingStreet = comparableStreet(roll.mailingLine1);
  const signals = evaluateSignals({
    homestead: facts.homestead,
    useClass: facts.land_use.use_class,
    dorUc: row.dorUc,
    ownerName: facts.owner.name,
    fiduciaryName: cleanText(row.fiduciaryName),
    mailingStreet,
    mailingZip5: zip5(facts.owner.mailing_address.zip),
    mailingState: facts.owner.mailing_state,
    // The same line reduces to the same street: most owners get their mail at the parcel.
    situsStreet:
      roll.situsLine1 === roll.mailingLine1 ? mailingStreet : comparableStreet(roll.situsLine1),
    situsZip5,
    justValue: row.justValue,
    equity,
    lastSale: roll.lastSale,
    publicLand: row.publicLand,
    priorRoll,
    asOf: context.asOf,
  });

  const event: ParcelIngested = {
    ingest_id: context.ingestId,
    folio: folioOf(row.countyNo, row.parcelId),
    county_no: row.countyNo,
    parcel_id: row.parcelId,
    roll_year: row.rollYear,
    roll_stage: context.rollStage,
    source_file: context.sourceFile,
    content_hash: roll.contentHash,
    previous_content_hash: context.previous?.contentHash ?? null,
    situs: facts.situs,
    land_use: facts.land_use,
    owner: facts.owner,
    valuation: {
      just_value: row.justValue,
      assessed_value: row.assessedValue,
      taxable_value: row.taxableValue,
      land_value: row.landValue,
      est_equity: equity?.estEquity ?? null,
      equity_ratio: equity?.equityRatio ?? null,
    },
    year_built: row.yearBuilt,
    living_area_sqft: row.livingAreaSqft,
    land_sqft: row.landSqft,
    homestead: facts.homestead,
    last_sale: facts.last_sale,
    last_qualified_sale: facts.last_qualified_sale,
    signals_fired: signals.map((signal) => signal.name),
    observed_at: context.observedAt,
  };
  const source =
    context.sourceFileId === undefined
      ? null
      : { fileId: context.sourceFileId, line: row.line, seqNo: row.seqNo };
  return {
    event,
    signals,
    equity,
    priorRoll,
    situsCity: facts.situs.city,
    situsZip5,
    source,
    // Recorded sales are facts the row's text does not hold: such a parcel keeps no digest.
    rowDigest: context.recordedSales.length === 0 ? row.digest : null,
  };
}

/**
 * Hex SHA-256 of the normalized roll facts. Derived facts (signals, equity) are left out: they
 * move with the calendar, and a parcel whose roll content is unchanged is not news.
 */
function contentHashOf(rollFacts: unknown): string {
  return hash("sha256", JSON.stringify(rollFacts), "hex");
}

/** Whether an incoming roll may replace the stored one: never an older year, never P over F. */
export function isStaleRoll(
  previous: StoredParcelState | null,
  rollYear: number,
  stage: RollStage,
): boolean {
  if (previous === null) {
    return false;
  }
  if (rollYear !== previous.rollYear) {
    return rollYear < previous.rollYear;
  }
  return previous.rollStage === "final" && stage === "preliminary";
}
