// DescribeConfigs v1-v2 (v0 is below Kafka 4.0's floor), for topics only: what a topic was
// created with, and the broker's defaults for the settings it did not set. Enough for a client
// to compare a topic with a plan; broker and other resources are refused.
import type { TopicConfig } from "../log/topic-config.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { Writer } from "../protocol/writer.ts";
import type { ApiDefinition } from "./types.ts";

/** Kafka's ApiKeys.DESCRIBE_CONFIGS. */
const DESCRIBE_CONFIGS = 32;
/** ConfigResource.Type.TOPIC. */
const TOPIC_RESOURCE = 2;
/** ConfigSource: set on the topic, or the default. */
const TOPIC_CONFIG = 1;
const DEFAULT_CONFIG = 5;

interface Entry {
  name: string;
  value: string;
  source: number;
}

/** The broker-side values of settings a topic may leave unset. */
function defaultsOf(defaults: TopicConfig): Record<string, string> {
  return {
    "cleanup.policy": "delete",
    "min.insync.replicas": "1",
    "retention.ms": String(defaults.retentionMs),
    "retention.bytes": String(defaults.retentionBytes),
    "segment.bytes": String(defaults.segmentBytes),
    "segment.ms": String(defaults.segmentMs),
    "max.message.bytes": String(defaults.maxMessageBytes),
  };
}

function entriesOf(
  raw: Readonly<Record<string, string>>,
  defaults: Record<string, string>,
  names: readonly string[] | null,
): Entry[] {
  const all = new Map<string, Entry>();
  for (const [name, value] of Object.entries(defaults)) {
    all.set(name, { name, value, source: DEFAULT_CONFIG });
  }
  for (const [name, value] of Object.entries(raw)) {
    all.set(name, { name, value, source: TOPIC_CONFIG });
  }
  // As Kafka does, names it does not know are left out rather than failed.
  return names === null
    ? [...all.values()]
    : names.flatMap((name) => {
        const entry = all.get(name);
        return entry ? [entry] : [];
      });
}

export const describeConfigsApi: ApiDefinition = {
  apiKey: DESCRIBE_CONFIGS,
  name: "DescribeConfigs",
  minVersion: 1,
  maxVersion: 2,
  handle(ctx, _header, reader) {
    const resources = reader.array((r) => ({
      type: r.int8(),
      name: r.string(),
      names: r.nullableArray((n) => n.string()),
    }));
    reader.boolean(); // include_synonyms: this broker has no synonyms to tell of
    const defaults = defaultsOf(ctx.topics.defaults);
    const w = new Writer();
    w.int32(0); // throttle_time_ms
    w.array(resources, (w, resource) => {
      const fail = (code: number, message: string) =>
        w.int16(code).nullableString(message).int8(resource.type).string(resource.name).int32(0);
      if (resource.type !== TOPIC_RESOURCE) {
        fail(ErrorCode.INVALID_REQUEST, "the dev broker describes topic configs only");
        return;
      }
      const topic = ctx.topics.get(resource.name);
      if (topic === undefined) {
        fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `topic '${resource.name}' does not exist`);
        return;
      }
      w.int16(ErrorCode.NONE).nullableString(null).int8(resource.type).string(resource.name);
      w.array(entriesOf(topic.rawConfigs, defaults, resource.names), (w, entry) => {
        w.string(entry.name)
          .nullableString(entry.value)
          .boolean(false) // read_only
          .int8(entry.source)
          .boolean(false) // is_sensitive
          .int32(0); // synonyms
      });
    });
    return w;
  },
};
