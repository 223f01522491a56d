// Compares a cluster's topics with the topic plan and brings it closer: missing topics are
// created and partitions added; nothing is ever deleted, shrunk or re-configured here.
import type { TopicPlanEntry } from "@th/contracts";
import type { Admin } from "kafkajs";

/** What a cluster holds of one planned topic. */
export interface ObservedTopic {
  readonly topic: string;
  readonly partitions: number;
  /** The fewest replicas any partition has. */
  readonly replicationFactor: number;
  /** The current values of the configs asked for (a cluster default is a value too). */
  readonly configs: Readonly<Record<string, string>>;
}

export type TopicDifference =
  | { readonly kind: "missing"; readonly topic: string; readonly entry: TopicPlanEntry }
  | {
      readonly kind: "partitions";
      readonly topic: string;
      readonly planned: number;
      readonly actual: number;
    }
  | {
      readonly kind: "replication";
      readonly topic: string;
      readonly planned: number;
      readonly actual: number;
    }
  | {
      readonly kind: "config";
      readonly topic: string;
      readonly name: string;
      readonly planned: string;
      readonly actual: string | undefined;
    };

/** Whether `--apply` changes it: missing topics and too few partitions; the rest is reported. */
export function isApplicable(difference: TopicDifference): boolean {
  return (
    difference.kind === "missing" ||
    (difference.kind === "partitions" && difference.actual < difference.planned)
  );
}

/**
 * Every way `observed` falls short of or departs from `plan`, in plan order. More partitions
 * than planned is reported too (the plan is stale or someone grew the topic), never undone.
 */
export function diffTopics(
  plan: readonly TopicPlanEntry[],
  observed: ReadonlyMap<string, ObservedTopic>,
): TopicDifference[] {
  const differences: TopicDifference[] = [];
  for (const entry of plan) {
    const actual = observed.get(entry.topic);
    if (!actual) {
      differences.push({ kind: "missing", topic: entry.topic, entry });
      continue;
    }
    if (actual.partitions !== entry.partitions) {
      differences.push({
        kind: "partitions",
        topic: entry.topic,
        planned: entry.partitions,
        actual: actual.partitions,
      });
    }
    if (actual.replicationFactor !== entry.replicationFactor) {
      differences.push({
        kind: "replication",
        topic: entry.topic,
        planned: entry.replicationFactor,
        actual: actual.replicationFactor,
      });
    }
    for (const [name, planned] of Object.entries(entry.configs)) {
      if (actual.configs[name] !== planned) {
        differences.push({
          kind: "config",
          topic: entry.topic,
          name,
          planned,
          actual: actual.configs[name],
        });
      }
    }
  }
  return differences;
}

/** Kafka's ConfigResourceType for a topic (kafkajs names it ConfigResourceTypes.TOPIC). */
const TOPIC_RESOURCE = 2;

/** What the cluster holds of `plan`'s topics; topics it lacks are absent from the map. */
export async function observeTopics(
  admin: Admin,
  plan: readonly TopicPlanEntry[],
): Promise<Map<string, ObservedTopic>> {
  const existing = new Set(await admin.listTopics());
  const present = plan.filter((entry) => existing.has(entry.topic));
  const observed = new Map<string, ObservedTopic>();
  if (present.length === 0) {
    return observed;
  }
  const [metadata, configs] = await Promise.all([
    admin.fetchTopicMetadata({ topics: present.map((entry) => entry.topic) }),
    admin.describeConfigs({
      includeSynonyms: false,
      resources: present.map((entry) => ({
        type: TOPIC_RESOURCE,
        name: entry.topic,
        configNames: Object.keys(entry.configs),
      })),
    }),
  ]);
  const configsOf = new Map(
    configs.resources.map((resource) => [
      resource.resourceName,
      Object.fromEntries(
        resource.configEntries.map((config) => [config.configName, config.configValue]),
      ),
    ]),
  );
  for (const topic of metadata.topics) {
    observed.set(topic.name, {
      topic: topic.name,
      partitions: topic.partitions.length,
      replicationFactor: Math.min(...topic.partitions.map((p) => p.replicas.length)),
      configs: configsOf.get(topic.name) ?? {},
    });
  }
  return observed;
}

/** Names of `topics` the cluster does not have. */
export async function missingTopics(admin: Admin, topics: readonly string[]): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  return topics.filter((topic) => !existing.has(topic));
}

/**
 * Creates the missing topics and adds the missing partitions among `differences`; answers the
 * ones it applied. A topic another process created meanwhile counts as created.
 */
export async function applyTopicDifferences(
  admin: Admin,
  differences: readonly TopicDifference[],
): Promise<TopicDifference[]> {
  const applicable = differences.filter(isApplicable);
  const create = applicable.flatMap((d) => (d.kind === "missing" ? [d.entry] : []));
  if (create.length > 0) {
    try {
      await admin.createTopics({
        waitForLeaders: true,
        topics: create.map((entry) => ({
          topic: entry.topic,
          numPartitions: entry.partitions,
          replicationFactor: entry.replicationFactor,
          configEntries: Object.entries(entry.configs).map(([name, value]) => ({ name, value })),
        })),
      });
    } catch (error) {
      // Several processes may apply the plan at once (tests, a hook racing a developer).
      const errors = (error as { errors?: { type?: string }[] }).errors ?? [];
      if (errors.length === 0 || errors.some((item) => item.type !== "TOPIC_ALREADY_EXISTS")) {
        throw error;
      }
    }
  }
  const grow = applicable.flatMap((d) =>
    d.kind === "partitions" ? [{ topic: d.topic, count: d.planned }] : [],
  );
  if (grow.length > 0) {
    await admin.createPartitions({ topicPartitions: grow, validateOnly: false });
  }
  return applicable;
}
