// The lead page's two reads, with the browser's fetch stood in for: the list is the free
// summaries, and only expanding a lead reads the metered record. The gateway's side (one
// lead-view per expansion, on the web surface, none again that day) is test/dashboard-session's.
import { renderToStaticMarkup } from "react-dom/server";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { EMPTY_FILTERS } from "../logic.ts";
import { LeadRow, readLead, searchSummaries } from "./leads.tsx";

const summary = {
  folio: "23-3059010240130",
  county: { number: 23, name: "Miami-Dade" },
  city: "MIAMI",
  zip: "33125",
  use_class: "residential" as const,
  roll_year: 2025,
  signals_fired: ["absentee_owner"],
};

let sent: { method: string; path: string; csrf: string | null }[];

beforeEach(() => {
  sent = [];
  vi.stubGlobal("document", { cookie: "th_csrf=token" });
  vi.stubGlobal("fetch", async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    sent.push({
      method: request.method,
      path: url.pathname,
      csrf: request.headers.get("x-csrf-token"),
    });
    const body = url.pathname.startsWith("/v1/dashboard/leads")
      ? { leads: [summary], next_cursor: null }
      : { folio: summary.folio };
    return new Response(JSON.stringify(body), {
      status: 200,
      headers: { "content-type": "application/json" },
    });
  });
});

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("the lead page", () => {
  it("C4: lists free summaries, and reads the metered record only when a lead is expanded, one read per expansion", async () => {
    await searchSummaries({ ...EMPTY_FILTERS, county: "23" });
    expect(sent).toEqual([{ method: "GET", path: "/v1/dashboard/leads", csrf: "token" }]);
    await readLead(summary.folio);
    expect(sent[1]).toEqual({ method: "GET", path: `/v1/leads/${summary.folio}`, csrf: "token" });
    expect(sent).toHaveLength(2);
    // The row says what expanding costs, and shows nothing a lead-view pays for until then.
    const html = renderToStaticMarkup(<LeadRow summary={summary} />);
    expect(html).toContain("Show full record · 1 lead-view");
    expect(html).not.toContain('data-testid="lead-record"');
  });
});
