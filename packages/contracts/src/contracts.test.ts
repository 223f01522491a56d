import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  allContracts,
  contractForTopic,
  contracts,
  decodeRecord,
  deliveryRetryLadder,
  encodeRecord,
  parkedTopicOf,
  registry,
  SCHEMA_HEADER,
  schemaHeaderValue,
  type TopicContract,
  writerTypeFor,
} from "./index.ts";
import * as samples from "./samples.ts";

// The topic list of DESIGN.md's services table, in its words, and leadview.voided (decision 0190).
const DESIGN_TOPICS = [
  "parcel.ingested",
  "match.found",
  "delivery.attempted",
  "delivery.retry.1s",
  "delivery.retry.5s",
  "delivery.retry.30s",
  "delivery.retry.5m",
  "delivery.dead-letter",
  "leadview.recorded",
  "leadview.voided",
  "tenant.changed",
  "key.issued",
  "key.revoked",
  "pipeline.item-changed",
  "pipeline.stage-changed",
];

const YEAR_MS = 365 * 86_400_000;

describe("topic contracts", () => {
  it("names exactly the topics of the design, each once", () => {
    const topics = allContracts.map((c) => c.topic);
    expect(new Set(topics).size).toBe(topics.length);
    expect([...topics].sort()).toEqual([...DESIGN_TOPICS].sort());
  });

  it("exposes every contract both by name and in allContracts", () => {
    expect(allContracts).toEqual(Object.values(contracts));
    for (const c of allContracts) {
      expect(contractForTopic(c.topic)).toBe(c);
    }
    expect(contractForTopic("watchlist.match")).toBeUndefined();
  });

  it("binds each topic to its schema", () => {
    const expected: Record<string, string> = {
      "parcel.ingested": "th.parcels.ParcelIngested",
      "match.found": "th.matches.MatchFound",
      "delivery.attempted": "th.delivery.DeliveryAttempted",
      "delivery.retry.1s": "th.delivery.DeliveryRetry",
      "delivery.retry.5s": "th.delivery.DeliveryRetry",
      "delivery.retry.30s": "th.delivery.DeliveryRetry",
      "delivery.retry.5m": "th.delivery.DeliveryRetry",
      "delivery.dead-letter": "th.delivery.DeliveryDeadLetter",
      "leadview.recorded": "th.usage.LeadViewRecorded",
      "leadview.voided": "th.usage.LeadViewVoided",
      "tenant.changed": "th.tenants.TenantChanged",
      "key.issued": "th.keys.KeyIssued",
      "key.revoked": "th.keys.KeyRevoked",
      "pipeline.item-changed": "th.pipeline.PipelineItemChanged",
      "pipeline.stage-changed": "th.pipeline.PipelineStageChanged",
    };
    for (const c of allContracts) {
      expect(c.schemaName).toBe(expected[c.topic]);
      expect(c.type.name).toBe(c.schemaName);
      expect(c.type).toBe(registry.current(c.schemaName).type);
    }
  });

  it("shares one schema across the four retry topics", () => {
    const retry = [
      contracts.deliveryRetry1s,
      contracts.deliveryRetry5s,
      contracts.deliveryRetry30s,
      contracts.deliveryRetry5m,
    ];
    expect(new Set(retry.map((c) => c.schemaName)).size).toBe(1);
    expect(new Set(retry.map((c) => c.fingerprint)).size).toBe(1);
  });

  it("provisions sane partitions and retention", () => {
    for (const c of allContracts) {
      expect(Number.isInteger(c.partitions) && c.partitions > 0).toBe(true);
      expect(c.retentionMs === -1 || c.retentionMs > 0).toBe(true);
    }
  });

  it("keeps lead views for at least a whole billing year", () => {
    const r = contracts.leadViewRecorded.retentionMs;
    expect(r === -1 || r >= YEAR_MS).toBe(true);
  });

  it("keeps dead letters past the 30-day replay hold", () => {
    const r = contracts.deliveryDeadLetter.retentionMs;
    expect(r === -1 || r > 30 * 86_400_000 + 36 * 60_000).toBe(true);
  });

  it("never trims the logs tenant and key state is rebuilt from", () => {
    expect(contracts.tenantChanged.retentionMs).toBe(-1);
    expect(contracts.keyIssued.retentionMs).toBe(-1);
    expect(contracts.keyRevoked.retentionMs).toBe(-1);
  });

  it("co-partitions the tenant-keyed topics", () => {
    const tenantKeyed = [
      contracts.matchFound,
      contracts.leadViewRecorded,
      contracts.tenantChanged,
      contracts.keyIssued,
      contracts.keyRevoked,
      contracts.pipelineItemChanged,
      contracts.pipelineStageChanged,
    ];
    expect(new Set(tenantKeyed.map((c) => c.partitions)).size).toBe(1);
  });

  it("keys parcels by folio, tenant streams by tenant id, deliveries by delivery id", () => {
    expect(contracts.parcelIngested.keyOf(samples.parcelIngested)).toBe("23-3059010240130");
    const tenant = samples.matchFound.tenant_id;
    expect(contracts.matchFound.keyOf(samples.matchFound)).toBe(tenant);
    expect(contracts.leadViewRecorded.keyOf(samples.leadViewRecorded)).toBe(tenant);
    expect(contracts.tenantChanged.keyOf(samples.tenantChanged)).toBe(tenant);
    expect(contracts.keyIssued.keyOf(samples.keyIssued)).toBe(tenant);
    expect(contracts.keyRevoked.keyOf(samples.keyRevoked)).toBe(tenant);
    const delivery = samples.deliveryAttempted.delivery_id;
    expect(contracts.deliveryAttempted.keyOf(samples.deliveryAttempted)).toBe(delivery);
    for (const { contract } of deliveryRetryLadder) {
      expect(contract.keyOf(samples.deliveryRetry)).toBe(delivery);
    }
    expect(contracts.deliveryDeadLetter.keyOf(samples.deliveryDeadLetter)).toBe(delivery);
  });

  it("orders the retry ladder as the spec's back-off table", () => {
    expect(deliveryRetryLadder.map((s) => [s.attempt, s.delayMs, s.contract.topic])).toEqual([
      [2, 1_000, "delivery.retry.1s"],
      [3, 5_000, "delivery.retry.5s"],
      [4, 30_000, "delivery.retry.30s"],
      [5, 300_000, "delivery.retry.5m"],
    ]);
  });

  it("names parked topics after their source", () => {
    expect(parkedTopicOf("match.found")).toBe("match.found.parked");
    for (const c of allContracts) {
      expect(contractForTopic(parkedTopicOf(c.topic))).toBeUndefined();
    }
  });
});

describe("schema header", () => {
  it("is th-schema with value name@sha256-hex", () => {
    expect(SCHEMA_HEADER).toBe("th-schema");
    for (const c of allContracts) {
      const value = schemaHeaderValue(c);
      expect(value).toBe(`${c.schemaName}@${c.fingerprint}`);
      expect(value).toMatch(/^th\.[a-z]+\.[A-Za-z]+@[0-9a-f]{64}$/);
    }
  });

  it("fingerprints the Parsing Canonical Form with SHA-256", () => {
    for (const c of allContracts) {
      const canonical = JSON.stringify(c.type.schema());
      expect(c.fingerprint).toBe(createHash("sha256").update(canonical).digest("hex"));
      // Docs and defaults are not part of the canonical form.
      expect(canonical).not.toContain('"doc"');
      expect(canonical).not.toContain('"default"');
    }
  });

  it("gives distinct schemas distinct fingerprints", () => {
    const bySchema = new Map(allContracts.map((c) => [c.schemaName, c.fingerprint]));
    expect(new Set(bySchema.values()).size).toBe(bySchema.size);
  });

  it("resolves every current header to its writer type", () => {
    for (const c of allContracts) {
      expect(writerTypeFor(schemaHeaderValue(c))).toBe(c.type);
    }
  });

  it("returns undefined for headers it never shipped", () => {
    const c = contracts.parcelIngested;
    expect(writerTypeFor(`${c.schemaName}@${"0".repeat(64)}`)).toBeUndefined();
    expect(writerTypeFor(`th.parcels.Nope@${c.fingerprint}`)).toBeUndefined();
    expect(writerTypeFor("")).toBeUndefined();
    expect(writerTypeFor("garbage")).toBeUndefined();
  });
});

describe("encodeRecord / decodeRecord", () => {
  const pairs: [TopicContract<unknown>, unknown][] = [
    [contracts.parcelIngested as TopicContract<unknown>, samples.parcelIngested],
    [contracts.matchFound as TopicContract<unknown>, samples.matchFound],
    [contracts.deliveryRetry5m as TopicContract<unknown>, samples.deliveryRetry],
  ];

  it("round-trips with and without the header", () => {
    for (const [c, value] of pairs) {
      const buf = encodeRecord(c, value);
      expect(decodeRecord(c, buf, schemaHeaderValue(c))).toEqual(value);
      expect(decodeRecord(c, buf)).toEqual(value);
    }
  });

  it("refuses values that do not fit the schema", () => {
    const bad = {
      ...samples.leadViewRecorded,
      surface: "fax",
    } as unknown as typeof samples.leadViewRecorded;
    expect(() => encodeRecord(contracts.leadViewRecorded, bad)).toThrow();
  });

  it("refuses unknown writers and records of another schema", () => {
    const buf = encodeRecord(contracts.keyIssued, samples.keyIssued);
    expect(() =>
      decodeRecord(contracts.keyIssued, buf, `th.keys.KeyIssued@${"f".repeat(64)}`),
    ).toThrow(/unknown writer schema/);
    expect(() =>
      decodeRecord(contracts.keyRevoked, buf, schemaHeaderValue(contracts.keyIssued)),
    ).toThrow(/expected th\.keys\.KeyRevoked/);
  });
});
