import type { Fields } from "./csv.ts";
import { type ColumnAt, columnsAt, FieldError, FieldReader } from "./fields.ts";
import type { HeaderMap, Reject } from "./header.ts";
import type { NalColumn, SdfColumn } from "./nal-layout.ts";

/** A sale as the roll records it: year and month, never the day. */
export interface RollSale {
  price: number;
  year: number;
  month: number;
  qualificationCode: string | null;
  /** VI_CD: V(acant) or I(mproved) at the time of sale. */
  vacantOrImproved: string | null;
  /** The price covers several parcels, so it is no basis for one parcel's loan. */
  multiParcel: boolean;
}

/** The fields of one NAL row this service uses, typed and checked. */
export interface NalRow {
  line: number;
  countyNo: number;
  parcelId: string;
  rollYear: number;
  dorUc: string | null;
  appraiserUc: string | null;
  justValue: number;
  assessedValue: number | null;
  taxableValue: number | null;
  landValue: number | null;
  homesteadJustValue: number | null;
  homesteadExemption: number | null;
  landSqft: number | null;
  yearBuilt: number | null;
  livingAreaSqft: number | null;
  residentialUnits: number | null;
  sales: RollSale[];
  ownerName: string | null;
  ownerAddress1: string | null;
  ownerAddress2: string | null;
  ownerCity: string | null;
  ownerState: string | null;
  ownerZip: string | null;
  fiduciaryName: string | null;
  situsAddress1: string | null;
  situsAddress2: string | null;
  situsCity: string | null;
  situsZip: string | null;
  publicLand: string | null;
  seqNo: number | null;
  /**
   * The row's text digested under its file's context (`rowDigestOf`), when the ingest took one: a
   * re-ingest tells the row a parcel was stored from by it. Null otherwise.
   */
  digest: string | null;
}

export type RowResult<T> = { ok: true; row: T } | { ok: false; reject: Reject };

/** The NAL columns a row is read from. */
const NAL_READ = [
  "ASMNT_YR",
  "CO_NO",
  "PARCEL_ID",
  "DOR_UC",
  "PA_UC",
  "JV",
  "AV_NSD",
  "TV_NSD",
  "LND_VAL",
  "JV_HMSTD",
  "EXMPT_01",
  "LND_SQFOOT",
  "ACT_YR_BLT",
  "TOT_LVG_AREA",
  "NO_RES_UNTS",
  "OWN_NAME",
  "OWN_ADDR1",
  "OWN_ADDR2",
  "OWN_CITY",
  "OWN_STATE",
  "OWN_ZIPCD",
  "FIDU_NAME",
  "PHY_ADDR1",
  "PHY_ADDR2",
  "PHY_CITY",
  "PHY_ZIPCD",
  "PUBLIC_LND",
  "SEQ_NO",
  "SALE_PRC1",
  "SALE_YR1",
  "SALE_MO1",
  "QUAL_CD1",
  "VI_CD1",
  "MULTI_PAR_SAL1",
  "SALE_PRC2",
  "SALE_YR2",
  "SALE_MO2",
  "QUAL_CD2",
  "VI_CD2",
  "MULTI_PAR_SAL2",
] as const satisfies readonly NalColumn[];

/** The SDF columns a sale is read from. */
const SDF_READ = [
  "CO_NO",
  "PARCEL_ID",
  "SALE_YR",
  "SALE_MO",
  "SALE_PRC",
  "OR_BOOK",
  "OR_PAGE",
  "CLERK_NO",
  "SALE_ID_CD",
  "QUAL_CD",
  "VI_CD",
  "MULTI_PAR_SAL",
] as const satisfies readonly SdfColumn[];

interface SaleSlot {
  price: ColumnAt<NalColumn>;
  year: ColumnAt<NalColumn>;
  month: ColumnAt<NalColumn>;
  qual: ColumnAt<NalColumn>;
  vi: ColumnAt<NalColumn>;
  multi: ColumnAt<NalColumn>;
}

/** Multi-parcel flags are written several ways; any of these means "one price, many parcels". */
function isMultiParcelFlag(raw: string | null): boolean {
  return raw !== null && /^(M|Y|X|C|1|MULTI)$/i.test(raw.trim());
}

const LATEST_ROLL_YEAR = new Date().getUTCFullYear() + 1;

/**
 * Reads one row with `read`, whole or not at all: a row with more or fewer fields than the header,
 * or one whose field breaks its column's rule, is rejected with its line and parcel id.
 */
function readWhole<C extends string, R>(
  f: FieldReader<C>,
  parcelId: ColumnAt<C>,
  width: number,
  fields: Fields,
  line: number,
  read: () => R,
): RowResult<R> {
  f.fields = fields;
  if (fields.length !== width) {
    return {
      ok: false,
      reject: {
        line,
        column: null,
        reason: `expected ${width} fields, found ${fields.length}`,
        parcelId: f.text(parcelId),
      },
    };
  }
  try {
    return { ok: true, row: read() };
  } catch (error) {
    if (error instanceof FieldError) {
      return {
        ok: false,
        reject: {
          line,
          column: error.column,
          reason: error.message,
          parcelId: f.text(parcelId),
        },
      };
    }
    throw error;
  }
}

/** Reads NAL rows by one file's header. A row either reads whole or is rejected whole. */
export class NalRowReader {
  readonly #reader = new FieldReader<NalColumn>();
  readonly #at: { readonly [Name in (typeof NAL_READ)[number]]: ColumnAt<Name> };
  readonly #saleSlots: readonly SaleSlot[];
  readonly #width: number;

  constructor(header: HeaderMap<NalColumn>) {
    const at = columnsAt(header.index, NAL_READ);
    this.#at = at;
    this.#saleSlots = [
      {
        price: at.SALE_PRC1,
        year: at.SALE_YR1,
        month: at.SALE_MO1,
        qual: at.QUAL_CD1,
        vi: at.VI_CD1,
        multi: at.MULTI_PAR_SAL1,
      },
      {
        price: at.SALE_PRC2,
        year: at.SALE_YR2,
        month: at.SALE_MO2,
        qual: at.QUAL_CD2,
        vi: at.VI_CD2,
        multi: at.MULTI_PAR_SAL2,
      },
    ];
    this.#width = header.width;
  }

  /**
   * The row's county and parcel id as `read` types them, or null where `read` rejects either:
   * enough to look the parcel up before typing the rest. The row's width is not counted (that
   * takes every field): `read` rejects a row of the wrong width when it is typed.
   */
  key(fields: Fields): { countyNo: number; parcelId: string } | null {
    const f = this.#reader;
    const at = this.#at;
    f.fields = fields;
    try {
      return {
        countyNo: f.requiredInteger(at.CO_NO, 11, 77),
        parcelId: f.requiredText(at.PARCEL_ID),
      };
    } catch (error) {
      if (error instanceof FieldError) {
        return null;
      }
      throw error;
    }
  }

  /** `digest`: the row's `rowDigestOf`, when its caller took one. */
  read(fields: Fields, line: number, digest: string | null = null): RowResult<NalRow> {
    const f = this.#reader;
    const at = this.#at;
    return readWhole(f, at.PARCEL_ID, this.#width, fields, line, () => {
      // A roll year ahead of next year is a typo that would make every real roll look stale.
      const rollYear = f.requiredInteger(at.ASMNT_YR, 1900, LATEST_ROLL_YEAR);
      const sales: RollSale[] = [];
      // Indexed, not destructured: no iterator and no array per slot of every row.
      for (let index = 0; index < this.#saleSlots.length; index++) {
        const { price, year, month, qual, vi, multi } = this.#saleSlots[index] as SaleSlot;
        const salePrice = f.integer(price, 0);
        const saleYear = f.integer(year, 1800, rollYear + 1);
        const saleMonth = f.integer(month, 1, 12);
        if (salePrice !== null && saleYear !== null) {
          sales.push({
            price: salePrice,
            year: saleYear,
            // The roll sometimes omits the month; January keeps the sale inside its year.
            month: saleMonth ?? 1,
            qualificationCode: f.code(qual, 2),
            vacantOrImproved: f.text(vi)?.toUpperCase() ?? null,
            multiParcel: isMultiParcelFlag(f.text(multi)),
          });
        }
      }
      return {
        line,
        countyNo: f.requiredInteger(at.CO_NO, 11, 77),
        parcelId: f.requiredText(at.PARCEL_ID),
        rollYear,
        dorUc: f.code(at.DOR_UC, 3),
        appraiserUc: f.text(at.PA_UC),
        justValue: f.requiredInteger(at.JV, 0),
        assessedValue: f.integer(at.AV_NSD, 0),
        taxableValue: f.integer(at.TV_NSD, 0),
        landValue: f.integer(at.LND_VAL, 0),
        homesteadJustValue: f.integer(at.JV_HMSTD, 0),
        homesteadExemption: f.integer(at.EXMPT_01, 0),
        landSqft: f.integer(at.LND_SQFOOT, 0),
        yearBuilt: f.integer(at.ACT_YR_BLT, 0, rollYear + 5) || null,
        livingAreaSqft: f.integer(at.TOT_LVG_AREA, 0, 2_000_000_000),
        residentialUnits: f.integer(at.NO_RES_UNTS, 0),
        sales,
        ownerName: f.text(at.OWN_NAME),
        ownerAddress1: f.text(at.OWN_ADDR1),
        ownerAddress2: f.text(at.OWN_ADDR2),
        ownerCity: f.text(at.OWN_CITY),
        ownerState: f.text(at.OWN_STATE),
        ownerZip: f.text(at.OWN_ZIPCD),
        fiduciaryName: f.text(at.FIDU_NAME),
        situsAddress1: f.text(at.PHY_ADDR1),
        situsAddress2: f.text(at.PHY_ADDR2),
        situsCity: f.text(at.PHY_CITY),
        situsZip: f.text(at.PHY_ZIPCD),
        publicLand: f.text(at.PUBLIC_LND),
        seqNo: f.integer(at.SEQ_NO),
        digest,
      };
    });
  }
}

/** One SDF row: a single sale of one parcel. */
export interface SdfSale extends RollSale {
  line: number;
  countyNo: number;
  parcelId: string;
  saleId: string;
  orBook: string | null;
  orPage: string | null;
  clerkNo: string | null;
}

export class SdfRowReader {
  readonly #reader = new FieldReader<SdfColumn>();
  readonly #at: { readonly [Name in (typeof SDF_READ)[number]]: ColumnAt<Name> };
  readonly #width: number;

  constructor(header: HeaderMap<SdfColumn>) {
    this.#at = columnsAt(header.index, SDF_READ);
    this.#width = header.width;
  }

  read(fields: Fields, line: number): RowResult<SdfSale> {
    const f = this.#reader;
    const at = this.#at;
    return readWhole(f, at.PARCEL_ID, this.#width, fields, line, () => {
      const countyNo = f.requiredInteger(at.CO_NO, 11, 77);
      const parcelId = f.requiredText(at.PARCEL_ID);
      const year = f.requiredInteger(at.SALE_YR, 1800, 2200);
      const month = f.requiredInteger(at.SALE_MO, 1, 12);
      const price = f.requiredInteger(at.SALE_PRC, 0);
      const orBook = f.text(at.OR_BOOK);
      const orPage = f.text(at.OR_PAGE);
      const clerkNo = f.text(at.CLERK_NO);
      // Without SALE_ID_CD, the deed's book/page/instrument plus date and price identify the sale.
      const saleId =
        f.text(at.SALE_ID_CD) ??
        [year, month, orBook ?? "", orPage ?? "", clerkNo ?? "", price].join("|");
      return {
        line,
        countyNo,
        parcelId,
        saleId,
        price,
        year,
        month,
        qualificationCode: f.code(at.QUAL_CD, 2),
        vacantOrImproved: f.text(at.VI_CD)?.toUpperCase() ?? null,
        multiParcel: isMultiParcelFlag(f.text(at.MULTI_PAR_SAL)),
        orBook,
        orPage,
        clerkNo,
      };
    });
  }
}
