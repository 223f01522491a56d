import { describe, expect, it } from "vitest";
import {
  type ContractName,
  contracts,
  DEAD_LETTER_REASONS,
  DELIVERY_STATES,
  FAILURE_KINDS,
  isInstant,
  isUtcDay,
  KEY_REVOKE_REASONS,
  MATCH_TRIGGERS,
  PAYMENT_STANDINGS,
  PIPELINE_CHANGE_TYPES,
  PIPELINE_STAGE_CHANGE_TYPES,
  ROLL_STAGES,
  SURFACES,
  TENANT_STATUSES,
  TIERS,
  type TopicContract,
  toInstant,
  USE_CLASSES,
  utcDayOf,
} from "./index.ts";
import * as s from "./samples.ts";

type ValueOf<C> = C extends TopicContract<infer T> ? T : never;

// The mapped type makes a contract without samples, or a sample of the wrong
// TS type, a compile error; the tests below then prove each TS type against
// its Avro schema at runtime.
const samplesFor: { [K in ContractName]: readonly ValueOf<(typeof contracts)[K]>[] } = {
  parcelIngested: [s.parcelIngested, s.parcelIngestedSparse],
  matchFound: [s.matchFound, s.matchFoundSparse],
  deliveryAttempted: [s.deliveryAttempted, s.deliveryAttemptedSparse],
  deliveryRetry1s: [s.deliveryRetry, s.deliveryRetrySparse],
  deliveryRetry5s: [s.deliveryRetry, s.deliveryRetrySparse],
  deliveryRetry30s: [s.deliveryRetry, s.deliveryRetrySparse],
  deliveryRetry5m: [s.deliveryRetry, s.deliveryRetrySparse],
  deliveryDeadLetter: [s.deliveryDeadLetter, s.deliveryDeadLetterSparse],
  leadViewRecorded: [s.leadViewRecorded, s.leadViewRecordedSparse],
  leadViewVoided: [s.leadViewVoided, { ...s.leadViewVoided, folios: [] }],
  tenantChanged: [s.tenantChanged, s.tenantChangedSparse],
  keyIssued: [s.keyIssued],
  keyRevoked: [s.keyRevoked, s.keyRevokedSparse],
  pipelineItemChanged: [s.pipelineItemAdded, s.pipelineItemMovedSparse],
  pipelineStageChanged: [s.pipelineStageChanged, s.pipelineStageChangedSparse],
};

const entries = Object.entries(samplesFor) as [ContractName, readonly unknown[]][];

function invalidPaths(c: TopicContract<unknown>, value: unknown): string[] {
  const paths: string[] = [];
  c.type.isValid(value, {
    noUndeclaredFields: true,
    errorHook: (path) => paths.push(path.join(".") || "(root)"),
  });
  return paths;
}

/** Every named enum of a schema, by short name. */
function enumsOf(c: TopicContract<unknown>): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach(walk);
    } else if (node && typeof node === "object") {
      const o = node as Record<string, unknown>;
      if (o.type === "enum" && typeof o.name === "string") {
        found.set(o.name.split(".").pop() ?? o.name, o.symbols as string[]);
      }
      Object.values(o).forEach(walk);
    }
  };
  walk(c.type.schema());
  return found;
}

/** Dotted paths of the `["null", T]` fields, through non-null nested records. */
function nullablePaths(schema: unknown, prefix = ""): string[] {
  const rec = schema as { type?: unknown; fields?: { name: string; type: unknown }[] };
  if (rec.type !== "record" || !rec.fields) {
    return [];
  }
  return rec.fields.flatMap((f) => {
    const path = prefix ? `${prefix}.${f.name}` : f.name;
    if (Array.isArray(f.type)) {
      return f.type.includes("null") ? [path] : [];
    }
    return nullablePaths(f.type, path);
  });
}

function valueAt(value: unknown, path: string): unknown {
  return path
    .split(".")
    .reduce<unknown>(
      (v, k) => (v && typeof v === "object" ? (v as Record<string, unknown>)[k] : undefined),
      value,
    );
}

function* leaves(value: unknown, path = ""): Generator<[string, unknown]> {
  if (value && typeof value === "object" && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) {
      yield* leaves(v, path ? `${path}.${k}` : k);
    }
  } else {
    yield [path, value];
  }
}

describe("TS types agree with the Avro schemas", () => {
  it.each(entries)("%s samples are valid with no undeclared fields", (name, values) => {
    const c = contracts[name] as TopicContract<unknown>;
    for (const value of values) {
      expect(invalidPaths(c, value)).toEqual([]);
    }
  });

  it.each(entries)("%s samples round-trip through Avro binary", (name, values) => {
    const c = contracts[name] as TopicContract<unknown>;
    for (const value of values) {
      const decoded: unknown = c.type.fromBuffer(c.type.toBuffer(value));
      expect(decoded).toEqual(value);
      // Decoded values are what consumers will hold: plain data, same keys.
      expect(JSON.parse(JSON.stringify(decoded))).toEqual(JSON.parse(JSON.stringify(value)));
    }
  });

  it("covers both branches of every nullable field between the samples", () => {
    for (const [name, values] of entries) {
      const c = contracts[name] as TopicContract<unknown>;
      for (const path of nullablePaths(c.type.schema())) {
        const at = values.map((v) => valueAt(v, path));
        expect(
          at.some((v) => v === null),
          `${name} ${path} never null`,
        ).toBe(true);
        expect(
          at.some((v) => v !== null && v !== undefined),
          `${name} ${path} never set`,
        ).toBe(true);
      }
    }
  });

  it("rejects a value missing a field or carrying an extra one", () => {
    const c = contracts.keyIssued as TopicContract<unknown>;
    const { label: _label, ...missing } = s.keyIssued;
    expect(invalidPaths(c, missing)).toEqual(["label"]);
    expect(invalidPaths(c, { ...s.keyIssued, secret: "th_live_x" })).not.toEqual([]);
    expect(invalidPaths(c, { ...s.keyIssued, last4: undefined })).toEqual(["last4"]);
  });

  it("keeps the TS enum lists equal to the schema symbols", () => {
    const expectations: [ContractName, string, readonly string[]][] = [
      ["parcelIngested", "RollStage", ROLL_STAGES],
      ["parcelIngested", "UseClass", USE_CLASSES],
      ["matchFound", "MatchTrigger", MATCH_TRIGGERS],
      ["deliveryAttempted", "FailureKind", FAILURE_KINDS],
      ["deliveryAttempted", "DeliveryState", DELIVERY_STATES],
      ["deliveryRetry1s", "FailureKind", FAILURE_KINDS],
      ["deliveryDeadLetter", "FailureKind", FAILURE_KINDS],
      ["deliveryDeadLetter", "DeadLetterReason", DEAD_LETTER_REASONS],
      ["leadViewRecorded", "Surface", SURFACES],
      ["tenantChanged", "Tier", TIERS],
      ["tenantChanged", "TenantStatus", TENANT_STATUSES],
      ["tenantChanged", "PaymentStanding", PAYMENT_STANDINGS],
      ["keyRevoked", "KeyRevokeReason", KEY_REVOKE_REASONS],
      ["pipelineItemChanged", "PipelineChangeType", PIPELINE_CHANGE_TYPES],
      ["pipelineStageChanged", "PipelineStageChangeType", PIPELINE_STAGE_CHANGE_TYPES],
    ];
    for (const [name, enumName, symbols] of expectations) {
      expect(enumsOf(contracts[name] as TopicContract<unknown>).get(enumName)).toEqual([
        ...symbols,
      ]);
    }
  });

  it("carries the watchlist.match payload fields under the spec's names", () => {
    const m = s.matchFound.match;
    expect(Object.keys(m).sort()).toEqual(
      ["address", "folio", "observed_at", "owner", "score", "signals_fired", "valuation"].sort(),
    );
    expect(Object.keys(m.owner).sort()).toEqual(["mailing_state", "name"]);
    expect(Object.keys(m.valuation).sort()).toEqual(["est_equity", "just_value"]);
    expect(Object.keys(s.matchFound.watchlist).sort()).toEqual(["id", "name"]);
  });
});

describe("time encoding", () => {
  it("accepts only the canonical toISOString form for instants", () => {
    expect(isInstant("2025-10-14T06:12:44.318Z")).toBe(true);
    expect(isInstant("2025-10-14T06:12:44Z")).toBe(false);
    expect(isInstant("2025-10-14T06:12:44.318+00:00")).toBe(false);
    expect(isInstant("2025-02-30T00:00:00.000Z")).toBe(false);
    expect(toInstant(Date.UTC(2025, 0, 1))).toBe("2025-01-01T00:00:00.000Z");
  });

  it("takes the UTC calendar day, not the local one", () => {
    expect(utcDayOf("2025-10-14T23:59:59.999Z")).toBe("2025-10-14");
    expect(utcDayOf("2025-10-15T00:00:00.001Z")).toBe("2025-10-15");
    expect(isUtcDay("2024-02-29")).toBe(true);
    expect(isUtcDay("2025-02-29")).toBe(false);
    expect(isUtcDay("2025-2-1")).toBe(false);
  });

  it("uses those encodings in every sample", () => {
    const dayFields = new Set(["day", "billing_period_start", "billing_anniversary"]);
    const instantFields = /(_at|_until)$/;
    for (const [, values] of entries) {
      for (const value of values) {
        for (const [path, leaf] of leaves(value)) {
          const field = path.split(".").pop() ?? path;
          if (typeof leaf !== "string") {
            continue;
          }
          if (dayFields.has(field)) {
            expect(isUtcDay(leaf), path).toBe(true);
          } else if (instantFields.test(field)) {
            expect(isInstant(leaf), path).toBe(true);
          }
        }
      }
    }
  });
});
