// FindCoordinator v0-v2, JoinGroup v0-v5, SyncGroup v0-v3, Heartbeat v0-v3, LeaveGroup v0-v3.
// kafkajs negotiates the maximum of each; v4+ JoinGroup makes a new member round-trip through
// MEMBER_ID_REQUIRED. group_instance_id (static membership) is read and ignored.
import type { JoinResult, SyncResult } from "../groups/coordinator.ts";
import { ApiKey } from "../protocol/api-keys.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { Writer } from "../protocol/writer.ts";
import type { ApiDefinition } from "./types.ts";

const GROUP_KEY_TYPE = 0;

export const findCoordinatorApi: ApiDefinition = {
  apiKey: ApiKey.FindCoordinator,
  name: "FindCoordinator",
  minVersion: 0,
  maxVersion: 2,
  handle(ctx, header, reader) {
    const version = header.apiVersion;
    reader.string(); // coordinator key
    const keyType = version >= 1 ? reader.int8() : GROUP_KEY_TYPE;
    // Transaction coordinators are not offered: transactions are out of scope.
    const errorCode = keyType === GROUP_KEY_TYPE ? ErrorCode.NONE : ErrorCode.INVALID_REQUEST;
    const { nodeId, advertisedHost, advertisedPort } = ctx.settings;
    const w = new Writer();
    if (version >= 1) {
      w.int32(0);
    }
    w.int16(errorCode);
    if (version >= 1) {
      w.nullableString(errorCode === ErrorCode.NONE ? null : "transactions are not supported");
    }
    w.int32(errorCode === ErrorCode.NONE ? nodeId : -1)
      .string(errorCode === ErrorCode.NONE ? advertisedHost : "")
      .int32(errorCode === ErrorCode.NONE ? advertisedPort : -1);
    return w;
  },
};

function encodeJoin(version: number, result: JoinResult): Writer {
  const w = new Writer();
  if (version >= 2) {
    w.int32(0);
  }
  w.int16(result.errorCode)
    .int32(result.generationId)
    .string(result.protocolName)
    .string(result.leaderId)
    .string(result.memberId);
  w.array(result.members, (w, m) => {
    w.string(m.memberId);
    if (version >= 5) {
      w.nullableString(null);
    }
    w.bytes(m.metadata);
  });
  return w;
}

export const joinGroupApi: ApiDefinition = {
  apiKey: ApiKey.JoinGroup,
  name: "JoinGroup",
  minVersion: 0,
  maxVersion: 5,
  async handle(ctx, header, reader, connection) {
    const version = header.apiVersion;
    const groupId = reader.string();
    const sessionTimeoutMs = reader.int32();
    const rebalanceTimeoutMs = version >= 1 ? reader.int32() : sessionTimeoutMs;
    const memberId = reader.string();
    if (version >= 5) {
      reader.nullableString(); // group_instance_id
    }
    const protocolType = reader.string();
    const protocols = reader.array((r) => ({ name: r.string(), metadata: Buffer.from(r.bytes()) }));
    const result = await ctx.coordinator.join({
      groupId,
      sessionTimeoutMs,
      rebalanceTimeoutMs,
      memberId,
      protocolType,
      protocols,
      clientId: header.clientId,
      clientHost: connection.clientHost,
      requireKnownMemberId: version >= 4,
    });
    return encodeJoin(version, result);
  },
};

function encodeSync(version: number, result: SyncResult): Writer {
  const w = new Writer();
  if (version >= 1) {
    w.int32(0);
  }
  return w.int16(result.errorCode).bytes(result.assignment);
}

export const syncGroupApi: ApiDefinition = {
  apiKey: ApiKey.SyncGroup,
  name: "SyncGroup",
  minVersion: 0,
  maxVersion: 3,
  async handle(ctx, header, reader) {
    const groupId = reader.string();
    const generationId = reader.int32();
    const memberId = reader.string();
    if (header.apiVersion >= 3) {
      reader.nullableString(); // group_instance_id
    }
    const assignments = reader.array((r) => ({
      memberId: r.string(),
      assignment: Buffer.from(r.bytes()),
    }));
    const result = await ctx.coordinator.sync(groupId, generationId, memberId, assignments);
    return encodeSync(header.apiVersion, result);
  },
};

export const heartbeatApi: ApiDefinition = {
  apiKey: ApiKey.Heartbeat,
  name: "Heartbeat",
  minVersion: 0,
  maxVersion: 3,
  handle(ctx, header, reader) {
    const groupId = reader.string();
    const generationId = reader.int32();
    const memberId = reader.string();
    const errorCode = ctx.coordinator.heartbeat(groupId, generationId, memberId);
    const w = new Writer(16);
    if (header.apiVersion >= 1) {
      w.int32(0);
    }
    return w.int16(errorCode);
  },
};

export const leaveGroupApi: ApiDefinition = {
  apiKey: ApiKey.LeaveGroup,
  name: "LeaveGroup",
  minVersion: 0,
  maxVersion: 3,
  handle(ctx, header, reader) {
    const version = header.apiVersion;
    const groupId = reader.string();
    const w = new Writer();
    if (version >= 1) {
      w.int32(0);
    }
    if (version < 3) {
      return w.int16(ctx.coordinator.leave(groupId, reader.string()));
    }
    const members = reader.array((r) => ({
      memberId: r.string(),
      groupInstanceId: r.nullableString(),
    }));
    const results = members.map((m) => ({
      ...m,
      errorCode: ctx.coordinator.leave(groupId, m.memberId),
    }));
    w.int16(ErrorCode.NONE);
    w.array(results, (w, m) => {
      w.string(m.memberId).nullableString(m.groupInstanceId).int16(m.errorCode);
    });
    return w;
  },
};
