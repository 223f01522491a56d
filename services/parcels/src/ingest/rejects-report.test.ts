import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { RejectsReport } from "./rejects-report.ts";

describe("the rejects report an operator opens in a spreadsheet", () => {
  it("writes a parcel id or reason from the roll file that starts like a formula after a single quote (CSV injection)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "rejects-"));
    try {
      const report = new RejectsReport(join(dir, "rejects.csv"));
      report.add({
        line: 7,
        column: "PARCEL_ID",
        parcelId: '=HYPERLINK("http://x")',
        reason: "@SUM(1+1)",
      });
      report.add({ line: 8, column: "JV", parcelId: "\tcmd", reason: "-2+3" });
      report.add({ line: 9, column: "JV", parcelId: "0101", reason: "not a number" });
      await report.close();
      const lines = (await readFile(join(dir, "rejects.csv"), "utf8")).split("\n");
      expect(lines).toEqual([
        "line,column,parcel_id,reason",
        `7,PARCEL_ID,"'=HYPERLINK(""http://x"")",'@SUM(1+1)`,
        "8,JV,'\tcmd,'-2+3",
        "9,JV,0101,not a number",
        "",
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
