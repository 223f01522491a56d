/**
 * Writes realistic synthetic Florida DOR NAL roll files of any size for tests, demos and
 * benchmarks: real county numbers, cities and ZIPs, owner names with LLC/TRUST/INC/estates,
 * out-of-state and foreign mailing addresses written as codes or full names, a homestead mix,
 * sale years, prices and qualification codes, DOR use codes, and CSV that needs quoting (commas,
 * doubled quotes and line breaks inside fields). Deterministic per seed.
 *
 *   node services/parcels/src/testing/generate-nal.ts --rows 500 --seed 7 --county 23 --out dir/
 */
import { createWriteStream } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { csvField } from "@th/api-schemas/csv";
import { seededRandom } from "@th/contracts/samples";
import { COUNTY_NAMES, NAL_COLUMNS, type NalColumn } from "../domain/nal-layout.ts";

const COLUMN_INDEX = new Map<NalColumn, number>(
  NAL_COLUMNS.map((column, index) => [column, index]),
);

/** One NAL line from named values; every other column is empty. */
export function nalLine(values: Partial<Record<NalColumn, string | number>>): string {
  const fields = new Array<string>(NAL_COLUMNS.length).fill("");
  for (const [column, value] of Object.entries(values)) {
    const index = COLUMN_INDEX.get(column as NalColumn);
    if (index !== undefined && value !== undefined) {
      fields[index] = csvField(String(value));
    }
  }
  return fields.join(",");
}

export const NAL_HEADER_LINE = NAL_COLUMNS.join(",");

interface County {
  no: number;
  cities: [name: string, zipFrom: number, zipTo: number][];
}

export const GENERATOR_COUNTIES: readonly County[] = [
  {
    no: 23,
    cities: [
      ["MIAMI", 33125, 33189],
      ["HIALEAH", 33010, 33016],
      ["HOMESTEAD", 33030, 33035],
      ["MIAMI BEACH", 33139, 33141],
      ["UNINCORPORATED", 33157, 33196],
    ],
  },
  {
    no: 16,
    cities: [
      ["FORT LAUDERDALE", 33301, 33334],
      ["HOLLYWOOD", 33019, 33029],
      ["POMPANO BEACH", 33060, 33069],
      ["CORAL SPRINGS", 33065, 33076],
    ],
  },
  {
    no: 60,
    cities: [
      ["WEST PALM BEACH", 33401, 33417],
      ["BOCA RATON", 33428, 33498],
      ["JUPITER", 33458, 33478],
      ["LAKE WORTH", 33460, 33467],
    ],
  },
  {
    no: 39,
    cities: [
      ["TAMPA", 33602, 33647],
      ["BRANDON", 33510, 33511],
      ["PLANT CITY", 33563, 33567],
      ["RIVERVIEW", 33569, 33579],
    ],
  },
  {
    no: 58,
    cities: [
      ["ORLANDO", 32801, 32839],
      ["WINTER PARK", 32789, 32792],
      ["APOPKA", 32703, 32712],
    ],
  },
  {
    no: 26,
    cities: [
      ["JACKSONVILLE", 32202, 32277],
      ["JACKSONVILLE BEACH", 32250, 32250],
    ],
  },
  {
    no: 62,
    cities: [
      ["ST PETERSBURG", 33701, 33716],
      ["CLEARWATER", 33755, 33767],
      ["LARGO", 33770, 33778],
    ],
  },
  {
    no: 46,
    cities: [
      ["CAPE CORAL", 33904, 33914],
      ["FORT MYERS", 33901, 33919],
      ["LEHIGH ACRES", 33936, 33976],
    ],
  },
  {
    no: 68,
    cities: [
      ["SARASOTA", 34230, 34243],
      ["VENICE", 34285, 34293],
      ["NORTH PORT", 34286, 34291],
    ],
  },
  {
    no: 52,
    cities: [
      ["OCALA", 34470, 34482],
      ["DUNNELLON", 34431, 34434],
    ],
  },
  {
    no: 74,
    cities: [
      ["DAYTONA BEACH", 32114, 32124],
      ["DELTONA", 32725, 32738],
    ],
  },
  {
    no: 11,
    cities: [
      ["GAINESVILLE", 32601, 32653],
      ["ALACHUA", 32615, 32616],
    ],
  },
];

const SURNAMES = [
  "SMITH",
  "JOHNSON",
  "WILLIAMS",
  "GARCIA",
  "RODRIGUEZ",
  "MARTINEZ",
  "HERNANDEZ",
  "LOPEZ",
  "GONZALEZ",
  "BROWN",
  "JONES",
  "MILLER",
  "DAVIS",
  "WILSON",
  "ANDERSON",
  "THOMAS",
  "TAYLOR",
  "MOORE",
  "JACKSON",
  "PEREZ",
  "SANCHEZ",
  "RAMIREZ",
  "TORRES",
  "NGUYEN",
  "O'BRIEN",
  "MCDONALD",
  "VINGIANO",
  "ST JEAN",
  "DIAZ",
  "REYES",
  "COHEN",
  "PATEL",
  "KOWALSKI",
  "MUELLER",
  "ROSSI",
];
const GIVEN = [
  "JOHN",
  "MARY",
  "JOSE",
  "MARIA",
  "ROBERT",
  "PATRICIA",
  "MICHAEL",
  "LINDA",
  "DAVID",
  "CARMEN",
  "JAMES",
  "BARBARA",
  "LUIS",
  "ANA",
  "WILLIAM",
  "ELIZABETH",
  "CARLOS",
  "SUSAN",
  "THOMAS",
  "YOLANDA",
];
const ENTITY_WORDS = [
  "SUNSHINE",
  "CORAL",
  "PALM",
  "GULF",
  "ATLANTIC",
  "BISCAYNE",
  "EVERGLADES",
  "TROPIC",
  "MANGROVE",
  "PELICAN",
  "HARBOR",
  "KEYSTONE",
];
const ENTITY_KINDS = [
  "HOLDINGS LLC",
  "PROPERTIES LLC",
  "INVESTMENTS INC",
  "REALTY CORP",
  "CAPITAL GROUP LLC",
  "RENTALS LLC",
  "HOMES LP",
  "VENTURES LLC",
];
const STREETS = [
  "NW 7TH ST",
  "SW 8TH ST",
  "BISCAYNE BLVD",
  "CORAL WAY",
  "OCEAN DR",
  "PALM AVE",
  "MAIN ST",
  "OAK ST",
  "PINE TREE LN",
  "WEEPING WILLOW CT",
  "LAKE SHORE DR",
  "SUNRISE BLVD",
  "COUNTY ROAD 42",
  "HIBISCUS TER",
  "MANGO CIR",
  "SEMINOLE TRL",
  "NE 5TH PL",
  "GULF BLVD",
];
const OUT_OF_STATE: [code: string, name: string, city: string, zip: string][] = [
  ["NY", "NEW YORK", "BROOKLYN", "11201"],
  ["NJ", "NEW JERSEY", "HOBOKEN", "07030"],
  ["CT", "CONNECTICUT", "WEST HAVEN", "06516"],
  ["MA", "MASSACHUSETTS", "BOSTON", "02108"],
  ["GA", "GEORGIA", "ATLANTA", "30303"],
  ["NC", "NORTH CAROLINA", "CHARLOTTE", "28202"],
  ["OH", "OHIO", "COLUMBUS", "43215"],
  ["IL", "ILLINOIS", "CHICAGO", "60601"],
  ["TX", "TEXAS", "AUSTIN", "78701"],
  ["CA", "CALIFORNIA", "LOS ANGELES", "90012"],
  ["PA", "PENNSYLVANIA", "PHILADELPHIA", "19103"],
  ["MI", "MICHIGAN", "DETROIT", "48226"],
];
const FOREIGN: [city: string, state: string, zip: string][] = [
  ["TORONTO ON", "", "M5V 2T6"],
  ["MONTREAL QC", "QC", "H3B 1A7"],
  ["BOGOTA", "", ""],
];
const USE_CODES: [code: string, weight: number][] = [
  ["001", 55],
  ["004", 14],
  ["000", 8],
  ["002", 3],
  ["003", 2],
  ["008", 2],
  ["011", 2],
  ["017", 1],
  ["021", 1],
  ["039", 0.5],
  ["048", 1],
  ["040", 0.5],
  ["010", 1],
  ["052", 1],
  ["066", 0.5],
  ["070", 0.3],
  ["071", 0.5],
  ["080", 0.3],
  ["082", 0.3],
  ["086", 0.3],
  ["091", 0.3],
  ["094", 0.2],
  ["099", 0.5],
];
const USE_WEIGHT_TOTAL = USE_CODES.reduce((sum, [, weight]) => sum + weight, 0);
const QUAL_CODES: [code: string, weight: number][] = [
  ["01", 55],
  ["02", 8],
  ["11", 14],
  ["05", 3],
  ["12", 5],
  ["30", 6],
  ["37", 3],
  ["38", 2],
  ["19", 2],
  ["14", 1],
  ["41", 1],
];
const QUAL_WEIGHT_TOTAL = QUAL_CODES.reduce((sum, [, weight]) => sum + weight, 0);

/**
 * The county rows are written for: one with hand-picked cities, or any other DOR county with its
 * own name as the one city and a band of Florida zip codes of its own.
 */
function generatorCounty(countyNo: number): County {
  const known = GENERATOR_COUNTIES.find((item) => item.no === countyNo);
  if (known) {
    return known;
  }
  const name = COUNTY_NAMES[countyNo];
  if (name === undefined) {
    throw new Error(`county ${countyNo} is not a DOR county number (11..77)`);
  }
  const zipFrom = 32_000 + (countyNo - 11) * 40;
  return { no: countyNo, cities: [[name.toUpperCase(), zipFrom, zipFrom + 39]] };
}

export interface GenerateOptions {
  rows: number;
  seed: number;
  countyNo?: number;
  rollYear?: number;
}

/** Seeded draws; every helper takes its numbers from one sequence, so a seed gives one file. */
export function dice(seed: number) {
  const random = seededRandom(seed);
  return {
    random,
    pick: <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T,
    chance: (p: number) => random() < p,
    between: (from: number, to: number) => from + Math.floor(random() * (to - from + 1)),
    weighted(items: readonly [string, number][], total: number): string {
      let roll = random() * total;
      for (const [code, weight] of items) {
        roll -= weight;
        if (roll <= 0) {
          return code;
        }
      }
      return items[0]?.[0] ?? "";
    },
  };
}

type Dice = ReturnType<typeof dice>;

/** What one generated parcel is, drawn before its columns are. */
interface Draft {
  index: number;
  county: County;
  rollYear: number;
  city: string;
  zip: string;
  useCode: string;
  residential: boolean;
  vacant: boolean;
  house: string;
  situs: string;
  jv: number;
  landValue: number;
  homestead: boolean;
}

interface Mailing {
  line1: string;
  city: string;
  state: string;
  zip: string;
}

interface Sales {
  sold: boolean;
  saleYear: number;
  qual: string;
  salePrice: number;
  secondSale: boolean;
  secondYear: number;
}

/** The parcel's place, use and value. */
function draftParcel(d: Dice, county: County, rollYear: number, index: number): Draft {
  const [city, zipFrom, zipTo] = d.pick(county.cities);
  const zip = String(d.between(zipFrom, zipTo)).padStart(5, "0");
  const useCode = d.weighted(USE_CODES, USE_WEIGHT_TOTAL);
  const residential = Number(useCode) <= 9;
  const vacant = ["000", "010", "040", "070", "080"].includes(useCode);
  const house = `${d.between(100, 29999)} ${d.pick(STREETS)}`;
  const situs =
    vacant && d.chance(0.5)
      ? ""
      : useCode === "004"
        ? `${house} UNIT ${d.between(1, 40)}${d.pick(["", "A", "B"])}`
        : house;
  const base = residential ? d.between(90, 900) * 1000 : d.between(150, 6000) * 1000;
  const jv = vacant ? Math.round(base / 4) : base;
  const landValue = Math.round(jv * (vacant ? 1 : 0.25 + d.random() * 0.3));
  const homestead = residential && !vacant && d.chance(0.5);
  return {
    index,
    county,
    rollYear,
    city,
    zip,
    useCode,
    residential,
    vacant,
    house,
    situs,
    jv,
    landValue,
    homestead,
  };
}

/** An owner name in the shapes the rolls use: entities, trusts, estates, couples, people. */
function ownerName(d: Dice, homestead: boolean): string {
  const ownerKind = d.random();
  const surname = d.pick(SURNAMES);
  const given = d.pick(GIVEN);
  if (!homestead && ownerKind < 0.22) {
    return d.chance(0.1)
      ? `"${d.pick(ENTITY_WORDS)}" ${d.pick(ENTITY_KINDS)}`
      : `${d.pick(ENTITY_WORDS)} ${d.pick(ENTITY_WORDS)} ${d.pick(ENTITY_KINDS)}`;
  }
  if (ownerKind < 0.3) {
    return d.chance(0.5) ? `${surname} ${given} TR` : `${surname} FAMILY TRUST`;
  }
  if (ownerKind < 0.33) {
    return d.chance(0.5) ? `ESTATE OF ${surname} ${given}` : `${surname} ${given} EST`;
  }
  if (ownerKind < 0.45) {
    return `${surname}, ${given} & ${d.pick(GIVEN)}`;
  }
  return `${surname} ${given}${d.chance(0.3) ? ` & ${d.pick(GIVEN)}` : ""}`;
}

/** Where the owner gets mail: the parcel, elsewhere in Florida, another state or abroad. */
function mailingAddress(d: Dice, parcel: Draft): Mailing {
  const where = d.random();
  if (parcel.homestead || (where < 0.35 && parcel.situs !== "")) {
    return {
      line1: parcel.situs || parcel.house,
      city: parcel.city === "UNINCORPORATED" ? "MIAMI" : parcel.city,
      state: d.chance(0.85) ? "FL" : "FLORIDA",
      zip: parcel.zip,
    };
  }
  if (where < 0.7) {
    const [otherCity, from, to] = d.pick(d.pick(GENERATOR_COUNTIES).cities);
    return {
      line1: d.chance(0.15)
        ? `PO BOX ${d.between(1, 99999)}`
        : `${d.between(100, 29999)} ${d.pick(STREETS)}`,
      city: otherCity === "UNINCORPORATED" ? "MIAMI" : otherCity,
      state: d.chance(0.8) ? "FL" : "FLORIDA",
      zip: String(d.between(from, to)).padStart(5, "0"),
    };
  }
  if (where < 0.97) {
    const [code, name, otherCity, otherZip] = d.pick(OUT_OF_STATE);
    return {
      line1: `${d.between(1, 999)} ${d.pick(["ELM ST", "MAPLE AVE", "BROADWAY", "PARK PL"])}`,
      city: otherCity,
      state: d.chance(0.7) ? code : name,
      zip: d.chance(0.2) ? `${otherZip}${d.between(1000, 9999)}` : otherZip,
    };
  }
  const [foreignCity, state, foreignZip] = d.pick(FOREIGN);
  return {
    line1: `${d.between(1, 999)} RUE ${d.pick(SURNAMES)}`,
    city: foreignCity,
    state,
    zip: foreignZip,
  };
}

/** The last sale and, for some, the one before; nominal sales carry token prices. */
function saleHistory(d: Dice, jv: number, rollYear: number): Sales {
  const yearsOfAppreciation = (year: number) => 1.045 ** (rollYear - year);
  const sold = d.chance(0.85);
  const saleYear = sold ? (d.chance(0.6) ? d.between(2005, rollYear) : d.between(1972, 2004)) : 0;
  const qual = sold ? d.weighted(QUAL_CODES, QUAL_WEIGHT_TOTAL) : "";
  const nominal = qual === "11" || qual === "30";
  const salePrice = sold
    ? nominal
      ? d.pick([0, 10, 100])
      : Math.round(((jv / yearsOfAppreciation(saleYear)) * (0.8 + d.random() * 0.4)) / 100) * 100
    : 0;
  const secondSale = sold && saleYear > 1980 && d.chance(0.5);
  const secondYear = secondSale ? d.between(1970, saleYear - 1) : 0;
  return { sold, saleYear, qual, salePrice, secondSale, secondYear };
}

/** A legal description, now and then with a line break or quotes, as real rolls have. */
function legalDescription(d: Dice): string {
  const legalParts = [
    `LOT ${d.between(1, 60)} BLK ${d.between(1, 30)}`,
    `${d.pick(ENTITY_WORDS)} ${d.pick(["SUB", "ESTATES", "PARK", "HEIGHTS"])}`,
    `PB ${d.between(1, 180)}-${d.between(1, 99)}`,
  ];
  return d.chance(0.02)
    ? `${legalParts.join(", ")}\nLESS N 10 FT`
    : d.chance(0.03)
      ? `${legalParts[0]} "A" ${legalParts[1]}`
      : legalParts.join(" ");
}

type NalValues = Partial<Record<NalColumn, string | number>>;

function assessmentColumns(d: Dice, parcel: Draft, parcelId: string): NalValues {
  const { jv, homestead, useCode, vacant } = parcel;
  return {
    CO_NO: parcel.county.no,
    PARCEL_ID: parcelId,
    FILE_T: "R",
    ASMNT_YR: parcel.rollYear,
    BAS_STRT: d.between(1, 9),
    ATV_STRT: d.between(1, 9),
    GRP_NO: d.between(1, 5),
    DOR_UC: useCode,
    PA_UC: `${useCode.slice(1)}${d.pick(["01", "02", "00"])}`,
    JV: jv,
    AV_SD: homestead ? Math.round(jv * 0.7) : jv,
    AV_NSD: homestead ? Math.round(jv * 0.7) : Math.round(jv * 0.9),
    TV_SD: homestead ? Math.max(0, Math.round(jv * 0.7) - 25000) : jv,
    TV_NSD: homestead ? Math.max(0, Math.round(jv * 0.7) - 50000) : Math.round(jv * 0.9),
    JV_HMSTD: homestead ? jv : 0,
    AV_HMSTD: homestead ? Math.round(jv * 0.7) : 0,
    JV_NON_HMSTD_RESD: parcel.residential && !homestead ? jv : 0,
    LND_VAL: parcel.landValue,
    LND_UNTS_CD: vacant && d.chance(0.3) ? 2 : 1,
    NO_LND_UNTS: d.between(2000, 43560),
    LND_SQFOOT: d.between(2000, 43560),
  };
}

function buildingColumns(d: Dice, parcel: Draft, yearBuilt: number | ""): NalValues {
  const { useCode, vacant } = parcel;
  return {
    DT_LAST_INSPT: `${String(d.between(1, 12)).padStart(2, "0")}${String(d.between(15, 24))}`,
    IMP_QUAL: vacant ? "" : d.between(1, 6),
    CONST_CLASS: vacant ? "" : d.between(1, 5),
    EFF_YR_BLT: yearBuilt,
    ACT_YR_BLT: yearBuilt,
    TOT_LVG_AREA: vacant ? "" : d.between(600, 4800),
    NO_BULDNG: vacant ? 0 : 1,
    NO_RES_UNTS:
      parcel.residential && !vacant
        ? useCode === "003"
          ? d.between(10, 80)
          : useCode === "008"
            ? d.between(2, 9)
            : 1
        : 0,
  };
}

function saleColumns(d: Dice, parcel: Draft, sales: Sales): NalValues {
  const { sold, saleYear, qual, secondSale, secondYear } = sales;
  const yearsOfAppreciation = (year: number) => 1.045 ** (parcel.rollYear - year);
  return {
    MULTI_PAR_SAL1: sold && qual === "05" ? "M" : "",
    QUAL_CD1: qual,
    VI_CD1: sold ? (parcel.vacant ? "V" : "I") : "",
    SALE_PRC1: sold ? sales.salePrice : "",
    SALE_YR1: sold ? saleYear : "",
    SALE_MO1: sold ? d.between(1, saleYear === parcel.rollYear ? 6 : 12) : "",
    OR_BOOK1: sold ? d.between(1000, 35000) : "",
    OR_PAGE1: sold ? d.between(1, 4999) : "",
    CLERK_NO1: sold ? `${saleYear}${d.between(100000, 999999)}` : "",
    QUAL_CD2: secondSale ? d.pick(["01", "01", "02", "11"]) : "",
    VI_CD2: secondSale ? "I" : "",
    SALE_PRC2: secondSale
      ? Math.round(parcel.jv / yearsOfAppreciation(secondYear) / 100) * 100
      : "",
    SALE_YR2: secondSale ? secondYear : "",
    SALE_MO2: secondSale ? d.between(1, 12) : "",
  };
}

function ownerColumns(d: Dice, owner: string, mailing: Mailing): NalValues {
  return {
    OWN_NAME: owner,
    OWN_ADDR1: mailing.line1,
    OWN_ADDR2: d.chance(0.05) ? `APT ${d.between(1, 999)}` : "",
    OWN_CITY: mailing.city,
    OWN_STATE: mailing.state,
    OWN_ZIPCD: mailing.zip,
    OWN_STATE_DOM: mailing.state,
    FIDU_NAME:
      owner.includes("EST") && d.chance(0.5) ? `${d.pick(SURNAMES)} ${d.pick(GIVEN)} PERS REP` : "",
  };
}

function locationColumns(d: Dice, parcel: Draft, parcelId: string, legal: string): NalValues {
  const { county, situs, homestead, jv } = parcel;
  return {
    S_LEGAL: legal,
    MKT_AR: d.between(1, 99),
    NBRHD_CD: d.between(1000, 9999),
    PUBLIC_LND: ["080", "082", "086"].includes(parcel.useCode) ? d.pick(["C", "M", "S", "W"]) : "",
    TAX_AUTH_CD: d.between(100, 999),
    TWN: `${d.between(40, 56)}S`,
    RNG: `${d.between(37, 42)}E`,
    SEC: d.between(1, 36),
    CENSUS_BK: `12${String(county.no).padStart(3, "0")}${d.between(100000, 999999)}`,
    PHY_ADDR1: situs,
    PHY_CITY: parcel.city,
    PHY_ZIPCD: situs === "" && d.chance(0.5) ? "" : parcel.zip,
    ALT_KEY: d.between(1000000, 9999999),
    EXMPT_01: homestead ? 25000 : "",
    EXMPT_02: homestead && jv > 75000 ? 25000 : "",
    SEQ_NO: parcel.index + 1,
    STATE_PAR_ID: `C${county.no}-${parcelId.slice(0, 3)}-${parcelId.slice(3, 6)}-${parcelId.slice(6, 10)}-${parcelId.slice(10, 11) || "0"}`,
  };
}

/** One data line. The draws happen in a fixed order, column group by column group. */
function generateNalLine(d: Dice, county: County, rollYear: number, index: number): string {
  const parcel = draftParcel(d, county, rollYear, index);
  const owner = ownerName(d, parcel.homestead);
  const mailing = mailingAddress(d, parcel);
  const sales = saleHistory(d, parcel.jv, rollYear);
  const yearBuilt = parcel.vacant ? "" : d.between(1925, rollYear);
  const legal = legalDescription(d);
  const parcelId = `${d.pick(["01", "02", "30", "31", "35"])}${d.between(1000, 9999)}${String(index).padStart(8, "0")}`;
  return nalLine({
    ...assessmentColumns(d, parcel, parcelId),
    ...buildingColumns(d, parcel, yearBuilt),
    ...saleColumns(d, parcel, sales),
    ...ownerColumns(d, owner, mailing),
    ...locationColumns(d, parcel, parcelId, legal),
  });
}

/** Yields the header and then `rows` data lines (without line ends). */
export function* generateNalLines(options: GenerateOptions): Generator<string> {
  const d = dice(options.seed);
  const county =
    options.countyNo === undefined ? d.pick(GENERATOR_COUNTIES) : generatorCounty(options.countyNo);
  const rollYear = options.rollYear ?? 2025;
  yield NAL_HEADER_LINE;
  for (let index = 0; index < options.rows; index++) {
    yield generateNalLine(d, county, rollYear, index);
  }
}

/** Conventional DOR file name for a generated roll. */
export function nalFileName(countyNo: number, stage: "P" | "F", year: number): string {
  return `NAL${String(countyNo).padStart(2, "0")}${stage}${year}01.csv`;
}

/** Streams a generated roll to `path`, honouring back-pressure so memory stays flat. */
export async function writeNalFile(path: string, options: GenerateOptions): Promise<void> {
  const out = createWriteStream(path);
  let buffer = "";
  for (const line of generateNalLines(options)) {
    buffer += `${line}\r\n`;
    if (buffer.length > 1 << 20) {
      if (!out.write(buffer)) {
        await new Promise<void>((resolve) => out.once("drain", () => resolve()));
      }
      buffer = "";
    }
  }
  out.write(buffer);
  await new Promise<void>((resolve, reject) =>
    out.end((error?: Error | null) => (error ? reject(error) : resolve())),
  );
}

const GENERATOR_USAGE =
  "usage: generate-nal.ts --rows <n> --seed <n> [--county 11..77] [--year 2025] [--stage P|F] [--out dir|file.csv]";

/** The command line; returns the exit code (2 for a usage mistake, said in one line). */
export async function main(argv: string[]): Promise<number> {
  let values: ReturnType<typeof parseGeneratorArgs>;
  try {
    values = parseGeneratorArgs(argv);
  } catch (error) {
    console.error((error as Error).message);
    console.error(GENERATOR_USAGE);
    return 2;
  }
  if (values.help) {
    console.info(GENERATOR_USAGE);
    return 0;
  }
  const rows = Number(values.rows);
  const seed = Number(values.seed);
  const year = Number(values.year);
  const countyNo = values.county
    ? Number(values.county)
    : (GENERATOR_COUNTIES[seed % GENERATOR_COUNTIES.length]?.no ?? 23);
  if (!Number.isInteger(rows) || rows < 0 || !Number.isInteger(seed)) {
    console.error(GENERATOR_USAGE);
    return 2;
  }
  if (COUNTY_NAMES[countyNo] === undefined) {
    console.error(`--county ${values.county} is not a DOR county number (11..77)`);
    return 2;
  }
  const target = values.out.endsWith(".csv")
    ? values.out
    : join(values.out, nalFileName(countyNo, values.stage === "P" ? "P" : "F", year));
  if (!values.out.endsWith(".csv")) {
    await mkdir(values.out, { recursive: true });
  }
  await writeNalFile(target, { rows, seed, countyNo, rollYear: year });
  console.info(`wrote ${rows} rows to ${target}`);
  return 0;
}

function parseGeneratorArgs(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      rows: { type: "string", default: "1000" },
      seed: { type: "string", default: "1" },
      county: { type: "string" },
      year: { type: "string", default: "2025" },
      stage: { type: "string", default: "F" },
      out: { type: "string", default: "." },
      help: { type: "boolean", default: false },
    },
  }).values;
}

if (import.meta.main) {
  process.exitCode = await main(process.argv.slice(2));
}
