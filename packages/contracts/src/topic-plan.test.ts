import { describe, expect, it } from "vitest";
import {
  allContracts,
  contracts,
  PRODUCTION_REPLICATION,
  parkedTopicOf,
  SINGLE_NODE_REPLICATION,
  topicPlan,
} from "./index.ts";

const DAY_MS = 86_400_000;
const plan = topicPlan();
const entry = (topic: string) => {
  const found = plan.find((candidate) => candidate.topic === topic);
  if (!found) {
    throw new Error(`${topic} is not in the plan`);
  }
  return found;
};
const retentionOf = (topic: string) => Number(entry(topic).configs["retention.ms"]);

describe("topic plan", () => {
  it("declares every contract's topic and its parking topic, once each", () => {
    const topics = plan.map((e) => e.topic);
    expect(new Set(topics).size).toBe(topics.length);
    expect([...topics].sort()).toEqual(
      allContracts.flatMap((c) => [c.topic, parkedTopicOf(c.topic)]).sort(),
    );
  });

  it("gives each topic its partitions, three replicas and two in sync by default", () => {
    for (const e of plan) {
      expect(e.replicationFactor).toBe(3);
      expect(e.configs["min.insync.replicas"]).toBe("2");
      expect(e.configs["cleanup.policy"]).toBe("delete");
    }
    expect(entry("leadview.recorded").partitions).toBe(contracts.leadViewRecorded.partitions);
    expect(entry("leadview.recorded.parked").partitions).toBe(1);
  });

  it("keeps retry topics short-lived, with segments that let them expire", () => {
    const retries = plan.filter((e) => e.role === "retry");
    expect(retries.map((e) => e.topic).sort()).toEqual([
      "delivery.retry.1s",
      "delivery.retry.30s",
      "delivery.retry.5m",
      "delivery.retry.5s",
    ]);
    for (const e of retries) {
      expect(Number(e.configs["retention.ms"])).toBeLessThanOrEqual(DAY_MS);
      expect(Number(e.configs["segment.ms"])).toBeLessThan(Number(e.configs["retention.ms"]));
      expect(e.configs["retention.bytes"]).toBeUndefined();
    }
  });

  it("keeps dead letters at least 31 days and parked records forever, whatever their size", () => {
    expect(entry("delivery.dead-letter").role).toBe("dead-letter");
    expect(retentionOf("delivery.dead-letter")).toBeGreaterThanOrEqual(31 * DAY_MS);
    expect(entry("delivery.dead-letter").configs["retention.bytes"]).toBe("-1");
    for (const e of plan.filter((candidate) => candidate.role === "parked")) {
      expect(e.configs["retention.ms"]).toBe("-1");
      expect(e.configs["retention.bytes"]).toBe("-1");
    }
  });

  it("keeps leadview.recorded for the ledger rebuild: a billing year and a month, by time only", () => {
    expect(retentionOf("leadview.recorded")).toBeGreaterThanOrEqual(395 * DAY_MS);
    expect(entry("leadview.recorded").configs["retention.bytes"]).toBe("-1");
    expect(entry("leadview.recorded").configs["cleanup.policy"]).toBe("delete");
  });

  it("sets nothing beyond the settings it owns", () => {
    const owned = new Set([
      "cleanup.policy",
      "retention.ms",
      "retention.bytes",
      "segment.ms",
      "min.insync.replicas",
    ]);
    for (const e of plan) {
      for (const name of Object.keys(e.configs)) {
        expect(owned).toContain(name);
      }
    }
  });

  it("plans a subset of topics for a single-node cluster", () => {
    const small = topicPlan(SINGLE_NODE_REPLICATION, [contracts.matchFound]);
    expect(small.map((e) => e.topic)).toEqual(["match.found", "match.found.parked"]);
    expect(small.every((e) => e.replicationFactor === 1)).toBe(true);
    expect(small.every((e) => e.configs["min.insync.replicas"] === "1")).toBe(true);
  });

  it("refuses replication it cannot honour", () => {
    expect(() => topicPlan({ replicationFactor: 2, minInsyncReplicas: 3 })).toThrow(
      /min.insync.replicas must be between 1 and the replication factor \(2\)/,
    );
    expect(() => topicPlan({ replicationFactor: 0, minInsyncReplicas: 1 })).toThrow(
      /replication factor must be a positive integer/,
    );
    expect(PRODUCTION_REPLICATION.minInsyncReplicas).toBeLessThan(
      PRODUCTION_REPLICATION.replicationFactor,
    );
  });
});
