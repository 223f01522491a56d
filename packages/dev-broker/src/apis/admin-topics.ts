// CreateTopics v0-v3, DeleteTopics v0-v1, CreatePartitions v0-v1.
import { InvalidTopicConfigError, resolveTopicConfig } from "../log/topic-config.ts";
import { ApiKey } from "../protocol/api-keys.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { Writer } from "../protocol/writer.ts";
import { isValidTopicName } from "../topics.ts";
import type { ApiDefinition, BrokerContext } from "./types.ts";

interface TopicResult {
  name: string;
  errorCode: number;
  message: string | null;
}

function createTopic(
  ctx: BrokerContext,
  name: string,
  requestedPartitions: number,
  replicationFactor: number,
  assignments: number[],
  configs: Record<string, string>,
  validateOnly: boolean,
): TopicResult {
  const fail = (errorCode: number, message: string): TopicResult => ({ name, errorCode, message });
  if (!isValidTopicName(name)) {
    return fail(ErrorCode.INVALID_TOPIC_EXCEPTION, `invalid topic name '${name}'`);
  }
  if (ctx.topics.get(name) !== undefined) {
    return fail(ErrorCode.TOPIC_ALREADY_EXISTS, `Topic '${name}' already exists.`);
  }
  const partitions =
    assignments.length > 0
      ? assignments.length
      : requestedPartitions === -1
        ? ctx.settings.defaultPartitions
        : requestedPartitions;
  if (partitions <= 0) {
    return fail(ErrorCode.INVALID_PARTITIONS, "number of partitions must be larger than 0");
  }
  if (ctx.settings.strictReplicationFactor && replicationFactor > 1) {
    return fail(
      ErrorCode.INVALID_REPLICATION_FACTOR,
      `replication factor ${replicationFactor} is larger than the number of brokers (1)`,
    );
  }
  if (replicationFactor === 0 || replicationFactor < -1) {
    return fail(ErrorCode.INVALID_REPLICATION_FACTOR, "replication factor must be larger than 0");
  }
  try {
    resolveTopicConfig(configs, ctx.topics.defaults);
  } catch (error) {
    if (error instanceof InvalidTopicConfigError) {
      return fail(ErrorCode.INVALID_CONFIG, error.message);
    }
    throw error;
  }
  if (!validateOnly) {
    ctx.topics.create(name, partitions, configs);
    ctx.logger.info("created topic", { topic: name, partitions });
  }
  return { name, errorCode: ErrorCode.NONE, message: null };
}

export const createTopicsApi: ApiDefinition = {
  apiKey: ApiKey.CreateTopics,
  name: "CreateTopics",
  minVersion: 0,
  maxVersion: 3,
  handle(ctx, header, reader) {
    const version = header.apiVersion;
    const requests = reader.array((r) => ({
      name: r.string(),
      partitions: r.int32(),
      replicationFactor: r.int16(),
      assignments: r.array((a) => {
        a.int32();
        return a.array((b) => b.int32());
      }),
      configs: Object.fromEntries(
        r
          .array((c) => [c.string(), c.nullableString()] as const)
          .filter((entry): entry is readonly [string, string] => entry[1] !== null),
      ),
    }));
    reader.int32(); // timeout_ms
    const validateOnly = version >= 1 ? reader.boolean() : false;
    const seen = new Set<string>();
    const results = requests.map((t) => {
      if (seen.has(t.name)) {
        return {
          name: t.name,
          errorCode: ErrorCode.INVALID_REQUEST,
          message: "duplicate topic in request",
        };
      }
      seen.add(t.name);
      return createTopic(
        ctx,
        t.name,
        t.partitions,
        t.replicationFactor,
        t.assignments.map((a) => a.length),
        t.configs,
        validateOnly,
      );
    });
    const w = new Writer();
    if (version >= 2) {
      w.int32(0);
    }
    w.array(results, (w, r) => {
      w.string(r.name).int16(r.errorCode);
      if (version >= 1) {
        w.nullableString(r.message);
      }
    });
    return w;
  },
};

export const deleteTopicsApi: ApiDefinition = {
  apiKey: ApiKey.DeleteTopics,
  name: "DeleteTopics",
  minVersion: 0,
  maxVersion: 1,
  handle(ctx, header, reader) {
    const names = reader.array((r) => r.string());
    reader.int32(); // timeout_ms
    const results = names.map((name) => {
      if (!ctx.topics.delete(name)) {
        return { name, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION };
      }
      ctx.logger.info("deleted topic", { topic: name });
      // Parked fetches on the topic answer now with UNKNOWN_TOPIC_OR_PARTITION.
      ctx.purgatory.completeWhere((f) =>
        f.partitionKeys.some((k) => k.startsWith(`${name}\u0000`)),
      );
      return { name, errorCode: ErrorCode.NONE };
    });
    const w = new Writer();
    if (header.apiVersion >= 1) {
      w.int32(0);
    }
    w.array(results, (w, r) => {
      w.string(r.name).int16(r.errorCode);
    });
    return w;
  },
};

export const createPartitionsApi: ApiDefinition = {
  apiKey: ApiKey.CreatePartitions,
  name: "CreatePartitions",
  minVersion: 0,
  maxVersion: 1,
  handle(ctx, _header, reader) {
    const requests = reader.array((r) => ({
      name: r.string(),
      count: r.int32(),
      assignments: r.nullableArray((a) => a.array((b) => b.int32())),
    }));
    reader.int32(); // timeout_ms
    const validateOnly = reader.boolean();
    const results = requests.map(({ name, count }): TopicResult => {
      const topic = ctx.topics.get(name);
      if (topic === undefined) {
        return {
          name,
          errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
          message: `topic '${name}' does not exist`,
        };
      }
      if (count <= topic.partitions.length) {
        return {
          name,
          errorCode: ErrorCode.INVALID_PARTITIONS,
          message: `topic currently has ${topic.partitions.length} partitions, ${count} would not be an increase`,
        };
      }
      if (!validateOnly) {
        ctx.topics.addPartitions(name, count);
        ctx.logger.info("added partitions", { topic: name, partitions: count });
      }
      return { name, errorCode: ErrorCode.NONE, message: null };
    });
    const w = new Writer();
    w.int32(0);
    w.array(results, (w, r) => {
      w.string(r.name).int16(r.errorCode).nullableString(r.message);
    });
    return w;
  },
};
