// Per-topic settings, read from CreateTopics config entries with Kafka's names.

export interface TopicConfig {
  retentionMs: number;
  retentionBytes: number;
  segmentBytes: number;
  segmentMs: number;
  maxMessageBytes: number;
}

const KAFKA_DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;

export const DEFAULT_TOPIC_CONFIG: TopicConfig = {
  retentionMs: 7 * 24 * 3600 * 1000,
  retentionBytes: -1,
  // Smaller than Kafka's 1 GiB so size and time retention can actually drop data on a dev machine.
  segmentBytes: 16 * 1024 * 1024,
  segmentMs: 7 * 24 * 3600 * 1000,
  maxMessageBytes: KAFKA_DEFAULT_MAX_MESSAGE_BYTES,
};

const CONFIG_KEYS: Record<string, keyof TopicConfig> = {
  "retention.ms": "retentionMs",
  "retention.bytes": "retentionBytes",
  "segment.bytes": "segmentBytes",
  "segment.ms": "segmentMs",
  "max.message.bytes": "maxMessageBytes",
};

const OPAQUE_KEYS = new Set([
  "cleanup.policy",
  "compression.type",
  "min.insync.replicas",
  "message.timestamp.type",
  "unclean.leader.election.enable",
  "delete.retention.ms",
  "min.compaction.lag.ms",
  "file.delete.delay.ms",
  "flush.messages",
  "flush.ms",
  "index.interval.bytes",
  "preallocate",
]);

export class InvalidTopicConfigError extends Error {}

/** Validates raw config entries and resolves them over the broker defaults. */
export function resolveTopicConfig(
  raw: Record<string, string>,
  defaults: TopicConfig,
): TopicConfig {
  const config = { ...defaults };
  for (const [name, value] of Object.entries(raw)) {
    const key = CONFIG_KEYS[name];
    if (key === undefined) {
      if (!OPAQUE_KEYS.has(name)) {
        throw new InvalidTopicConfigError(`unknown topic config ${name}`);
      }
      continue;
    }
    const parsed = Number(value);
    if (!Number.isInteger(parsed) || (parsed < 0 && parsed !== -1)) {
      throw new InvalidTopicConfigError(`invalid value ${value} for ${name}`);
    }
    if (
      (key === "segmentBytes" || key === "maxMessageBytes" || key === "segmentMs") &&
      parsed <= 0
    ) {
      throw new InvalidTopicConfigError(`${name} must be positive`);
    }
    config[key] = parsed;
  }
  return config;
}
