import { createWriteStream, type WriteStream } from "node:fs";
import { spreadsheetCell } from "@th/api-schemas/csv";
import type { Reject } from "../domain/header.ts";

const KEPT_REJECTS = 1000;

/** Collects rejects: keeps the first ones in memory, writes every one to the report file. */
export class RejectsReport {
  readonly path: string | null;
  readonly kept: Reject[] = [];
  count = 0;
  #stream: WriteStream | undefined;

  constructor(path: string | null) {
    this.path = path;
  }

  add(reject: Reject): void {
    this.count += 1;
    if (this.kept.length < KEPT_REJECTS) {
      this.kept.push(reject);
    }
    if (this.path !== null) {
      if (!this.#stream) {
        this.#stream = createWriteStream(this.path);
        this.#stream.write("line,column,parcel_id,reason\n");
      }
      this.#stream.write(
        `${[reject.line, reject.column ?? "", reject.parcelId ?? "", reject.reason].map(spreadsheetCell).join(",")}\n`,
      );
    }
  }

  /** Rows rejected; header-drift lines (line 1) are reported but are not rows. */
  rowRejects(): number {
    return this.count - this.kept.filter((reject) => reject.line === 1).length;
  }

  async close(): Promise<void> {
    const stream = this.#stream;
    if (stream) {
      await new Promise<void>((resolve, reject) =>
        stream.end((error?: Error | null) => (error ? reject(error) : resolve())),
      );
    }
  }
}

/** The report line of a record dropped because its file holds a later one of the same parcel. */
export function duplicateReject(
  dropped: { line: number; parcelId: string },
  keptLine: number,
): Reject {
  return {
    line: dropped.line,
    column: "PARCEL_ID",
    reason: `duplicate parcel in file; kept line ${keptLine}`,
    parcelId: dropped.parcelId,
  };
}
