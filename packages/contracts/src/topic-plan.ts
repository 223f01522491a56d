// The one declared plan of every Kafka topic the system uses: partitions, replication and the
// topic-level settings the system depends on. Whatever the plan does not name stays at the
// cluster's defaults. `npm run topics` compares a cluster with it and creates what is missing;
// docs/decisions/0120-topic-plan.md explains each choice.
import {
  allContracts,
  parkedTopicOf,
  RETAIN_FOREVER,
  type TopicContract,
} from "./topic-contracts.ts";

/** How many copies of each partition a cluster keeps, and how many must have a write. */
export interface TopicReplication {
  readonly replicationFactor: number;
  /** With acks=all (every producer here), a write fails rather than land on fewer copies. */
  readonly minInsyncReplicas: number;
}

/** Three copies, two in sync: one broker may be down (a rolling restart) without losing writes. */
export const PRODUCTION_REPLICATION: TopicReplication = Object.freeze({
  replicationFactor: 3,
  minInsyncReplicas: 2,
});

/** A one-broker cluster: the dev broker, a test container. */
export const SINGLE_NODE_REPLICATION: TopicReplication = Object.freeze({
  replicationFactor: 1,
  minInsyncReplicas: 1,
});

export interface TopicPlanEntry {
  readonly topic: string;
  readonly partitions: number;
  readonly replicationFactor: number;
  /** Topic-level configs the plan sets, by Kafka's names; nothing else is set. */
  readonly configs: Readonly<Record<string, string>>;
  /** Why the topic exists, for the plan's printout. */
  readonly role: "events" | "retry" | "dead-letter" | "parked";
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/**
 * Parked records are poison events a consumer set aside with the reason: they are never lost,
 * so their topics keep everything. They are rare and small; one partition keeps them in order.
 */
const PARKED_PARTITIONS = 1;

function roleOf(contract: TopicContract<unknown>): TopicPlanEntry["role"] {
  if (contract.topic.startsWith("delivery.retry.")) {
    return "retry";
  }
  return contract.topic.endsWith(".dead-letter") ? "dead-letter" : "events";
}

function retentionConfigs(retentionMs: number, minInsyncReplicas: number): Record<string, string> {
  const configs: Record<string, string> = {
    // Every topic is a log of events keyed by tenant, delivery or folio, never a table of the
    // latest value per key: compaction would drop all but one event per key.
    "cleanup.policy": "delete",
    "retention.ms": String(retentionMs),
    "min.insync.replicas": String(minInsyncReplicas),
  };
  if (retentionMs !== RETAIN_FOREVER && retentionMs <= DAY_MS) {
    // Retention removes whole closed segments; with the default week-long segment a one-day
    // topic would keep a week. Hourly segments let it expire within the hour after its day.
    configs["segment.ms"] = String(HOUR_MS);
  } else {
    // The retention time is a promise (a replay, the ledger rebuild, the dead-letter hold): a
    // cluster-wide size limit must not cut it short.
    configs["retention.bytes"] = "-1";
  }
  return configs;
}

function assertReplication(replication: TopicReplication): void {
  const { replicationFactor, minInsyncReplicas } = replication;
  if (!Number.isInteger(replicationFactor) || replicationFactor < 1) {
    throw new Error(`replication factor must be a positive integer, got ${replicationFactor}`);
  }
  if (
    !Number.isInteger(minInsyncReplicas) ||
    minInsyncReplicas < 1 ||
    minInsyncReplicas > replicationFactor
  ) {
    throw new Error(
      `min.insync.replicas must be between 1 and the replication factor (${replicationFactor}), got ${minInsyncReplicas}`,
    );
  }
}

/**
 * The plan of `contracts`' topics (every topic by default) and their parking topics, for a
 * cluster with `replication`. Entries come in contract order, each followed by its parking topic.
 */
export function topicPlan(
  replication: TopicReplication = PRODUCTION_REPLICATION,
  contracts: readonly TopicContract<never>[] | readonly TopicContract<unknown>[] = allContracts,
): readonly TopicPlanEntry[] {
  assertReplication(replication);
  const entries: TopicPlanEntry[] = [];
  const seen = new Set<string>();
  for (const contract of contracts as readonly TopicContract<unknown>[]) {
    if (seen.has(contract.topic)) {
      continue;
    }
    seen.add(contract.topic);
    entries.push({
      topic: contract.topic,
      partitions: contract.partitions,
      replicationFactor: replication.replicationFactor,
      configs: retentionConfigs(contract.retentionMs, replication.minInsyncReplicas),
      role: roleOf(contract),
    });
    entries.push({
      topic: parkedTopicOf(contract.topic),
      partitions: PARKED_PARTITIONS,
      replicationFactor: replication.replicationFactor,
      configs: retentionConfigs(RETAIN_FOREVER, replication.minInsyncReplicas),
      role: "parked",
    });
  }
  return entries;
}
