// The contracts' TypeScript types are generated from the .avsc files, as the client's are from
// the OpenAPI document: a schema changed without regenerating them fails here.
import { readFileSync, writeFileSync } from "node:fs";
import { RECIPE_USE_CLASSES } from "@th/api-schemas/catalogue";
import { describe, expect, it } from "vitest";
import { renderAvroTypes, symbolsConstName } from "./avro-typescript.ts";
import { CONTRACT_TYPES_FILE, renderContractTypes } from "./contract-types.ts";
import { USE_CLASSES } from "./types.ts";

describe("packages/contracts/src/generated/avro-types.ts", () => {
  it("is what the newest revision of every schema renders to", () => {
    const rendered = renderContractTypes();
    // biome-ignore lint/style/noProcessEnv: the regeneration switch, as the client's types have
    if (process.env.AVRO_TYPES_UPDATE === "1") {
      writeFileSync(CONTRACT_TYPES_FILE, rendered);
    }
    expect(
      readFileSync(CONTRACT_TYPES_FILE, "utf8") === rendered,
      "src/generated/avro-types.ts is stale: run AVRO_TYPES_UPDATE=1 npm test -- packages/contracts/src/avro-types.test.ts",
    ).toBe(true);
  });

  it("names the same use classes in parcel.ingested as the public catalogue recipes filter on", () => {
    expect([...USE_CLASSES]).toEqual([...RECIPE_USE_CLASSES]);
  });
});

describe("TypeScript from an Avro schema", () => {
  const schema = {
    type: "record",
    name: "th.test.Thing",
    doc: "A thing.",
    fields: [
      { name: "id", type: "string", doc: "Its id." },
      { name: "count", type: "long" },
      { name: "ratio", type: ["null", "double"], default: null },
      {
        name: "kind",
        type: { type: "enum", name: "ThingStatus", symbols: ["new", "old"] },
      },
      { name: "tags", type: { type: "array", items: "string" } },
      {
        name: "owner",
        type: {
          type: "record",
          name: "Holder",
          fields: [{ name: "name", type: "string" }],
        },
      },
      { name: "since", type: "string", default: "" },
    ],
  };

  it("makes a record an interface, nullable unions `T | null`, enums a list and a union, and a field a later revision added optional", () => {
    const text = renderAvroTypes([schema], "// header\n", new Set(["Thing.since"]));
    expect(text).toContain("/** A thing. */\nexport interface Thing {\n");
    expect(text).toContain("  /** Its id. */\n  id: string;\n");
    expect(text).toContain("  count: number;\n");
    expect(text).toContain("  ratio: number | null;\n");
    expect(text).toContain('export const THING_STATUSES = ["new", "old"] as const;');
    expect(text).toContain("export type ThingStatus = (typeof THING_STATUSES)[number];");
    expect(text).toContain("  kind: ThingStatus;\n");
    expect(text).toContain("  tags: string[];\n");
    expect(text).toContain("export interface Holder {\n  name: string;\n}");
    expect(text).toContain("  owner: Holder;\n");
    expect(text).toContain("  since?: string;\n");
    // What a record holds is declared before it.
    expect(text.indexOf("interface Holder")).toBeLessThan(text.indexOf("interface Thing"));
  });

  it("declares a type two schemas share once, and refuses one they declare differently", () => {
    const status = { type: "enum", name: "Status", symbols: ["a"] };
    const other = (symbols: string[]) => ({
      type: "record",
      name: "B",
      fields: [{ name: "s", type: { ...status, symbols } }],
    });
    const a = { type: "record", name: "A", fields: [{ name: "s", type: status }] };
    const text = renderAvroTypes([a, other(["a"])], "");
    expect(text.match(/export const STATUSES/g)).toHaveLength(1);
    expect(() => renderAvroTypes([a, other(["a", "b"])], "")).toThrow(/Status differently/);
  });

  it("names an enum's list by its plural", () => {
    expect(symbolsConstName("th.parcels.UseClass")).toBe("USE_CLASSES");
    expect(symbolsConstName("TenantStatus")).toBe("TENANT_STATUSES");
    expect(symbolsConstName("Tier")).toBe("TIERS");
    expect(symbolsConstName("DeadLetterReason")).toBe("DEAD_LETTER_REASONS");
  });
});
