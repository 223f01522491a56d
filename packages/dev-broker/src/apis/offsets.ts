// OffsetCommit v2-v5 and OffsetFetch v1-v4. Commits are accepted while a group is
// PreparingRebalance (kafkajs commits its resolved offsets right before rejoining). OffsetFetch
// answers every requested partition, with -1 where nothing is committed, even for unknown groups.
import { ApiKey } from "../protocol/api-keys.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { Writer } from "../protocol/writer.ts";
import type { ApiDefinition } from "./types.ts";

export const offsetCommitApi: ApiDefinition = {
  apiKey: ApiKey.OffsetCommit,
  name: "OffsetCommit",
  minVersion: 2,
  maxVersion: 5,
  async handle(ctx, header, reader) {
    const version = header.apiVersion;
    const groupId = reader.string();
    const generationId = reader.int32();
    const memberId = reader.string();
    if (version <= 4) {
      reader.int64(); // retention_time_ms: offsets are kept until the group is deleted
    }
    const topics = reader.array((r) => ({
      name: r.string(),
      partitions: r.array((p) => ({
        partition: p.int32(),
        offset: p.int64Number(),
        metadata: p.nullableString(),
      })),
    }));
    const groupError = ctx.coordinator.validateCommit(groupId, generationId, memberId);
    const accepted: Array<{
      topic: string;
      partition: number;
      offset: number;
      metadata: string | null;
    }> = [];
    const results = topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => {
        let errorCode: number = groupError;
        if (
          errorCode === ErrorCode.NONE &&
          ctx.topics.partition(t.name, p.partition) === undefined
        ) {
          errorCode = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
        }
        if (errorCode === ErrorCode.NONE) {
          accepted.push({
            topic: t.name,
            partition: p.partition,
            offset: p.offset,
            metadata: p.metadata,
          });
        }
        return { partition: p.partition, errorCode };
      }),
    }));
    if (accepted.length > 0) {
      ctx.offsets.commit(groupId, accepted);
      await ctx.flusher?.flush();
    }
    const w = new Writer();
    if (version >= 3) {
      w.int32(0);
    }
    w.array(results, (w, t) => {
      w.string(t.name);
      w.array(t.partitions, (w, p) => {
        w.int32(p.partition).int16(p.errorCode);
      });
    });
    return w;
  },
};

export const offsetFetchApi: ApiDefinition = {
  apiKey: ApiKey.OffsetFetch,
  name: "OffsetFetch",
  minVersion: 1,
  maxVersion: 4,
  handle(ctx, header, reader) {
    const version = header.apiVersion;
    const groupId = reader.string();
    const requested = reader.nullableArray((r) => ({
      name: r.string(),
      partitions: r.array((p) => p.int32()),
    }));
    let topics: Array<{ name: string; partitions: number[] }>;
    if (requested === null && version >= 2) {
      const byTopic = new Map<string, number[]>();
      for (const o of ctx.offsets.listForGroup(groupId)) {
        byTopic.set(o.topic, [...(byTopic.get(o.topic) ?? []), o.partition]);
      }
      topics = [...byTopic].map(([name, partitions]) => ({ name, partitions }));
    } else {
      topics = requested ?? [];
    }
    const w = new Writer();
    if (version >= 3) {
      w.int32(0);
    }
    w.array(topics, (w, t) => {
      w.string(t.name);
      w.array(t.partitions, (w, partition) => {
        const committed = ctx.offsets.get(groupId, t.name, partition);
        w.int32(partition)
          .int64(committed?.offset ?? -1)
          .nullableString(committed ? committed.metadata : "")
          .int16(ErrorCode.NONE);
      });
    });
    if (version >= 2) {
      w.int16(ErrorCode.NONE);
    }
    return w;
  },
};
