import { PUBLIC_OPERATIONS } from "@th/api-schemas";
import { describe, expect, it } from "vitest";
import { edgeConfigOf, type PublicOperation } from "../routes/operation.ts";
import { sentByOwnPage } from "./csrf.ts";

const TOKEN = "c".repeat(32);
const OPERATIONS: readonly PublicOperation[] = PUBLIC_OPERATIONS;

describe("a session's proof that its own page sent a paid read", () => {
  it("is the session's CSRF token, or the browser's word that a page of this origin sent it", () => {
    expect(sentByOwnPage({ "x-csrf-token": TOKEN }, TOKEN)).toBe(true);
    expect(sentByOwnPage({ "sec-fetch-site": "same-origin" }, TOKEN)).toBe(true);
  });

  it("is not a cross-site, same-site or user-typed fetch, a missing header, or a wrong, short or repeated token", () => {
    for (const site of ["cross-site", "same-site", "none", "SAME-ORIGIN", undefined]) {
      expect(sentByOwnPage({ "sec-fetch-site": site }, TOKEN), String(site)).toBe(false);
    }
    for (const sent of ["forged", TOKEN.slice(1), `${TOKEN}c`, "", [TOKEN, TOKEN]]) {
      expect(sentByOwnPage({ "x-csrf-token": sent }, TOKEN), String(sent)).toBe(false);
    }
    // A session without a token proves nothing with an empty header.
    expect(sentByOwnPage({ "x-csrf-token": "" }, "")).toBe(false);
  });
});

describe("the operations whose answers cost lead-views", () => {
  it("are exactly the lead reads, the CSV exports, a delivery's payload and the pipeline's adds, the ones the quota can refuse", () => {
    const paid = OPERATIONS.filter((operation) => edgeConfigOf(operation)?.leadViews)
      .map((operation) => `${operation.method} ${operation.path}`)
      .sort();
    expect(paid).toEqual([
      "GET /v1/exports/leads.csv",
      "GET /v1/leads",
      "GET /v1/leads/:folio",
      "GET /v1/watchlists/:id/export.csv",
      "GET /v1/watchlists/:id/webhooks/:endpoint_id/deliveries/:delivery_id/body",
      "POST /v1/leads/batch",
      "POST /v1/pipeline/items",
      "POST /v1/pipeline/items/batch",
    ]);
  });

  it("keep their surface, and a public operation stays public only", () => {
    const csv = OPERATIONS.find((operation) => operation.operationId === "exportLeadsCsv");
    expect(csv && edgeConfigOf(csv)).toEqual({ surface: "csv", leadViews: true });
    const publicOne = OPERATIONS.find((operation) => operation.access === "public");
    expect(publicOne && edgeConfigOf(publicOne)).toEqual({ public: true });
  });
});
