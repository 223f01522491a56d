// CSV export end to end: the tier gate, RFC 4180 output read back by a real CSV parser, metering
// one lead-view per row, refusal up front when the quota cannot cover it, and streaming with
// back-pressure (the server reads ahead only as far as the client consumes).
import { mkdtempSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeNalFile } from "@th/parcels/generate";
import { parse } from "csv-parse/sync";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";

let stack: EdgeStack;
let sampleCount = 0;
const LARGE_ROWS = 10_000;

beforeAll(async () => {
  stack = await startEdgeStack();
  sampleCount = (await stack.ingestSample()).length;
  const file = join(mkdtempSync(join(tmpdir(), "th-export-")), "NAL16F202501.csv");
  await writeNalFile(file, { rows: LARGE_ROWS, seed: 7, countyNo: 16, rollYear: 2025 });
  await stack.ingestSample(file);
}, 120_000);
afterAll(() => stack.close());

/** The body of an HTTP/1.1 chunked response. */
function dechunk(bytes: Buffer): string {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = bytes.indexOf("\r\n", at);
    const size = Number.parseInt(bytes.subarray(at, lineEnd).toString("latin1"), 16);
    if (!size) {
      return Buffer.concat(parts).toString("utf8");
    }
    parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

async function listedMatches(watchlistId: string, key: string): Promise<number> {
  let listed = 0;
  let cursor = "";
  for (;;) {
    const page = await stack.request(
      "GET",
      `/v1/watchlists/${watchlistId}/matches?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      { key },
    );
    const body = page.json() as { matches: unknown[]; next_cursor: string; has_more: boolean };
    listed += body.matches.length;
    if (!body.has_more) {
      return listed;
    }
    cursor = body.next_cursor;
  }
}

/** The distinct parcels of a watchlist's matches, from the free listing. */
async function matchedFolios(watchlistId: string, key: string): Promise<Set<string>> {
  const folios = new Set<string>();
  let cursor = "";
  for (;;) {
    const page = await stack.request(
      "GET",
      `/v1/watchlists/${watchlistId}/matches?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      { key },
    );
    const body = page.json() as {
      matches: { folio: string }[];
      next_cursor: string;
      has_more: boolean;
    };
    for (const match of body.matches) {
      folios.add(match.folio);
    }
    if (!body.has_more) {
      return folios;
    }
    cursor = body.next_cursor;
  }
}

/** The watchlist's match count once the listing shows every match and no more arrive. */
async function settledMatchCount(watchlistId: string, key: string): Promise<number> {
  let previous = -1;
  for (let attempt = 0; attempt < 60; attempt++) {
    const summary = await stack.request("GET", `/v1/watchlists/${watchlistId}`, { key });
    const counted = summary.json().match_count as number;
    const listedNow = await listedMatches(watchlistId, key);
    if (counted === listedNow && counted === previous) {
      return counted;
    }
    previous = counted;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error("the watchlist's matches did not settle");
}

async function remainingOf(key: string) {
  return Number(
    (await stack.request("GET", "/v1/me", { key })).headers["x-quota-lead-views-remaining"],
  );
}

describe("CSV export", () => {
  it("is refused to Starter, whose tier lacks CSV, with 403 and an upgrade URL", async () => {
    const tenant = await stack.startTrial("starter");
    const response = await stack.request("GET", "/v1/exports/leads.csv?county=23", {
      key: tenant.key,
    });
    expect(response.statusCode).toBe(403);
    expect(response.json()).toMatchObject({ error: "tier_required" });
  });

  it("streams every lead of a search as RFC 4180 CSV and charges one lead-view per row", async () => {
    const tenant = await stack.startTrial("operator");
    const response = await stack.request("GET", "/v1/exports/leads.csv?county=23", {
      key: tenant.key,
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toContain("text/csv");
    const rows = parse(response.body, { columns: true }) as Record<string, string>[];
    expect(rows).toHaveLength(sampleCount);
    expect(new Set(rows.map((row) => row.folio)).size).toBe(sampleCount);
    expect(rows.every((row) => row.folio?.startsWith("23-"))).toBe(true);
    expect(await remainingOf(tenant.key)).toBe(2000 - sampleCount);
  });

  it("stops at max_rows and charges only the rows written", async () => {
    const tenant = await stack.startTrial("operator");
    const response = await stack.request("GET", "/v1/exports/leads.csv?county=23&max_rows=5", {
      key: tenant.key,
    });
    expect(parse(response.body, { columns: true })).toHaveLength(5);
    expect(await remainingOf(tenant.key)).toBe(1995);
  });

  it("answers HEAD with 405 (Allow: GET), charging nothing", async () => {
    const tenant = await stack.startTrial("operator");
    const response = await stack.request("HEAD", "/v1/exports/leads.csv?county=23&max_rows=5", {
      key: tenant.key,
    });
    expect(response.statusCode).toBe(405);
    expect(response.headers.allow).toBe("GET");
    expect(await remainingOf(tenant.key)).toBe(2000);
  });

  it("is refused up front with 402 when the remaining lead-views cannot cover it, charging nothing", async () => {
    const tenant = await stack.startTrial("custom");
    await stack.setCustomLimits(tenant.tenantId, { lead_views_per_month: 10 });
    const response = await stack.request("GET", "/v1/exports/leads.csv?county=23", {
      key: tenant.key,
    });
    expect(response.statusCode).toBe(402);
    expect(response.json()).toMatchObject({ error: "quota_exceeded" });
    expect(await remainingOf(tenant.key)).toBe(10);
  });

  it("is priced against the ledger's count when the counter is not in Redis (a flush), not against the whole cap", async () => {
    const tenant = await stack.startTrial("custom");
    await stack.setCustomLimits(tenant.tenantId, { lead_views_per_month: 30 });
    const read = await stack.request("GET", "/v1/leads?county=23&limit=25", { key: tenant.key });
    expect(read.json().leads).toHaveLength(25);
    await vi.waitFor(
      async () =>
        expect((await stack.request("GET", "/v1/usage", { key: tenant.key })).json().used).toBe(25),
      { timeout: 10_000 },
    );
    // A flush loses the period's counter and the day's viewed parcels alike.
    const prefix = stack.harness.redis.options.keyPrefix ?? "";
    const counters = await stack.harness.redis.keys(`*lv:used:${tenant.tenantId}*`);
    expect(counters).toHaveLength(1);
    const days = await stack.harness.redis.keys(`*lv:day:${tenant.tenantId}:*`);
    await stack.harness.redis.del(...[...counters, ...days].map((key) => key.slice(prefix.length)));
    // The first 30 parcels of the search: the 25 read above, free again, and 5 new.
    const fits = await stack.request("GET", "/v1/exports/leads.csv?county=23&max_rows=30", {
      key: tenant.key,
    });
    expect(fits.statusCode).toBe(200);
    expect(parse(fits.body, { columns: true })).toHaveLength(30);
    expect(await remainingOf(tenant.key)).toBe(0);
    const response = await stack.request("GET", "/v1/exports/leads.csv?county=23&max_rows=31", {
      key: tenant.key,
    });
    expect(response.statusCode).toBe(402);
    expect(response.json()).toMatchObject({ error: "quota_exceeded" });
    expect(response.json().detail).toContain("1 of them not viewed today");
    expect(response.json().detail).toContain("0 lead-views remain");
  });

  it("C2 and L2: an export of parcels viewed today costs nothing, so it is priced by its new lead-views, not its rows", async () => {
    const tenant = await stack.startTrial("custom");
    await stack.setCustomLimits(tenant.tenantId, { lead_views_per_month: 10 });
    const read = await stack.request("GET", "/v1/leads?county=23&limit=10", { key: tenant.key });
    expect(read.json().leads).toHaveLength(10);
    expect(await remainingOf(tenant.key)).toBe(0);
    // The same ten parcels, the same UTC day: free, with the quota spent.
    const again = await stack.request("GET", "/v1/exports/leads.csv?county=23&max_rows=10", {
      key: tenant.key,
    });
    expect(again.statusCode).toBe(200);
    const rows = parse(again.body, { columns: true }) as Record<string, string>[];
    expect(rows.map((row) => row.folio)).toEqual(
      read.json().leads.map((lead: { folio: string }) => lead.folio),
    );
    expect(await remainingOf(tenant.key)).toBe(0);
    // One parcel more is one new lead-view, which the quota cannot cover: refused, nothing sent.
    const more = await stack.request("GET", "/v1/exports/leads.csv?county=23&max_rows=11", {
      key: tenant.key,
    });
    expect(more.statusCode).toBe(402);
    expect(more.body).not.toContain("folio,");
  });

  it("exports a watchlist's matches with score and signals first, charging each parcel once", async () => {
    const tenant = await stack.startTrial("operator");
    const created = await stack.request("POST", "/v1/watchlists", {
      key: tenant.key,
      body: {
        name: "Absentee Miami-Dade",
        recipe: { filters: { counties: [23] }, required_signals: ["absentee_owner"] },
      },
    });
    expect(created.statusCode).toBe(201);
    const watchlist = created.json();
    await stack.request("POST", `/v1/watchlists/${watchlist.id}/run`, { key: tenant.key });
    await stack.matcher.runs.settle();
    // The export reads the match listing, which shows a match once every transaction older than
    // it has ended anywhere on the Postgres server (so a polling cursor never skips a late
    // commit), and matches of the earlier ingests may still be arriving: wait until the count and
    // the listing agree and hold still.
    const matchCount = await settledMatchCount(watchlist.id, tenant.key);
    expect(matchCount).toBeGreaterThan(0);
    const response = await stack.request("GET", `/v1/watchlists/${watchlist.id}/export.csv`, {
      key: tenant.key,
    });
    expect(response.statusCode).toBe(200);
    const rows = parse(response.body, { columns: true }) as Record<string, string>[];
    expect(rows).toHaveLength(matchCount);
    expect(Object.keys(rows[0] ?? {}).slice(0, 4)).toEqual([
      "score",
      "signals_fired",
      "matched_at",
      "folio",
    ]);
    expect(rows.every((row) => row.signals_fired?.includes("absentee_owner"))).toBe(true);
    expect(await remainingOf(tenant.key)).toBe(2000 - new Set(rows.map((row) => row.folio)).size);
    const other = await stack.startTrial("operator");
    const foreign = await stack.request("GET", `/v1/watchlists/${watchlist.id}/export.csv`, {
      key: other.key,
    });
    expect(foreign.statusCode).toBe(404);
  });

  it("prices a watchlist's export by its distinct parcels: a parcel matched twice is one lead-view", async () => {
    const tenant = await stack.startTrial("custom");
    const created = await stack.request("POST", "/v1/watchlists", {
      key: tenant.key,
      body: {
        name: "Absentee Miami-Dade, run twice",
        recipe: { filters: { counties: [23] }, required_signals: ["absentee_owner"] },
      },
    });
    const watchlist = created.json();
    // Two manual runs: each is a fresh set of matches, so every parcel is matched twice.
    for (let run = 0; run < 2; run++) {
      await stack.request("POST", `/v1/watchlists/${watchlist.id}/run`, { key: tenant.key });
      await stack.matcher.runs.settle();
    }
    const matchCount = await settledMatchCount(watchlist.id, tenant.key);
    const distinct = (await matchedFolios(watchlist.id, tenant.key)).size;
    expect(distinct).toBeGreaterThan(0);
    expect(matchCount).toBe(2 * distinct);
    // Exactly the parcels' worth of lead-views, half the rows.
    await stack.setCustomLimits(tenant.tenantId, { lead_views_per_month: distinct });
    expect(await remainingOf(tenant.key)).toBe(distinct);
    const response = await stack.request("GET", `/v1/watchlists/${watchlist.id}/export.csv`, {
      key: tenant.key,
    });
    expect(response.statusCode).toBe(200);
    const rows = parse(response.body, { columns: true }) as Record<string, string>[];
    expect(rows).toHaveLength(matchCount);
    expect(new Set(rows.map((row) => row.folio)).size).toBe(distinct);
    expect(await remainingOf(tenant.key)).toBe(0);
  });

  it(`streams a ${LARGE_ROWS}-row export with back-pressure: nothing is read far ahead of the client`, async () => {
    const tenant = await stack.startTrial("custom");
    await stack.setCustomLimits(tenant.tenantId, {
      lead_views_per_month: 50_000,
      rate_per_minute: 100_000,
    });
    const http = stack.gateway.http;
    if (!http) {
      throw new Error("no gateway");
    }
    // Over a Unix socket, which the kernel does not autotune: what the server can push ahead of
    // a client that stops reading is then a fixed couple of hundred KB, not the tens of MB a
    // loopback TCP connection may grow to on a machine with large TCP buffers. The server's
    // back-pressure is the same code over either transport.
    const path = join(mkdtempSync(join(tmpdir(), "th-export-socket-")), "gateway.sock");
    await http.listen({ path });
    // A raw client that stops reading once the headers are in (an HTTP client would read ahead).
    const socket = connect(path);
    const received: Buffer[] = [];
    let headersSeen = false;
    const headersIn = new Promise<void>((resolve) => {
      socket.on("data", (chunk: Buffer) => {
        received.push(chunk);
        if (!headersSeen && Buffer.concat(received).includes("\r\n\r\n")) {
          headersSeen = true;
          socket.pause();
          resolve();
        }
      });
    });
    socket.write(
      `GET /v1/exports/leads.csv?county=16 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${tenant.key}\r\nConnection: close\r\n\r\n`,
    );
    await headersIn;
    expect(Buffer.concat(received).toString("latin1")).toMatch(/^HTTP\/1\.1 200 /);
    // The server may fill the socket buffers, then must stop; the test waits for the charge to
    // stop growing and requires that it stopped short of the whole export.
    let chargedWhilePaused = -1;
    for (let attempt = 0; attempt < 20; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      const charged = 50_000 - (await remainingOf(tenant.key));
      if (charged === chargedWhilePaused) {
        break;
      }
      chargedWhilePaused = charged;
    }
    expect(chargedWhilePaused).toBeGreaterThan(0);
    expect(chargedWhilePaused).toBeLessThan(LARGE_ROWS / 2);
    const ended = new Promise<void>((resolve) => socket.on("end", () => resolve()));
    socket.resume();
    await ended;
    const raw = Buffer.concat(received);
    const rows = parse(dechunk(raw.subarray(raw.indexOf("\r\n\r\n") + 4)), {
      columns: true,
    }) as Record<string, string>[];
    expect(rows).toHaveLength(LARGE_ROWS);
    expect(50_000 - (await remainingOf(tenant.key))).toBe(LARGE_ROWS);
  }, 120_000);
});

interface PlanNode {
  "Node Type": string;
  "Actual Rows": number;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

describe("the count that prices a lead export", () => {
  /** The parcels service's SQL while the request runs, as text and values. */
  async function queriesDuring(run: () => Promise<unknown>) {
    const pool = stack.harness.db.poolFor("parcels");
    const spy = vi.spyOn(pool, "query");
    try {
      await run();
      return spy.mock.calls.map(([query, values]) =>
        typeof query === "string"
          ? { text: query, values: (values ?? []) as unknown[] }
          : (query as { text: string; values: unknown[] }),
      );
    } finally {
      spy.mockRestore();
    }
  }

  /** The parcel rows a query's scans produce, by EXPLAIN ANALYZE on the parcels database. */
  async function parcelsRead(query: { text: string; values: unknown[] }): Promise<number> {
    const { rows } = await stack.harness.db
      .poolFor("parcels")
      .query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${query.text}`,
        query.values,
      );
    const plan = rows[0]?.["QUERY PLAN"][0].Plan as PlanNode;
    return nodesOf(plan)
      .filter((node) => node["Node Type"].endsWith("Scan"))
      .reduce((sum, node) => sum + node["Actual Rows"], 0);
  }

  it("reads at most max_rows parcels, however broad the search, and prices exactly the rows written", async () => {
    const tenant = await stack.startTrial("operator");
    for (const search of ["county=16&max_rows=5", "max_rows=3"]) {
      let response: Awaited<ReturnType<typeof stack.request>> | undefined;
      const queries = await queriesDuring(async () => {
        response = await stack.request("GET", `/v1/exports/leads.csv?${search}`, {
          key: tenant.key,
        });
      });
      const maxRows = Number(new URLSearchParams(search).get("max_rows"));
      expect(response?.statusCode).toBe(200);
      expect(response?.headers["x-export-rows"]).toBe(String(maxRows));
      expect(parse(response?.body ?? "", { columns: true })).toHaveLength(maxRows);
      const counts = queries.filter((query) => /count\(/i.test(query.text));
      expect(counts).toHaveLength(1);
      // Against a county of 10,000 parcels and the whole table: the count stops at max_rows.
      expect(
        await parcelsRead(counts[0] as { text: string; values: unknown[] }),
      ).toBeLessThanOrEqual(maxRows);
    }
  });
});
