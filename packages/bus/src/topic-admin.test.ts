import { SINGLE_NODE_REPLICATION, type TopicPlanEntry } from "@th/contracts";
import { describe, expect, it } from "vitest";
import { diffTopics, isApplicable, type ObservedTopic } from "./topic-admin.ts";

const entry: TopicPlanEntry = {
  topic: "match.found",
  partitions: 12,
  replicationFactor: SINGLE_NODE_REPLICATION.replicationFactor,
  configs: { "cleanup.policy": "delete", "retention.ms": "3024000000" },
  role: "events",
};
const matching: ObservedTopic = {
  topic: "match.found",
  partitions: 12,
  replicationFactor: 1,
  configs: { "cleanup.policy": "delete", "retention.ms": "3024000000" },
};
const observed = (topic: ObservedTopic) => new Map([[topic.topic, topic]]);

describe("comparing a cluster with the topic plan", () => {
  it("finds nothing when the topic is as planned", () => {
    expect(diffTopics([entry], observed(matching))).toEqual([]);
  });

  it("names a missing topic, which --apply creates", () => {
    const [difference] = diffTopics([entry], new Map());
    expect(difference).toEqual({ kind: "missing", topic: "match.found", entry });
    expect(difference && isApplicable(difference)).toBe(true);
  });

  it("grows too few partitions, but never shrinks too many", () => {
    const [fewer] = diffTopics([entry], observed({ ...matching, partitions: 4 }));
    expect(fewer).toEqual({ kind: "partitions", topic: "match.found", planned: 12, actual: 4 });
    expect(fewer && isApplicable(fewer)).toBe(true);
    const [more] = diffTopics([entry], observed({ ...matching, partitions: 24 }));
    expect(more).toMatchObject({ kind: "partitions", planned: 12, actual: 24 });
    expect(more && isApplicable(more)).toBe(false);
  });

  it("reports replication and every differing or absent setting, which it leaves alone", () => {
    const differences = diffTopics(
      [entry],
      observed({ ...matching, replicationFactor: 3, configs: { "retention.ms": "604800000" } }),
    );
    expect(differences).toEqual([
      { kind: "replication", topic: "match.found", planned: 1, actual: 3 },
      {
        kind: "config",
        topic: "match.found",
        name: "cleanup.policy",
        planned: "delete",
        actual: undefined,
      },
      {
        kind: "config",
        topic: "match.found",
        name: "retention.ms",
        planned: "3024000000",
        actual: "604800000",
      },
    ]);
    expect(differences.some(isApplicable)).toBe(false);
  });
});
