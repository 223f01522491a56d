import { basename } from "node:path";
import { parseRollFileName } from "./nal-layout.ts";

/** A county's roll files, loaded one after another in the order given; the first as new. */
export interface CountyLane {
  countyNo: number | null;
  files: readonly string[];
}

/**
 * Splits the roll files of a run into lanes that may load side by side: one per county, holding
 * that county's files in the order given. Two files of one county touch the same parcels, so they
 * stay in one lane, one after the other; different counties never share a folio. A file whose
 * name gives no county is a lane of its own. Longest lane first (by file count), so a county with
 * several files does not start last and finish alone.
 */
export function countyLanes(files: readonly string[]): CountyLane[] {
  const byCounty = new Map<number, string[]>();
  const lanes: { countyNo: number | null; files: string[] }[] = [];
  for (const file of files) {
    const named = parseRollFileName(basename(file));
    const countyNo = named?.kind === "NAL" ? named.countyNo : null;
    if (countyNo === null) {
      lanes.push({ countyNo, files: [file] });
      continue;
    }
    const lane = byCounty.get(countyNo);
    if (lane) {
      lane.push(file);
      continue;
    }
    const created = [file];
    byCounty.set(countyNo, created);
    lanes.push({ countyNo, files: created });
  }
  // A stable sort: lanes of equal length keep the order of their first file.
  return lanes.sort((a, b) => b.files.length - a.files.length);
}
