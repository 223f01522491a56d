import { describe, expect, it } from "vitest";
import { LeadDocuments } from "./lead-documents.ts";

function model(maxChars = 1_000, maxLagMs = 1_000) {
  let now = 10_000;
  const documents = new LeadDocuments({ maxChars, maxLagMs, now: () => now });
  return {
    documents,
    advance: (ms: number) => {
      now += ms;
    },
    at: () => now,
  };
}

/** Fetches a document the way the read route does: a ticket, then the fill. */
function fetched(documents: LeadDocuments, folio: string, text: string): void {
  const ticket = documents.beginFill(folio);
  if (ticket) {
    documents.fill(ticket, text);
  }
}

describe("the gateway's lead documents (decision 0390)", () => {
  it("serves nothing until its tail of parcel.ingested has caught up, nor once the tail falls behind", () => {
    const { documents, advance, at } = model();
    expect(documents.beginFill("23-A")).toBeUndefined();
    documents.caughtUp(at());
    fetched(documents, "23-A", '{"folio":"23-A"}');
    expect(documents.get("23-A")).toBe('{"folio":"23-A"}');
    advance(1_001);
    expect(documents.get("23-A")).toBeUndefined();
    expect(documents.beginFill("23-B")).toBeUndefined();
    documents.caughtUp(at());
    expect(documents.get("23-A")).toBe('{"folio":"23-A"}');
  });

  it("drops a folio the topic names, so its next read fetches it afresh", () => {
    const { documents, at } = model();
    documents.caughtUp(at());
    fetched(documents, "23-A", "old");
    documents.changed(["23-A"]);
    expect(documents.get("23-A")).toBeUndefined();
    expect(documents.chars).toBe(0);
  });

  it("keeps nothing of a fetch during which the topic named its folio (the answer may predate the change)", () => {
    const { documents, at } = model();
    documents.caughtUp(at());
    const slow = documents.beginFill("23-A");
    const other = documents.beginFill("23-A");
    documents.changed(["23-A"]);
    if (!slow || !other) {
      throw new Error("tickets expected");
    }
    documents.fill(slow, "before the change");
    documents.fill(other, "before the change too");
    expect(documents.get("23-A")).toBeUndefined();
    // A fetch that starts after the change keeps its answer.
    fetched(documents, "23-A", "after the change");
    expect(documents.get("23-A")).toBe("after the change");
  });

  it("forgets everything when the tail starts over, and keeps nothing fetched before", () => {
    const { documents, at } = model();
    documents.caughtUp(at());
    fetched(documents, "23-A", "a");
    const before = documents.beginFill("23-B");
    documents.restart();
    expect(documents.fresh).toBe(false);
    documents.caughtUp(at());
    if (!before) {
      throw new Error("ticket expected");
    }
    documents.fill(before, "b");
    expect(documents.get("23-A")).toBeUndefined();
    expect(documents.get("23-B")).toBeUndefined();
    expect(documents.size).toBe(0);
  });

  it("holds no more text than its bound, dropping the oldest first but sparing once a document read since", () => {
    const { documents, at } = model(10);
    documents.caughtUp(at());
    fetched(documents, "a", "1234");
    fetched(documents, "b", "1234");
    expect(documents.get("a")).toBe("1234");
    fetched(documents, "c", "1234");
    expect(documents.chars).toBeLessThanOrEqual(10);
    expect(documents.get("b")).toBeUndefined();
    expect(documents.get("a")).toBe("1234");
    expect(documents.get("c")).toBe("1234");
    fetched(documents, "huge", "x".repeat(11));
    expect(documents.get("huge")).toBeUndefined();
    expect(documents.get("a")).toBe("1234");
  });

  it("holds nothing when its bound is zero", () => {
    const { documents, at } = model(0);
    documents.caughtUp(at());
    expect(documents.fresh).toBe(false);
    expect(documents.beginFill("a")).toBeUndefined();
  });
});
