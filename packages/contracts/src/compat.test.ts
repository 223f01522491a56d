import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Type } from "avsc";
import { afterEach, describe, expect, it } from "vitest";
import {
  allContracts,
  assertBackwardCompatible,
  compatibilityProblems,
  contracts,
  fingerprintOf,
  loadSchemaRegistry,
  parseSchema,
  registry,
  schemaHeaderValue,
  writerTypeFor,
} from "./index.ts";
import * as samples from "./samples.ts";

interface FieldJson {
  name: string;
  type: unknown;
  default?: unknown;
  doc?: string;
  aliases?: string[];
}
interface RecordJson {
  type: "record";
  name: string;
  namespace?: string;
  fields: FieldJson[];
  doc?: string;
}

/** The current schema as editable JSON, docs and defaults included. */
function editable(c: { type: Type }): RecordJson {
  return structuredClone(c.type.schema({ exportAttrs: true })) as RecordJson;
}

function field(rec: RecordJson, name: string): FieldJson {
  const f = rec.fields.find((x) => x.name === name);
  if (!f) {
    throw new Error(`no field ${name}`);
  }
  return f;
}

function nested(rec: RecordJson, name: string): RecordJson {
  return field(rec, name).type as RecordJson;
}

function evolve(c: { type: Type }, edit: (rec: RecordJson) => void): Type {
  const rec = editable(c);
  edit(rec);
  return parseSchema(rec);
}

const parcels = contracts.parcelIngested;
const tenants = contracts.tenantChanged;
const views = contracts.leadViewRecorded;

describe("assertBackwardCompatible accepts additive changes", () => {
  it("accepts an identical schema", () => {
    for (const c of allContracts) {
      expect(() => assertBackwardCompatible(c.type, c.type)).not.toThrow();
    }
  });

  it("accepts a new optional field with default null", () => {
    const next = evolve(parcels, (r) =>
      r.fields.push({ name: "fiduciary_name", type: ["null", "string"], default: null }),
    );
    expect(compatibilityProblems(parcels.type, next)).toEqual([]);
  });

  it("accepts a new field inside a nested record", () => {
    const next = evolve(parcels, (r) =>
      nested(r, "owner").fields.push({
        name: "domicile_state",
        type: ["null", "string"],
        default: null,
      }),
    );
    expect(() => assertBackwardCompatible(parcels.type, next)).not.toThrow();
  });

  it("accepts a new non-null field that has a default", () => {
    const next = evolve(views, (r) => r.fields.push({ name: "units", type: "int", default: 1 }));
    expect(() => assertBackwardCompatible(views.type, next)).not.toThrow();
  });

  it("accepts a new symbol on an enum whose older readers have a default", () => {
    const next = evolve(views, (r) => {
      const surface = field(r, "surface").type as { symbols: string[] };
      surface.symbols.push("sdk");
    });
    expect(() => assertBackwardCompatible(views.type, next)).not.toThrow();
  });

  it("accepts doc-only edits without moving the fingerprint", () => {
    const next = evolve(parcels, (r) => {
      r.doc = "reworded";
      field(r, "folio").doc = "reworded too";
    });
    expect(() => assertBackwardCompatible(parcels.type, next)).not.toThrow();
    expect(fingerprintOf(next)).toBe(parcels.fingerprint);
  });
});

describe("assertBackwardCompatible rejects breaking changes", () => {
  const breaking: [string, { type: Type }, (r: RecordJson) => void, RegExp][] = [
    [
      "a removed field without default",
      parcels,
      (r) => {
        r.fields = r.fields.filter((f) => f.name !== "content_hash");
      },
      /ParcelIngested\.content_hash was removed|old schema cannot read/,
    ],
    [
      "a removed field that had a default",
      parcels,
      (r) => {
        r.fields = r.fields.filter((f) => f.name !== "source_file");
      },
      /field th\.parcels\.ParcelIngested\.source_file was removed/,
    ],
    [
      "a removed nested field",
      parcels,
      (r) => {
        const owner = nested(r, "owner");
        owner.fields = owner.fields.filter((f) => f.name !== "mailing_state");
      },
      /Owner\.mailing_state was removed/,
    ],
    [
      "a changed type",
      parcels,
      (r) => {
        field(r, "parcel_id").type = "long";
      },
      /cannot read/,
    ],
    [
      "a widened type (int to long)",
      parcels,
      (r) => {
        field(r, "roll_year").type = "long";
      },
      /old schema cannot read/,
    ],
    [
      "a required field made nullable",
      parcels,
      (r) => {
        field(r, "folio").type = ["null", "string"];
      },
      /old schema cannot read/,
    ],
    [
      "a nullable field made required",
      parcels,
      (r) => {
        const f = field(r, "source_file");
        f.type = "string";
        delete f.default;
      },
      /new schema cannot read/,
    ],
    [
      "a new field without default",
      views,
      (r) => {
        r.fields.push({ name: "region", type: "string" });
      },
      /new schema cannot read/,
    ],
    [
      "a new symbol on an enum without default",
      tenants,
      (r) => {
        (field(r, "tier").type as { symbols: string[] }).symbols.push("enterprise");
      },
      /old schema cannot read/,
    ],
    [
      "a removed enum symbol",
      views,
      (r) => {
        const surface = field(r, "surface").type as { symbols: string[] };
        surface.symbols = surface.symbols.filter((x) => x !== "csv");
      },
      /enum th\.usage\.Surface lost symbol csv/,
    ],
    [
      "a renamed record",
      tenants,
      (r) => {
        r.name = "TenantUpdated";
      },
      /cannot read/,
    ],
  ];

  it.each(breaking)("rejects %s", (_label, c, edit, message) => {
    const next = evolve(c, edit);
    expect(compatibilityProblems(c.type, next).length).toBeGreaterThan(0);
    expect(() => assertBackwardCompatible(c.type, next)).toThrow(message);
  });

  it("accepts a rename that keeps the old name as an alias", () => {
    const next = evolve(views, (r) => {
      const f = field(r, "key_id");
      f.name = "api_key_id";
      f.aliases = ["key_id"];
    });
    expect(compatibilityProblems(views.type, next).filter((p) => p.includes("removed"))).toEqual(
      [],
    );
  });
});

describe("every shipped schema version", () => {
  it("stays compatible with the current one", () => {
    for (const name of registry.names()) {
      const versions = registry.history(name);
      const current = registry.current(name);
      expect(versions.length).toBeGreaterThan(0);
      for (const v of versions) {
        expect(() => assertBackwardCompatible(v.type, current.type), `${v.file}`).not.toThrow();
        expect(writerTypeFor(`${v.schemaName}@${v.fingerprint}`)).toBeDefined();
      }
    }
  });

  it("is bound to a topic, and every topic's schema is shipped", () => {
    const bound = new Set(allContracts.map((c) => c.schemaName));
    expect([...registry.names()].sort()).toEqual([...bound].sort());
  });
});

describe("additive evolution end to end", () => {
  it("decodes a v1 record with a reader that adds an optional field", () => {
    const c = contracts.matchFound;
    const written = c.type.toBuffer(samples.matchFound);
    const header = schemaHeaderValue(c);

    const reader = evolve(c, (r) => {
      r.fields.push({ name: "county_no", type: ["null", "int"], default: null });
      nested(r, "match").fields.push({
        name: "equity_ratio",
        type: ["null", "double"],
        default: null,
      });
    });
    assertBackwardCompatible(c.type, reader);

    const writer = writerTypeFor(header);
    expect(writer).toBeDefined();
    if (!writer) {
      return;
    }
    const decoded = reader.fromBuffer(written, reader.createResolver(writer));
    expect(decoded).toEqual({
      ...samples.matchFound,
      county_no: null,
      match: { ...samples.matchFound.match, equity_ratio: null },
    });
  });

  it("fails to resolve a v1 record against a breaking reader", () => {
    const c = contracts.keyIssued;
    const writer = writerTypeFor(schemaHeaderValue(c));
    const reader = evolve(c, (r) => {
      field(r, "last4").type = "int";
    });
    expect(() => reader.createResolver(writer as Type)).toThrow();
  });

  it("changes the fingerprint, and so the header, when the schema changes", () => {
    const next = evolve(parcels, (r) =>
      r.fields.push({ name: "fiduciary_name", type: ["null", "string"], default: null }),
    );
    expect(fingerprintOf(next)).not.toBe(parcels.fingerprint);
    expect(fingerprintOf(next)).toMatch(/^[0-9a-f]{64}$/);
    // Parsing the same schema again gives the same fingerprint.
    expect(fingerprintOf(parseSchema(editable(parcels)))).toBe(parcels.fingerprint);
  });
});

describe("schema registry files", () => {
  const shipped = new URL("../schemas/", import.meta.url);
  let dir: string | undefined;

  function scratch(): string {
    dir = mkdtempSync(join(tmpdir(), "th-contracts-"));
    mkdirSync(join(dir, "parcels"));
    return dir;
  }

  afterEach(() => {
    if (dir) {
      rmSync(dir, { recursive: true, force: true });
      dir = undefined;
    }
  });

  const rootUrl = (d: string) => pathToFileURL(`${d}/`);
  const v1File = new URL("parcels/ParcelIngested.v1.avsc", shipped);

  it("registers a v2 as current and keeps v1 decodable by its header", () => {
    const d = scratch();
    copyFileSync(v1File, join(d, "parcels", "ParcelIngested.v1.avsc"));
    const v2 = editable(parcels);
    v2.fields.push({ name: "fiduciary_name", type: ["null", "string"], default: null });
    writeFileSync(join(d, "parcels", "ParcelIngested.v2.avsc"), JSON.stringify(v2));

    const reg = loadSchemaRegistry(rootUrl(d));
    const name = "th.parcels.ParcelIngested";
    expect(reg.history(name).map((v) => v.version)).toEqual([1, 2]);
    const current = reg.current(name);
    expect(current.version).toBe(2);

    const v1 = reg.forHeader(schemaHeaderValue(parcels));
    expect(v1?.version).toBe(1);
    expect(reg.forHeader(`${name}@${current.fingerprint}`)?.version).toBe(2);

    const old = parcels.type.toBuffer(samples.parcelIngested);
    const decoded = current.type.fromBuffer(
      old,
      current.type.createResolver((v1 as { type: Type }).type),
    );
    expect(decoded).toEqual({ ...samples.parcelIngested, fiduciary_name: null });
  });

  it("refuses a history with a gap", () => {
    const d = scratch();
    copyFileSync(v1File, join(d, "parcels", "ParcelIngested.v1.avsc"));
    copyFileSync(v1File, join(d, "parcels", "ParcelIngested.v3.avsc"));
    expect(() => loadSchemaRegistry(rootUrl(d))).toThrow(/without gaps/);
  });

  it("refuses a badly named file or one that defines another record", () => {
    const d = scratch();
    copyFileSync(v1File, join(d, "parcels", "ParcelIngested.avsc"));
    expect(() => loadSchemaRegistry(rootUrl(d))).toThrow(/<Name>\.v<N>\.avsc/);
    rmSync(join(d, "parcels", "ParcelIngested.avsc"));
    copyFileSync(v1File, join(d, "parcels", "Parcel.v1.avsc"));
    expect(() => loadSchemaRegistry(rootUrl(d))).toThrow(/defines th\.parcels\.ParcelIngested/);
  });
});
