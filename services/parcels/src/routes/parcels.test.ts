import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { leadSchema, unservedOperations } from "@th/api-schemas";
import { foliosFromHeader, INTERNAL_HEADERS } from "@th/service-kit";
import { createTestHarness, signedInject, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import { ingestFile } from "../ingest/ingest-file.ts";
import { NAL_HEADER_LINE, nalLine } from "../testing/generate-nal.ts";

let harness: TestHarness<Config>;
let app: Awaited<ReturnType<typeof buildApp>>;
let dir: string;

const parcel = (county: number, parcelId: string, extra: Record<string, string | number>) =>
  nalLine({
    CO_NO: county,
    PARCEL_ID: parcelId,
    ASMNT_YR: 2025,
    DOR_UC: "001",
    JV: 200000,
    OWN_NAME: "DOE JOHN",
    OWN_ADDR1: "1 MAIN ST",
    OWN_CITY: "MIAMI",
    OWN_STATE: "FL",
    OWN_ZIPCD: "33125",
    PHY_ADDR1: "1 MAIN ST",
    PHY_CITY: "MIAMI",
    PHY_ZIPCD: "33125",
    ...extra,
  });

beforeAll(async () => {
  harness = await createTestHarness({ config: readConfig({}), migrations: [migrations] });
  app = await buildApp(harness);
  dir = await mkdtemp(join(tmpdir(), "parcel-routes-"));
  const lines = [
    parcel(23, "0101000000010", {
      OWN_NAME: "SUNSHINE HOLDINGS LLC",
      OWN_ADDR1: "12 ELM ST",
      OWN_CITY: "WEST HAVEN",
      OWN_STATE: "CONNECTICUT",
      OWN_ZIPCD: "06516",
      JV: 412300,
      SALE_PRC1: 193000,
      SALE_YR1: 2005,
      SALE_MO1: 9,
      QUAL_CD1: "01",
    }),
    parcel(16, "SHARED01", { PHY_CITY: "FORT LAUDERDALE", PHY_ZIPCD: "33301" }),
    parcel(23, "SHARED01", {}),
  ];
  // 120 plain Miami parcels so search spans several pages.
  for (let index = 0; index < 120; index++) {
    lines.push(parcel(23, `P${String(index).padStart(4, "0")}`, { JV: 100000 + index * 1000 }));
  }
  // One file per county, as the DOR ships them.
  for (const county of [16, 23]) {
    const file = join(dir, `NAL${county}F202501.csv`);
    const rows = lines.filter((line) => line.startsWith(`${county},`));
    await writeFile(file, `${[NAL_HEADER_LINE, ...rows].join("\n")}\n`);
    await ingestFile({ pool: harness.pool, publish: async () => {} }, file, {
      asOf: new Date("2025-10-01T00:00:00Z"),
      rejectsPath: null,
    });
  }
});
afterAll(async () => {
  await app.http?.close();
  await harness.close();
  await rm(dir, { recursive: true, force: true });
});

function http() {
  if (!app.http) {
    throw new Error("no http app");
  }
  return app.http;
}

/** A call signed as the gateway signs it; for the route the URL reaches unless one is named. */
const call = (method: "GET" | "POST", url: string, body?: unknown, route?: string) =>
  http().inject(
    signedInject(http(), "parcels", {
      method,
      url,
      ...(body !== undefined ? { body } : {}),
      ...(route !== undefined ? { route } : {}),
    }),
  );
const get = (url: string) => call("GET", url);
const post = (url: string, body: unknown) => call("POST", url, body);

describe("signed internal calls", () => {
  it("refuses an unsigned request with 401 in the error shape", async () => {
    const response = await http().inject({
      method: "GET",
      url: "/internal/v1/parcels/by-folio/23-0101000000010",
    });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toMatchObject({ error: "unauthorized", detail: expect.any(String) });
  });

  it("refuses a call signed with a root this service does not accept", async () => {
    const response = await http().inject(
      signedInject(http(), "parcels", {
        method: "POST",
        url: "/internal/v1/parcels/lookup",
        body: { folios: ["23-0101000000010"] },
        root: "a-signing-root-nobody-gave-this-service",
      }),
    );
    expect(response.statusCode).toBe(401);
  });

  it("never lets a folio reach another route: `count` signed for the folio route is refused, not counted", async () => {
    const confused = await call(
      "GET",
      "/internal/v1/parcels/count",
      undefined,
      "/internal/v1/parcels/by-folio/:folio",
    );
    expect(confused.statusCode).toBe(401);
    expect(confused.body).not.toContain('"count"');
    expect((await get("/internal/v1/parcels/count")).statusCode).toBe(200);
  });

  it("refuses the development default caller keys in production", () => {
    expect(() => readConfig({ NODE_ENV: "production" })).toThrow(/INTERNAL_CALLER_KEYS/);
    const keys = `gateway:${"a-real-key-of-this-deployment-".repeat(2)}`;
    expect(
      readConfig({ NODE_ENV: "production", INTERNAL_CALLER_KEYS: keys }).INTERNAL_CALLER_KEYS,
    ).toBe(keys);
  });
});

describe("GET /internal/v1/parcels/by-folio/:folio", () => {
  it("returns the lead record with normalized owner, equity estimate and signal reasons", async () => {
    const response = await get("/internal/v1/parcels/by-folio/23-0101000000010");
    expect(response?.statusCode).toBe(200);
    const lead = leadSchema.parse(response?.json());
    expect(lead).toMatchObject({
      folio: "23-0101000000010",
      county: { number: 23, name: "Miami-Dade" },
      parcel_id: "0101000000010",
      owner: { name: "SUNSHINE HOLDINGS LLC", mailing_state: "CT" },
      address: {
        line: "1 MAIN ST",
        city: "MIAMI",
        zip: "33125",
        formatted: "1 MAIN ST, MIAMI 33125",
      },
      valuation: { just_value: 412300 },
      equity_estimate: { is_estimate: true, assumed_loan_to_value: 0.8, assumed_term_years: 30 },
      sales: {
        last_qualified_sale: { price: 193000, year: 2005, month: 9, qualification_code: "01" },
      },
    });
    expect(lead.signals_fired).toEqual(
      expect.arrayContaining([
        "absentee_owner",
        "out_of_state_owner",
        "corporate_owner",
        "long_term_owner",
        "high_equity",
      ]),
    );
    expect(lead.signals.find((signal) => signal.name === "out_of_state_owner")?.reason).toBe(
      "Owner's mailing address is in CT",
    );
  });

  it("accepts a bare parcel id that only one county has", async () => {
    const response = await get("/internal/v1/parcels/by-folio/0101000000010");
    expect(response?.statusCode).toBe(200);
    expect(response?.json().folio).toBe("23-0101000000010");
    // The gateway meters the lead by this header without parsing the body.
    expect(foliosFromHeader(String(response?.headers[INTERNAL_HEADERS.folios]))).toEqual([
      "23-0101000000010",
    ]);
  });

  it("answers 409 with the candidate folios for a bare parcel id two counties share", async () => {
    const response = await get("/internal/v1/parcels/by-folio/SHARED01");
    expect(response?.statusCode).toBe(409);
    expect(response?.json().detail).toContain("16-SHARED01, 23-SHARED01");
  });

  it("answers 404 for an unknown folio", async () => {
    const response = await get("/internal/v1/parcels/by-folio/23-NOPE");
    expect(response?.statusCode).toBe(404);
    expect(response?.json().error).toBe("not_found");
  });
});

describe("POST /internal/v1/parcels/lookup", () => {
  it("returns the folios that exist and lists the missing ones", async () => {
    const response = await post("/internal/v1/parcels/lookup", {
      folios: ["23-P0001", "23-NOPE", "16-SHARED01", "23-P0001"],
    });
    expect(response?.statusCode).toBe(200);
    const body = response?.json();
    expect(body.leads.map((lead: { folio: string }) => lead.folio)).toEqual([
      "23-P0001",
      "16-SHARED01",
    ]);
    expect(body.missing).toEqual(["23-NOPE"]);
    expect(body.ambiguous).toEqual([]);
    expect(foliosFromHeader(String(response?.headers[INTERNAL_HEADERS.folios]))).toEqual([
      "23-P0001",
      "16-SHARED01",
    ]);
  });

  it("names the folios a bare parcel id two counties share could mean, apart from the missing ones", async () => {
    const response = await post("/internal/v1/parcels/lookup", {
      folios: ["SHARED01", "0101000000010"],
    });
    expect(response?.statusCode).toBe(200);
    expect(response?.json()).toMatchObject({
      missing: [],
      ambiguous: [{ requested: "SHARED01", folios: ["16-SHARED01", "23-SHARED01"] }],
    });
    expect(response?.json().leads.map((lead: { folio: string }) => lead.folio)).toEqual([
      "23-0101000000010",
    ]);
  });

  it("rejects more than 100 folios with 400 naming the field", async () => {
    const response = await post("/internal/v1/parcels/lookup", {
      folios: Array.from({ length: 101 }, (_, index) => `23-X${index}`),
    });
    expect(response?.statusCode).toBe(400);
    expect(response?.json()).toMatchObject({ error: "invalid_request" });
    expect(response?.json().fields[0].path).toContain("folios");
  });
});

describe("GET /internal/v1/parcels (search)", () => {
  it("walks every page with the cursor, 50 per page by default, without repeats", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const url: string = `/internal/v1/parcels?county=23&city=miami${cursor ? `&cursor=${cursor}` : ""}`;
      const response = await get(url);
      expect(response?.statusCode).toBe(200);
      const body = response?.json();
      seen.push(...body.leads.map((lead: { folio: string }) => lead.folio));
      cursor = body.next_cursor;
      pages += 1;
    } while (cursor !== null);
    expect(pages).toBe(3);
    expect(seen).toHaveLength(122);
    expect(new Set(seen).size).toBe(122);
    expect([...seen].sort()).toEqual(seen);
  });

  it("takes a county's parcels and no other county's", async () => {
    const folios = async (county: number) =>
      (await get(`/internal/v1/parcels?county=${county}&limit=200`))
        ?.json()
        .leads.map((lead: { folio: string }) => lead.folio);
    expect(await folios(16)).toEqual(["16-SHARED01"]);
    const miami = await folios(23);
    expect(miami).toHaveLength(122);
    expect(miami.every((folio: string) => folio.startsWith("23-"))).toBe(true);
    expect(await folios(13)).toEqual([]);
  });

  it("filters by value range, signals and use class", async () => {
    const byValue = await get(
      "/internal/v1/parcels?min_just_value=150000&max_just_value=160000&limit=200",
    );
    expect(byValue?.json().leads).toHaveLength(11);
    const bySignals = await get("/internal/v1/parcels?signals=out_of_state_owner,corporate_owner");
    expect(bySignals?.json().leads.map((lead: { folio: string }) => lead.folio)).toEqual([
      "23-0101000000010",
    ]);
    const byZip = await get("/internal/v1/parcels?zip=33301&use_class=residential");
    expect(byZip?.json().leads.map((lead: { folio: string }) => lead.folio)).toEqual([
      "16-SHARED01",
    ]);
    const byEquity = await get("/internal/v1/parcels?min_equity=1");
    expect(byEquity?.json().leads.map((lead: { folio: string }) => lead.folio)).toEqual([
      "23-0101000000010",
    ]);
  });

  it("answers 400 with the failing fields for bad parameters", async () => {
    const response = await get(
      "/internal/v1/parcels?limit=500&county=99&zip=abc&use_class=castle&signals=absentee_owner,bogus",
    );
    expect(response?.statusCode).toBe(400);
    const paths = response?.json().fields.map((field: { path: string }) => field.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        "querystring.limit",
        "querystring.county",
        "querystring.zip",
        "querystring.use_class",
        "querystring.signals",
      ]),
    );
    expect(response?.json().detail).toContain("names no known signal: bogus");
    const badCursor = await get("/internal/v1/parcels?cursor=garbage");
    expect(badCursor?.statusCode).toBe(400);
    // Cursors carrying what no page ends on: not a folio, a NUL, bytes that are not UTF-8.
    for (const forged of ["f:' OR 1=1--", "f:23-\u0000", "f:\xff\xfe"]) {
      const cursor = Buffer.from(forged, "latin1").toString("base64url");
      const response = await get(`/internal/v1/parcels?cursor=${cursor}`);
      expect(response?.statusCode, forged).toBe(400);
      expect(response?.json().detail).toBe(
        "invalid querystring: cursor is not one this API issued",
      );
    }
    const inverted = await get("/internal/v1/parcels?min_equity=10&max_equity=5");
    expect(inverted?.statusCode).toBe(400);
  });
});

describe("the operation table", () => {
  it("has a route at the internal path of every public operation the parcels service owns", () => {
    const { owned, unserved } = unservedOperations("parcels", (route) =>
      Boolean(app.http?.hasRoute(route)),
    );
    expect(owned).toBeGreaterThan(0);
    expect(unserved).toEqual([]);
  });
});
