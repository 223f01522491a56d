import type { FetchPurgatory } from "../fetch-purgatory.ts";
import type { GroupCoordinator } from "../groups/coordinator.ts";
import type { Flusher } from "../log/flusher.ts";
import type { Logger } from "../logger.ts";
import type { OffsetsStore } from "../offsets-store.ts";
import type { VersionRange } from "../protocol/floor.ts";
import type { Reader } from "../protocol/reader.ts";
import type { Writer } from "../protocol/writer.ts";
import type { SaslGate } from "../security/sasl-gate.ts";
import type { TopicRegistry } from "../topics.ts";

export interface RequestHeader {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  clientId: string;
}

export interface ClientConnection {
  readonly clientHost: string;
  readonly closed: boolean;
  /** Kafka's principal: `User:ANONYMOUS`, the SASL user, or the client certificate's subject. */
  readonly principal: string;
  /** The connection's SASL state on a SASL listener, else null. */
  readonly sasl: SaslGate | null;
  authenticatedAs(principal: string): void;
  /** Writes the responses already queued, then closes (after a failed authentication). */
  closeAfterResponse(): void;
  /** SaslHandshake v0 succeeded: the next frames are bare SASL tokens. */
  expectRawSaslTokens(): void;
  /** Registers a callback run once when the socket closes; returns an unregister function. */
  onClose(callback: () => void): () => void;
}

interface BrokerSettings {
  nodeId: number;
  clusterId: string;
  advertisedHost: string;
  advertisedPort: number;
  autoCreateTopics: boolean;
  defaultPartitions: number;
  strictReplicationFactor: boolean;
}

/** One request as the broker saw it, for request logs and version audits. */
export interface RequestLogEntry {
  apiKey: number;
  apiVersion: number;
  clientId: string;
  principal: string;
}

export interface BrokerContext {
  settings: BrokerSettings;
  /** Accepted and advertised versions per API key for this listener (floor applied). */
  versions: ReadonlyMap<number, VersionRange>;
  onRequest: ((entry: RequestLogEntry) => void) | null;
  /** BrokerOptions.produceAckDelayMs: a test hook that holds produce responses. */
  produceAckDelayMs: (() => number) | null;
  topics: TopicRegistry;
  offsets: OffsetsStore;
  coordinator: GroupCoordinator;
  purgatory: FetchPurgatory;
  /** Null in memory mode: nothing to fsync. */
  flusher: Flusher | null;
  logger: Logger;
  allocateProducerId(): number;
  stats: { messagesAppended: number; bytesAppended: number; failedAuthentications: number };
}

/** A null result means "send nothing" (acks=0 produce) while keeping the response order slot. */
type HandlerResult = Writer | null;

export interface ApiDefinition {
  apiKey: number;
  name: string;
  minVersion: number;
  maxVersion: number;
  /**
   * The first flexible version (KIP-482), if any: from it on the request header is v2, whose
   * tagged fields the connection reads before the handler reads the body.
   */
  firstFlexibleVersion?: number;
  handle(
    ctx: BrokerContext,
    header: RequestHeader,
    reader: Reader,
    connection: ClientConnection,
  ): HandlerResult | Promise<HandlerResult>;
}
