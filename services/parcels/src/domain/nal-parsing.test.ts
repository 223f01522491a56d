import { seededRandom } from "@th/contracts/samples";
import { describe, expect, it } from "vitest";
import { generateNalLines, NAL_HEADER_LINE, nalLine } from "../testing/generate-nal.ts";
import {
  CsvReader,
  type CsvRecord,
  fieldValues,
  LineFieldsOnDemand,
  MAX_RECORD_CHARS,
  unreadable,
} from "./csv.ts";
import { headerDriftRejects, mapHeader } from "./header.ts";
import {
  NAL_COLUMN_ALIASES,
  NAL_COLUMNS,
  NAL_REQUIRED_COLUMNS,
  parseRollFileName,
  SDF_COLUMN_ALIASES,
  SDF_COLUMNS,
  SDF_REQUIRED_COLUMNS,
} from "./nal-layout.ts";
import { NalRowReader, SdfRowReader } from "./nal-row.ts";
import { stateCode } from "./normalize.ts";
import { buildParcel, countyFolioRange, folioOf } from "./parcel.ts";

function readAll(
  text: string,
  chunkSize = 7,
  splitOnDemand = false,
): (CsvRecord & { fields: string[] })[] {
  const reader = new CsvReader();
  reader.splitOnDemand = splitOnDemand;
  const out: CsvRecord[] = [];
  for (let at = 0; at < text.length; at += chunkSize) {
    reader.push(text.slice(at, at + chunkSize), out);
  }
  reader.end(out);
  return out.map((record) => ({ ...record, fields: fieldValues(record.fields) }));
}

describe("CSV reading", () => {
  it.each([false, true])(
    "handles quotes, doubled quotes, embedded commas and newlines, CRLF, empty fields, across chunk edges (split on demand: %s)",
    (splitOnDemand) => {
      const text = 'a,b,c\r\n1,"SMITH, JOHN",x\r\n2,"LOT 5 ""A""\nLESS N 10 FT",\r\n3,,\n,"",last';
      const records = readAll(text, 7, splitOnDemand);
      expect(records.map((record) => record.fields)).toEqual([
        ["a", "b", "c"],
        ["1", "SMITH, JOHN", "x"],
        ["2", 'LOT 5 "A"\nLESS N 10 FT', ""],
        ["3", "", ""],
        ["", "", "last"],
      ]);
      // Line numbers are where each record starts; the embedded newline moves the next one down.
      expect(records.map((record) => record.line)).toEqual([1, 2, 3, 5, 6]);
      // Each record's text as it stands in the file, without its line break.
      expect(records.map((record) => record.text)).toEqual([
        "a,b,c",
        '1,"SMITH, JOHN",x',
        '2,"LOT 5 ""A""\nLESS N 10 FT",',
        "3,,",
        ',"",last',
      ]);
    },
  );

  it("reads a file whose lines end in CR alone, as a spreadsheet saved for a Mac writes it, across chunk edges", () => {
    const text = 'a,b\r1,"SMITH, JOHN"\r2,"LOT 5\rLESS N 10 FT"\r3,x\r';
    for (const chunkSize of [1, 4, 7, 1 << 16]) {
      const records = readAll(text, chunkSize);
      expect(records.map((record) => record.fields)).toEqual([
        ["a", "b"],
        ["1", "SMITH, JOHN"],
        ["2", "LOT 5\nLESS N 10 FT"],
        ["3", "x"],
      ]);
      expect(records.map((record) => record.line)).toEqual([1, 2, 3, 5]);
    }
    // A CR at a chunk's end may be the first half of a CRLF: no decision until the next chunk.
    expect(readAll("a,b\r\n1,2\r\n", 4).map((record) => record.fields)).toEqual([
      ["a", "b"],
      ["1", "2"],
    ]);
  });

  it("strips a byte-order mark and keeps a stray quote inside an unquoted field", () => {
    const records = readAll('\ufeffCO_NO,OWN_NAME\n23,O"BRIEN PAT\n');
    expect(records.map((record) => record.fields)).toEqual([
      ["CO_NO", "OWN_NAME"],
      ["23", 'O"BRIEN PAT'],
    ]);
  });

  it("rejects a record holding a NUL, another control character or bytes that were not UTF-8, and one too long to be a row", () => {
    const records = readAll(
      [
        "A,ok,1",
        "B,bad\u0000name,2",
        'C,"quoted\u0007 bell",3',
        "D,PE\ufffdA,4",
        "E,tab\tstays,5",
        `F,${"x".repeat(MAX_RECORD_CHARS)},6`,
        "G,ok,7",
      ].join("\r\n"),
      4096,
    );
    expect(records.map((record) => [record.line, record.error ?? record.fields[0]])).toEqual([
      [1, "A"],
      [2, "holds a control character (U+0000)"],
      [3, "holds a control character (U+0007)"],
      [4, "holds bytes that are not UTF-8"],
      [5, "E"],
      [6, expect.stringMatching(`^record longer than ${MAX_RECORD_CHARS} characters`)],
      [7, "G"],
    ]);
  });

  it("reports a record with no line break or closing quote in sight and reads on from its next line, holding no more than a record", () => {
    const reader = new CsvReader();
    const out: CsvRecord[] = [];
    // After a first line ending in LF, lines ending in CR alone are one over-long line; then a
    // quote never closed on line 3 with many lines after it.
    reader.push(`A,1\n${"B,2\r".repeat(20_000)}\n`, out);
    reader.push(`C,"open\n${"D,4\n".repeat(20_000)}`, out);
    reader.push("E,5\n", out);
    reader.end(out);
    const lost = out.filter((record) => record.error);
    expect(lost.map((record) => record.line)).toEqual([2, 3]);
    for (const record of lost) {
      expect(record.error).toMatch(/^record longer than 65536 characters/);
    }
    expect(lost[1]?.error).toMatch(/a line break or a closing quote is missing/);
    // The lines after the broken one are read as rows again, each under its own line number.
    expect(out.filter((record) => record.fields.at(0) === "D")).toHaveLength(20_000);
    const last = out.at(-1);
    expect(last && { ...last, fields: fieldValues(last.fields) }).toEqual({
      fields: ["E", "5"],
      line: 20_004,
      text: "E,5",
    });
  });

  it("gives a line's fields split on demand in any order read, and none past the last", () => {
    const fields = new LineFieldsOnDemand("a,,b c,d");
    expect([fields.at(2), fields.at(0), fields.at(3), fields.at(1)]).toEqual(["b c", "a", "d", ""]);
    expect([fields.at(4), fields.at(-1), fields.length]).toEqual([undefined, undefined, 4]);
    expect(new LineFieldsOnDemand("x").at(0)).toBe("x");
  });

  it("reads lines without quotes as a plain comma split, controls refused, whatever the chunks, splitting on demand or not", () => {
    // Lines of commas, tabs, lone CRs, controls, DEL, U+FFFD and letters beyond ASCII, ended by
    // LF or CRLF: each is a comma split of the line, or refused for what it holds.
    const random = seededRandom(7);
    const alphabet = [
      "A",
      "z",
      "9",
      " ",
      ",",
      ",",
      "\t",
      "\r",
      "\u0001",
      "\u007f",
      "\ufffd",
      "é",
      "中",
    ];
    const lines = Array.from(
      { length: 400 },
      (_, index) =>
        Array.from(
          { length: 1 + Math.floor(random() * 40) },
          () => alphabet[Math.floor(random() * alphabet.length)],
        ).join("") + (index % 2 === 0 ? "" : ",end"),
    ).filter((line) => !line.endsWith("\r"));
    const text = lines.map((line, index) => `${line}${index % 3 === 0 ? "\r\n" : "\n"}`).join("");
    const expected = lines.map((line, index) => {
      // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
      const control = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\ufffd]/.exec(line)?.[0];
      const error =
        control === undefined
          ? undefined
          : control === "\ufffd"
            ? "holds bytes that are not UTF-8"
            : `holds a control character (U+${control.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")})`;
      return error
        ? { line: index + 1, fields: [], error }
        : { line: index + 1, fields: line.split(","), text: line };
    });
    for (const chunkSize of [1, 3, 64, 1 << 16]) {
      expect(readAll(text, chunkSize)).toEqual(expected);
      // Split on demand, a plain line's text is left for its reader to check.
      const checked = readAll(text, chunkSize, true).map((record) => {
        const problem = record.text === undefined ? null : unreadable(record.text);
        return problem === null ? record : { line: record.line, fields: [], error: problem };
      });
      expect(checked).toEqual(expected);
    }
  });

  it("flags a quote that is never closed, naming its line and that the rest of the file is lost, instead of throwing", () => {
    const records = readAll('a,b\n1,"never closed\n2,3\n');
    expect(records[1]?.error).toBe(
      "a quote opened on line 2 is never closed: the rest of the file is not read",
    );
  });
});

const header = mapHeader(NAL_COLUMNS, NAL_COLUMNS, NAL_COLUMN_ALIASES, NAL_REQUIRED_COLUMNS);
const fieldsOf = (line: string) => readAll(`${line}\n`, 1 << 16)[0]?.fields ?? [];

describe("NAL rows", () => {
  const reader = new NalRowReader(header);

  it("reads the 165-column layout and normalizes FLORIDA and FL to one state", () => {
    const spelledOut = reader.read(
      fieldsOf(
        nalLine({
          CO_NO: 23,
          PARCEL_ID: "0101",
          ASMNT_YR: 2025,
          JV: 1000,
          OWN_STATE: "FLORIDA",
          DOR_UC: "1",
        }),
      ),
      2,
    );
    const coded = reader.read(
      fieldsOf(
        nalLine({ CO_NO: 23, PARCEL_ID: "0102", ASMNT_YR: 2025, JV: 1000, OWN_STATE: "FL" }),
      ),
      3,
    );
    expect(spelledOut.ok && coded.ok).toBe(true);
    if (spelledOut.ok && coded.ok) {
      expect(stateCode(spelledOut.row.ownerState)).toBe("FL");
      expect(stateCode(coded.row.ownerState)).toBe("FL");
      expect(spelledOut.row.dorUc).toBe("001");
    }
    expect(stateCode("Fla.")).toBe("FL");
    expect(stateCode("CONNECTICUT")).toBe("CT");
    expect(stateCode("ONTARIO")).toBeNull();
  });

  it("rejects a non-numeric value naming the column, a short row naming the field count", () => {
    expect(
      reader.read(fieldsOf(nalLine({ CO_NO: 23, PARCEL_ID: "9", ASMNT_YR: 2025, JV: "N/A" })), 7),
    ).toEqual({
      ok: false,
      reject: { line: 7, column: "JV", reason: '"N/A" is not a number', parcelId: "9" },
    });
    expect(reader.read(["23", "9", "R"], 8)).toEqual({
      ok: false,
      reject: { line: 8, column: null, reason: "expected 165 fields, found 3", parcelId: "9" },
    });
    // Beyond any roll value (and past 2^53 - 1 the Avro long of the event would refuse it).
    for (const jv of ["9007199254740991", "1000000000001"]) {
      const huge = reader.read(
        fieldsOf(nalLine({ CO_NO: 23, PARCEL_ID: "9", ASMNT_YR: 2025, JV: jv })),
        10,
      );
      expect(huge.ok ? null : huge.reject, jv).toMatchObject({
        column: "JV",
        reason: `"${jv}" is out of range`,
      });
    }
    const future = reader.read(
      fieldsOf(
        nalLine({ CO_NO: 23, PARCEL_ID: "9", ASMNT_YR: new Date().getUTCFullYear() + 2, JV: 1 }),
      ),
      11,
    );
    expect(future.ok ? null : future.reject.column).toBe("ASMNT_YR");
    const badCounty = reader.read(
      fieldsOf(nalLine({ CO_NO: 99, PARCEL_ID: "9", ASMNT_YR: 2025, JV: 1 })),
      9,
    );
    expect(badCounty.ok ? null : badCounty.reject.column).toBe("CO_NO");
  });

  it("reads by header name, so a reordered header with DBF aliases still ingests, and reports drift", () => {
    // The layout backwards, TOT_LVG_AREA under its DBF name, a column the lead never reads
    // dropped, and one nobody knows added.
    const reordered: string[] = [...NAL_COLUMNS]
      .reverse()
      .filter((column) => column !== "S_LEGAL")
      .map((column): string => (column === "TOT_LVG_AREA" ? "TOT_LVG_AR" : column))
      .concat("EXTRA_COL");
    const values: Record<string, string> = {
      PARCEL_ID: "A1",
      CO_NO: "46",
      JV: "250000",
      ASMNT_YR: "2025",
      TOT_LVG_AR: "1420",
      OWN_NAME: "DOE JANE",
    };
    const map = mapHeader(reordered, NAL_COLUMNS, NAL_COLUMN_ALIASES, NAL_REQUIRED_COLUMNS);
    const result = new NalRowReader(map).read(
      reordered.map((column) => values[column] ?? ""),
      2,
    );
    expect(result.ok && result.row).toMatchObject({
      parcelId: "A1",
      countyNo: 46,
      justValue: 250000,
      livingAreaSqft: 1420,
      ownerName: "DOE JANE",
    });
    const drift = headerDriftRejects(map);
    expect(drift).toContainEqual({
      line: 1,
      column: "EXTRA_COL",
      reason: "unexpected column in header; ignored",
    });
    expect(drift).toContainEqual({
      line: 1,
      column: "S_LEGAL",
      reason: "column missing from header; read as empty",
    });
    expect(map.missingRequired).toEqual([]);
  });

  it("skips every row of a header that lacks a column the lead is built from, such as a renamed OWN_NAME", () => {
    const renamed = NAL_COLUMNS.map((column) => (column === "OWN_NAME" ? "OWNER_NAME" : column));
    const map = mapHeader(renamed, NAL_COLUMNS, NAL_COLUMN_ALIASES, NAL_REQUIRED_COLUMNS);
    expect(map.missingRequired).toEqual(["OWN_NAME"]);
    expect(headerDriftRejects(map)).toContainEqual({
      line: 1,
      column: "OWN_NAME",
      reason: "required column missing from header; every row of this file is skipped",
    });
    expect(
      mapHeader(["CO_NO", "PARCEL_ID"], NAL_COLUMNS, NAL_COLUMN_ALIASES, NAL_REQUIRED_COLUMNS)
        .missingRequired,
    ).toEqual(expect.arrayContaining(["ASMNT_YR", "JV", "OWN_NAME"]));
  });

  it("the generator's header is exactly the DOR layout and its rows read cleanly", () => {
    expect(NAL_HEADER_LINE.split(",")).toHaveLength(165);
    expect(parseRollFileName("NAL23F202501.csv")).toEqual({
      kind: "NAL",
      countyNo: 23,
      stage: "final",
      year: 2025,
      submission: 1,
    });
    expect(parseRollFileName("SDF16P202501.csv")?.stage).toBe("preliminary");
  });

  it("the generator writes rows of the county asked for, any DOR county, and refuses a number that is none", () => {
    const countyOfRows = (countyNo: number) =>
      new Set(
        [...generateNalLines({ rows: 50, seed: 7, countyNo })]
          .slice(1)
          .map((line) => line.slice(0, line.indexOf(","))),
      );
    expect(countyOfRows(23)).toEqual(new Set(["23"]));
    // Bay County has no hand-picked cities; its rows are still Bay County's.
    expect(countyOfRows(13)).toEqual(new Set(["13"]));
    expect(() => countyOfRows(99)).toThrow("county 99 is not a DOR county number (11..77)");
  });
});

describe("SDF sales", () => {
  it("reads one sale per row, flags multi-parcel sales, and keeps them out of the purchase basis", () => {
    const map = mapHeader(SDF_COLUMNS, SDF_COLUMNS, SDF_COLUMN_ALIASES, SDF_REQUIRED_COLUMNS);
    const reader = new SdfRowReader(map);
    const row = (values: Record<string, string>) =>
      SDF_COLUMNS.map((column) => values[column] ?? "");
    const multi = reader.read(
      row({
        CO_NO: "16",
        PARCEL_ID: "474119030010",
        SALE_ID_CD: "99000120039267",
        QUAL_CD: "5",
        SALE_YR: "2023",
        SALE_MO: "4",
        SALE_PRC: "52500000",
        MULTI_PAR_SAL: "C",
      }),
      2,
    );
    const single = reader.read(
      row({
        CO_NO: "16",
        PARCEL_ID: "474119030010",
        SALE_ID_CD: "99000120039268",
        QUAL_CD: "01",
        SALE_YR: "2021",
        SALE_MO: "6",
        SALE_PRC: "350000",
      }),
      3,
    );
    expect(multi.ok && multi.row).toMatchObject({
      multiParcel: true,
      qualificationCode: "05",
      price: 52500000,
    });
    expect(single.ok && single.row).toMatchObject({ multiParcel: false, qualificationCode: "01" });
    if (!multi.ok || !single.ok) {
      return;
    }
    const nal = new NalRowReader(header).read(
      fieldsOf(
        nalLine({
          CO_NO: 16,
          PARCEL_ID: "474119030010",
          ASMNT_YR: 2025,
          JV: 500000,
          DOR_UC: "001",
        }),
      ),
      2,
    );
    if (!nal.ok) {
      throw new Error("fixture row must read");
    }
    const built = buildParcel(nal.row, {
      ingestId: "ing_test",
      sourceFile: null,
      rollStage: "final",
      observedAt: "2025-10-01T00:00:00.000Z",
      asOf: new Date("2025-10-01T00:00:00Z"),
      previous: null,
      recordedSales: [multi.row, single.row],
    });
    expect(built.event.last_sale).toEqual({
      price: 52500000,
      year: 2023,
      month: 4,
      qualification_code: "05",
    });
    expect(built.event.last_qualified_sale).toEqual({
      price: 350000,
      year: 2021,
      month: 6,
      qualification_code: "01",
    });
    expect(built.equity?.basis.price).toBe(350000);
  });

  it("rejects a sale with a non-numeric price", () => {
    const map = mapHeader(SDF_COLUMNS, SDF_COLUMNS, SDF_COLUMN_ALIASES, SDF_REQUIRED_COLUMNS);
    const fields = SDF_COLUMNS.map((column) =>
      column === "SALE_PRC"
        ? "ten"
        : column === "CO_NO"
          ? "16"
          : column === "SALE_YR"
            ? "2020"
            : column === "SALE_MO"
              ? "1"
              : "X",
    );
    const result = new SdfRowReader(map).read(fields, 4);
    expect(result.ok ? null : result.reject).toMatchObject({ line: 4, column: "SALE_PRC" });
  });
});

describe("folios", () => {
  it("of a county are the byte-wise range its folio range names, and no other county's are", () => {
    const ids = ["", "0", "0101000000010", "~~~", "Z-1", "\u00e9TAGE", "999999999999999"];
    const bytes = (text: string) => Buffer.from(text, "utf8");
    const inRange = (folio: string, range: { from: string; before: string }) =>
      Buffer.compare(bytes(folio), bytes(range.from)) >= 0 &&
      Buffer.compare(bytes(folio), bytes(range.before)) < 0;
    for (let county = 11; county <= 77; county++) {
      const range = countyFolioRange(county);
      for (const id of ids) {
        expect(inRange(folioOf(county, id), range)).toBe(true);
        expect(inRange(folioOf(county - 1, id), range)).toBe(false);
        expect(inRange(folioOf(county + 1, id), range)).toBe(false);
      }
    }
  });
});
