import { describe, expect, it } from "vitest";
import { csvField, spreadsheetCell } from "./csv.ts";

describe("a CSV field", () => {
  it("is quoted only when it holds a comma, quote, CR or LF, its quotes doubled", () => {
    expect(csvField("MIAMI")).toBe("MIAMI");
    expect(csvField("")).toBe("");
    expect(csvField("SMITH, JOHN")).toBe('"SMITH, JOHN"');
    expect(csvField('12 "Old" Mill Rd')).toBe('"12 ""Old"" Mill Rd"');
    expect(csvField("LINE\r\nBREAK")).toBe('"LINE\r\nBREAK"');
    expect(csvField("LINE\nBREAK")).toBe('"LINE\nBREAK"');
  });

  it("is written as given otherwise, even when a spreadsheet would take it for a formula", () => {
    expect(csvField("=1+1")).toBe("=1+1");
    expect(csvField("-5")).toBe("-5");
  });
});

describe("a spreadsheet cell", () => {
  it("puts a quote mark before text a spreadsheet would run as a formula (decision 0071)", () => {
    for (const start of ["=", "+", "-", "@", "\t", "\r", "\n"]) {
      expect(spreadsheetCell(`${start}HYPERLINK("x")`)).toBe(csvField(`'${start}HYPERLINK("x")`));
    }
    expect(spreadsheetCell("-5")).toBe("'-5");
    expect(spreadsheetCell("SMITH, =JOHN")).toBe('"SMITH, =JOHN"');
  });

  it("writes numbers and booleans as they are, and an unknown value as an empty cell", () => {
    expect(spreadsheetCell(-1200)).toBe("-1200");
    expect(spreadsheetCell(0.61)).toBe("0.61");
    expect(spreadsheetCell(false)).toBe("false");
    expect(spreadsheetCell(null)).toBe("");
    expect(spreadsheetCell(undefined)).toBe("");
  });
});
