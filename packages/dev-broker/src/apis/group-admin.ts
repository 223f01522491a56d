// DescribeGroups v0-v2, ListGroups v0-v2, DeleteGroups v0-v1.
import { ApiKey } from "../protocol/api-keys.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { Writer } from "../protocol/writer.ts";
import type { ApiDefinition } from "./types.ts";

export const describeGroupsApi: ApiDefinition = {
  apiKey: ApiKey.DescribeGroups,
  name: "DescribeGroups",
  minVersion: 0,
  maxVersion: 2,
  handle(ctx, header, reader) {
    const groups = reader.array((r) => r.string()).map((id) => ctx.coordinator.describe(id));
    const w = new Writer();
    if (header.apiVersion >= 1) {
      w.int32(0);
    }
    w.array(groups, (w, g) => {
      w.int16(g.errorCode)
        .string(g.groupId)
        .string(g.state)
        .string(g.protocolType)
        .string(g.protocol);
      w.array(g.members, (w, m) => {
        w.string(m.memberId)
          .string(m.clientId)
          .string(m.clientHost)
          .bytes(m.metadata)
          .bytes(m.assignment);
      });
    });
    return w;
  },
};

export const listGroupsApi: ApiDefinition = {
  apiKey: ApiKey.ListGroups,
  name: "ListGroups",
  minVersion: 0,
  maxVersion: 2,
  handle(ctx, header) {
    const w = new Writer();
    if (header.apiVersion >= 1) {
      w.int32(0);
    }
    w.int16(ErrorCode.NONE);
    w.array(ctx.coordinator.list(), (w, g) => {
      w.string(g.groupId).string(g.protocolType);
    });
    return w;
  },
};

export const deleteGroupsApi: ApiDefinition = {
  apiKey: ApiKey.DeleteGroups,
  name: "DeleteGroups",
  minVersion: 0,
  maxVersion: 1,
  async handle(ctx, _header, reader) {
    const results = reader
      .array((r) => r.string())
      .map((groupId) => ({ groupId, errorCode: ctx.coordinator.delete(groupId) }));
    await ctx.flusher?.flush();
    const w = new Writer();
    w.int32(0);
    w.array(results, (w, r) => {
      w.string(r.groupId).int16(r.errorCode);
    });
    return w;
  },
};
