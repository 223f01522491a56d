// Apache Kafka 4.0 removed the protocol versions older than Kafka 2.1 supported (KIP-896). The
// broker enforces 4.0's minimum by default, so a client path that only works against an old
// cluster fails here first. Figures are Apache Kafka 4.0.0's `validVersions` per request schema.
import { ApiKey } from "./api-keys.ts";

export type ProtocolFloor = "kafka-4.0" | "none";
export const PROTOCOL_FLOORS: readonly ProtocolFloor[] = ["kafka-4.0", "none"];

export function isProtocolFloor(value: string): value is ProtocolFloor {
  return (PROTOCOL_FLOORS as readonly string[]).includes(value);
}

/** Lowest version Apache Kafka 4.0.0 accepts, per API key (absent: nothing was removed, 0). */
export const KAFKA_4_0_MIN_VERSIONS: Readonly<Record<number, number>> = {
  [ApiKey.Produce]: 3,
  [ApiKey.Fetch]: 4,
  [ApiKey.ListOffsets]: 1,
  [ApiKey.Metadata]: 0,
  [ApiKey.OffsetCommit]: 2,
  [ApiKey.OffsetFetch]: 1,
  [ApiKey.FindCoordinator]: 0,
  // 4.0.1 and 4.1 accept JoinGroup v0-v1 again (KAFKA-19444); 4.0.0 is the stricter target.
  [ApiKey.JoinGroup]: 2,
  [ApiKey.Heartbeat]: 0,
  [ApiKey.LeaveGroup]: 0,
  [ApiKey.SyncGroup]: 0,
  [ApiKey.DescribeGroups]: 0,
  [ApiKey.ListGroups]: 0,
  [ApiKey.SaslHandshake]: 0,
  [ApiKey.ApiVersions]: 0,
  [ApiKey.CreateTopics]: 2,
  [ApiKey.DeleteTopics]: 1,
  [ApiKey.InitProducerId]: 0,
  [ApiKey.OffsetForLeaderEpoch]: 2,
  [ApiKey.DescribeConfigs]: 1,
  [ApiKey.AlterConfigs]: 0,
  [ApiKey.AlterReplicaLogDirs]: 1,
  [ApiKey.DescribeLogDirs]: 1,
  [ApiKey.SaslAuthenticate]: 0,
  [ApiKey.CreatePartitions]: 0,
  [ApiKey.DeleteGroups]: 0,
  [ApiKey.IncrementalAlterConfigs]: 0,
};

/**
 * Kafka 4.0 still lists Produce from version 0 in ApiVersions although it rejects v0-v2: older
 * librdkafka releases derive features from that range (KAFKA-18659). Mirrored so librdkafka
 * sees exactly what a 4.0 cluster shows it.
 */
const KAFKA_4_0_ADVERTISED_MIN: Readonly<Record<number, number>> = {
  [ApiKey.Produce]: 0,
};

export interface ApiRange {
  apiKey: number;
  minVersion: number;
  maxVersion: number;
}

export interface VersionRange extends ApiRange {
  /** Lowest version accepted; below it the request gets UNSUPPORTED_VERSION. */
  minVersion: number;
  /** What ApiVersions shows as the minimum (differs from minVersion only for Kafka's quirks). */
  advertisedMinVersion: number;
}

/** The versions the broker accepts and advertises for its APIs under a floor. */
export function versionTable(
  apis: readonly ApiRange[],
  floor: ProtocolFloor,
): Map<number, VersionRange> {
  const table = new Map<number, VersionRange>();
  for (const api of apis) {
    if (floor === "none") {
      table.set(api.apiKey, { ...api, advertisedMinVersion: api.minVersion });
      continue;
    }
    const minVersion = Math.max(api.minVersion, KAFKA_4_0_MIN_VERSIONS[api.apiKey] ?? 0);
    if (minVersion > api.maxVersion) {
      throw new Error(`API ${api.apiKey} has no version at or above Kafka 4.0's floor`);
    }
    table.set(api.apiKey, {
      apiKey: api.apiKey,
      minVersion,
      maxVersion: api.maxVersion,
      advertisedMinVersion: KAFKA_4_0_ADVERTISED_MIN[api.apiKey] ?? minVersion,
    });
  }
  return table;
}
