// Metadata v1-v6. One node is leader, replica and ISR for every partition.
import { ApiKey } from "../protocol/api-keys.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { Writer } from "../protocol/writer.ts";
import { isValidTopicName } from "../topics.ts";
import type { ApiDefinition, BrokerContext } from "./types.ts";

interface TopicMetadata {
  errorCode: number;
  name: string;
  partitionCount: number;
}

function resolveTopic(ctx: BrokerContext, name: string, allowAutoCreate: boolean): TopicMetadata {
  const existing = ctx.topics.get(name);
  if (existing !== undefined) {
    return { errorCode: ErrorCode.NONE, name, partitionCount: existing.partitions.length };
  }
  if (!isValidTopicName(name)) {
    return { errorCode: ErrorCode.INVALID_TOPIC_EXCEPTION, name, partitionCount: 0 };
  }
  if (allowAutoCreate && ctx.settings.autoCreateTopics) {
    const created = ctx.topics.create(name, ctx.settings.defaultPartitions, {});
    ctx.logger.info("auto-created topic", { topic: name, partitions: created.partitions.length });
    return { errorCode: ErrorCode.NONE, name, partitionCount: created.partitions.length };
  }
  return { errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name, partitionCount: 0 };
}

export const metadataApi: ApiDefinition = {
  apiKey: ApiKey.Metadata,
  name: "Metadata",
  minVersion: 1,
  maxVersion: 6,
  handle(ctx, header, reader) {
    const version = header.apiVersion;
    const requested = reader.nullableArray((r) => r.string());
    // Before v4 there is no flag and Kafka treats the request as allowing auto-creation.
    const allowAutoCreate = version >= 4 ? reader.boolean() : true;
    const topics =
      requested === null
        ? [...ctx.topics.topics.values()].map((t) => ({
            errorCode: ErrorCode.NONE,
            name: t.name,
            partitionCount: t.partitions.length,
          }))
        : requested.map((name) => resolveTopic(ctx, name, allowAutoCreate));
    const { nodeId, advertisedHost, advertisedPort, clusterId } = ctx.settings;
    const w = new Writer(512);
    if (version >= 3) {
      w.int32(0);
    }
    w.array([nodeId], (w, id) => {
      w.int32(id).string(advertisedHost).int32(advertisedPort).nullableString(null);
    });
    if (version >= 2) {
      w.nullableString(clusterId);
    }
    w.int32(nodeId); // controller_id
    w.array(topics, (w, t) => {
      w.int16(t.errorCode).string(t.name).boolean(false);
      const partitions = Array.from({ length: t.partitionCount }, (_, i) => i);
      w.array(partitions, (w, p) => {
        w.int16(ErrorCode.NONE).int32(p).int32(nodeId);
        w.array([nodeId], (w, id) => w.int32(id)); // replicas
        w.array([nodeId], (w, id) => w.int32(id)); // isr
        if (version >= 5) {
          w.int32(0); // offline_replicas: empty
        }
      });
    });
    return w;
  },
};
