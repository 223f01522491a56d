import { encodeValue } from "@th/bus";
import {
  contracts,
  type ParcelIngested,
  ROLL_STAGES,
  schemaHeaderValue,
  USE_CLASSES,
} from "@th/contracts";
import { parcelIngested, parcelIngestedSparse } from "@th/contracts/samples";
import { describe, expect, it } from "vitest";
import { fieldValues } from "../domain/csv.ts";
import { mapHeader } from "../domain/header.ts";
import { NAL_COLUMN_ALIASES, NAL_COLUMNS, NAL_REQUIRED_COLUMNS } from "../domain/nal-layout.ts";
import { NalRowReader } from "../domain/nal-row.ts";
import { buildParcel } from "../domain/parcel.ts";
import { generateNalLines } from "../testing/generate-nal.ts";
import { HAND_WRITTEN_SCHEMA, ParcelRecords, writesByHand } from "./parcel-record.ts";

const avsc = (event: ParcelIngested) => encodeValue(contracts.parcelIngested, event);

/** Each event through one `ParcelRecords`, as a batch adds them. */
function handWritten(events: readonly ParcelIngested[], expected?: number): Buffer[] {
  const records = new ParcelRecords(expected);
  const answered = events.map((event) => Buffer.from(records.add(event)));
  const views = records.views();
  expect(views.map((view) => view.toString("hex"))).toEqual(
    answered.map((bytes) => bytes.toString("hex")),
  );
  return views;
}

/** Parcels built from generated county rolls, every row as the ingest types it. */
function generatedEvents(rows: number): ParcelIngested[] {
  const events: ParcelIngested[] = [];
  for (const [seed, countyNo] of [
    [1, 23],
    [2, 16],
    [3, 60],
  ] as const) {
    const lines = [...generateNalLines({ rows, seed, countyNo })];
    const header = mapHeader(
      (lines[0] ?? "").split(","),
      NAL_COLUMNS,
      NAL_COLUMN_ALIASES,
      NAL_REQUIRED_COLUMNS,
    );
    const reader = new NalRowReader(header);
    for (const [index, line] of lines.slice(1).entries()) {
      // Generated lines quote a field now and then; those are left to the CSV reader's tests.
      if (line.includes('"')) {
        continue;
      }
      const result = reader.read(fieldValues(line.split(",")), index + 2);
      if (!result.ok) {
        continue;
      }
      const parcel = buildParcel(result.row, {
        ingestId: `ing_2025F_${countyNo}_01_golden${seed}`,
        sourceFile: index % 7 === 0 ? null : `NAL${countyNo}F202501.csv`,
        rollStage: index % 3 === 0 ? "preliminary" : "final",
        observedAt: "2026-03-02T12:00:00.000Z",
        asOf: new Date("2026-03-01T00:00:00Z"),
        previous:
          index % 4 === 0
            ? {
                contentHash: "f".repeat(64),
                rollYear: 2024,
                rollStage: "final",
                homestead: index % 8 === 0,
                justValue: 150_000,
                priorRoll: null,
                source: null,
              }
            : null,
        recordedSales: [],
      });
      events.push(parcel.event);
    }
  }
  return events;
}

const withStrings = (text: string): ParcelIngested => ({
  ...parcelIngested,
  parcel_id: text,
  source_file: text,
  situs: { address: text, city: text, zip: null },
  owner: {
    ...parcelIngested.owner,
    name: text,
    mailing_address: { ...parcelIngested.owner.mailing_address, line1: text },
  },
  signals_fired: [text, text],
});

const withNumbers = (value: number): ParcelIngested => ({
  ...parcelIngested,
  county_no: (value % 2 ** 31) | 0,
  valuation: {
    just_value: value,
    assessed_value: -value,
    taxable_value: value,
    land_value: null,
    est_equity: -value,
    equity_ratio: value / 3,
  },
  land_sqft: value,
  last_sale: { price: value, year: 2020, month: 1, qualification_code: null },
});

describe("parcel.ingested records written by hand", () => {
  it("follows the current parcel.ingested schema (a new revision must be followed here too)", () => {
    expect(schemaHeaderValue(contracts.parcelIngested)).toBe(HAND_WRITTEN_SCHEMA);
    expect(writesByHand()).toBe(true);
  });

  it("writes every parcel of generated rolls byte for byte as avsc does", () => {
    const events = generatedEvents(700);
    expect(events.length).toBeGreaterThan(1500);
    const written = handWritten(events);
    for (const [index, event] of events.entries()) {
      expect(written[index]?.toString("hex"), event.folio).toBe(avsc(event).toString("hex"));
    }
  });

  it("writes the samples, every null and every symbol as avsc does", () => {
    const events: ParcelIngested[] = [
      parcelIngested,
      parcelIngestedSparse,
      ...ROLL_STAGES.map((stage) => ({ ...parcelIngested, roll_stage: stage })),
      ...USE_CLASSES.map((useClass) => ({
        ...parcelIngested,
        land_use: { ...parcelIngested.land_use, use_class: useClass },
      })),
      { ...parcelIngested, land_use: { dor_uc: null, use_class: null, appraiser_uc: null } },
      { ...parcelIngested, signals_fired: [] },
      { ...parcelIngested, signals_fired: Array.from({ length: 70 }, (_, i) => `signal_${i}`) },
    ];
    const written = handWritten(events);
    for (const [index, event] of events.entries()) {
      expect(written[index]?.toString("hex")).toBe(avsc(event).toString("hex"));
    }
  });

  it("writes strings around the one-byte length and beyond ASCII as avsc does", () => {
    const texts = [
      "",
      "A",
      "x".repeat(21),
      "x".repeat(22),
      "x".repeat(31),
      "x".repeat(32),
      "x".repeat(63),
      "x".repeat(64),
      "x".repeat(300),
      "MÜLLER JOSÉ",
      // Under 64 characters but 64 bytes or more: the length takes two bytes.
      "é".repeat(31),
      "é".repeat(32),
      "é".repeat(63),
      "中".repeat(21),
      "中".repeat(22),
      "中".repeat(63),
      "😀".repeat(16),
      "😀".repeat(31),
      "\u0000\u007f\u0080\u07ff\u0800\uffff",
    ];
    const events = texts.map(withStrings);
    const written = handWritten(events);
    for (const [index, event] of events.entries()) {
      expect(written[index]?.toString("hex"), JSON.stringify(texts[index])).toBe(
        avsc(event).toString("hex"),
      );
    }
  });

  it("writes longs beyond 32 bits, negative ones and zero as avsc does", () => {
    const values = [
      0,
      1,
      63,
      64,
      8191,
      8192,
      2 ** 30 - 1,
      2 ** 30,
      2 ** 31,
      2 ** 32 + 5,
      1e12,
      Number.MAX_SAFE_INTEGER - 1,
      -1,
      -64,
      -65,
      -(2 ** 30),
      -(2 ** 30) - 1,
      -1e12,
      Number.MIN_SAFE_INTEGER + 1,
    ];
    const events = values.map(withNumbers);
    const written = handWritten(events);
    for (const [index, event] of events.entries()) {
      expect(written[index]?.toString("hex"), String(values[index])).toBe(
        avsc(event).toString("hex"),
      );
    }
  });

  it("grows its buffer and keeps the records written before", () => {
    const events = Array.from({ length: 40 }, (_, index) =>
      withStrings(`${"Ω".repeat(index * 20)}${index}`),
    );
    const written = handWritten(events, 1);
    for (const [index, event] of events.entries()) {
      expect(written[index]?.toString("hex")).toBe(avsc(event).toString("hex"));
    }
  });

  it("refuses a value that breaks the schema, as avsc does", () => {
    const broken: unknown[] = [
      { ...parcelIngested, county_no: 1.5 },
      { ...parcelIngested, county_no: 2 ** 31 },
      { ...parcelIngested, roll_stage: "draft" },
      { ...parcelIngested, land_use: { ...parcelIngested.land_use, use_class: "lunar" } },
      { ...parcelIngested, folio: 12 },
      { ...parcelIngested, homestead: "yes" },
      { ...parcelIngested, valuation: { ...parcelIngested.valuation, just_value: 2 ** 53 - 1 } },
      { ...parcelIngested, valuation: { ...parcelIngested.valuation, just_value: 0.5 } },
      { ...parcelIngested, valuation: { ...parcelIngested.valuation, just_value: Number.NaN } },
    ];
    for (const event of broken) {
      expect(() => avsc(event as ParcelIngested)).toThrow();
      expect(() => new ParcelRecords().add(event as ParcelIngested)).toThrow(
        /does not match th.parcels.ParcelIngested/,
      );
    }
  });
});
