// Wires the network server to topics, offsets, the group coordinator and the flusher.
import { mkdirSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { resolve } from "node:path";
import { createServer as createTlsServer, type TLSSocket } from "node:tls";
import { SASL_APIS, SUPPORTED_APIS } from "./apis/index.ts";
import type { BrokerContext, RequestLogEntry } from "./apis/types.ts";
import { Connection, type ConnectionSecurity, type ConnectionStats } from "./connection.ts";
import { FetchPurgatory } from "./fetch-purgatory.ts";
import { GroupCoordinator } from "./groups/coordinator.ts";
import { Flusher } from "./log/flusher.ts";
import { DEFAULT_TOPIC_CONFIG, type TopicConfig } from "./log/topic-config.ts";
import { createLogger, type Logger, type LogLevel } from "./logger.ts";
import { OffsetsStore } from "./offsets-store.ts";
import { type ProtocolFloor, versionTable } from "./protocol/floor.ts";
import {
  peerPrincipal,
  resolveListenerSecurity,
  type SaslListenerOptions,
  type SecurityProtocol,
  type TlsListenerOptions,
} from "./security/listener.ts";
import { SaslGate } from "./security/sasl-gate.ts";
import { TopicRegistry } from "./topics.ts";

/** A further listener of the same broker: its own port and security, the same data. */
interface ListenerOptions {
  /** Default 0: a free port. */
  port?: number;
  securityProtocol?: SecurityProtocol;
  tls?: TlsListenerOptions;
  sasl?: SaslListenerOptions;
}

interface RunningListener {
  securityProtocol: SecurityProtocol;
  port: number;
  brokers: string[];
}

export interface BrokerOptions {
  /** 0 picks a free port; the bound port is what gets advertised. Default 9092. */
  port?: number;
  host?: string;
  /** Host written into Metadata; defaults to `host`, or 127.0.0.1 when listening on 0.0.0.0/::. */
  advertisedHost?: string;
  /** Without a data directory everything is kept in memory (tests). */
  dataDir?: string;
  /** Off by default, like production clusters with auto.create.topics.enable=false. */
  autoCreateTopics?: boolean;
  defaultPartitions?: number;
  logLevel?: LogLevel;
  /** Kafka's group.min.session.timeout.ms (6000); tests may lower it. */
  minSessionTimeoutMs?: number;
  maxSessionTimeoutMs?: number;
  /** Kafka's group.initial.rebalance.delay.ms (3000 there; 0 here so dev consumers start fast). */
  initialRebalanceDelayMs?: number;
  /** Broker-wide message.max.bytes; a topic's max.message.bytes overrides it. */
  maxMessageBytes?: number;
  /** socket.request.max.bytes: larger frames close the connection. */
  maxRequestBytes?: number;
  /** Defaults for topics that do not set retention.ms / retention.bytes / segment.bytes / segment.ms. */
  retentionMs?: number;
  retentionBytes?: number;
  segmentBytes?: number;
  segmentMs?: number;
  retentionCheckIntervalMs?: number;
  /** Background fsync of acks=0/1 data and everything else not yet synced. */
  flushIntervalMs?: number;
  /** Refuse replication factors above 1 (default: accept and ignore, so provisioning code runs). */
  strictReplicationFactor?: boolean;
  clusterId?: string;
  /**
   * Kafka's listener security protocol. Default PLAINTEXT; SSL and SASL_SSL need `tls`,
   * SASL_PLAINTEXT and SASL_SSL need `sasl`.
   */
  securityProtocol?: SecurityProtocol;
  tls?: TlsListenerOptions;
  sasl?: SaslListenerOptions;
  /** Lowest protocol versions accepted: Apache Kafka 4.0's (default) or whatever is implemented. */
  protocolFloor?: ProtocolFloor;
  /** Called for every request the broker reads (before it is checked or answered). */
  onRequest?: (entry: RequestLogEntry) => void;
  /**
   * A test hook: milliseconds to hold each produce response after its records were appended
   * (and flushed), asked per request. A broker that appends but acknowledges late, as a stalled
   * one does.
   */
  produceAckDelayMs?: () => number;
  /**
   * More listeners, as a Kafka broker may have (say an internal PLAINTEXT one next to SASL_SSL).
   * Metadata answers each client with the address of the listener it came through.
   */
  additionalListeners?: readonly ListenerOptions[];
}

export interface BrokerStats {
  requestsByApiVersion: Record<string, number>;
  bytesIn: number;
  bytesOut: number;
  connectionsAccepted: number;
  openConnections: number;
  messagesAppended: number;
  bytesAppended: number;
  parkedFetches: number;
  truncatedBytesOnRecovery: number;
  retentionBytesFreed: number;
  commitsDuringRebalance: number;
  /** SASL exchanges refused (wrong password, unknown user, bad proof). */
  failedAuthentications: number;
}

export interface RunningBroker {
  host: string;
  port: number;
  securityProtocol: SecurityProtocol;
  brokers: string[];
  /** Every listener, the primary one (`port`, `securityProtocol`, `brokers`) first. */
  listeners: RunningListener[];
  dataDir: string | null;
  stats: BrokerStats;
  /** Runs retention now instead of waiting for the next check interval. */
  enforceRetention(): number;
  stop(): Promise<void>;
}

type ListenerSpec = ReturnType<typeof listenerSpecsOf>[number];

interface OpenListener {
  server: Server;
  port: number;
  protocol: SecurityProtocol;
}

/** The stores behind every listener: topics, offsets, groups, parked fetches and the flusher. */
interface BrokerStores {
  topics: TopicRegistry;
  offsets: OffsetsStore;
  coordinator: GroupCoordinator;
  purgatory: FetchPurgatory;
  flusher: Flusher | null;
}

/** Each listener's port, security and protocol versions, checked before any file is touched. */
function listenerSpecsOf(options: BrokerOptions) {
  return [
    { ...options, port: options.port ?? 9092 },
    ...(options.additionalListeners ?? []).map((l) => ({ ...l, port: l.port ?? 0 })),
  ].map((spec) => {
    const security = resolveListenerSecurity(
      spec.securityProtocol ?? "PLAINTEXT",
      spec.tls,
      spec.sasl,
    );
    const versions = versionTable(
      [...SUPPORTED_APIS, ...(security.sasl === null ? [] : SASL_APIS)].sort(
        (a, b) => a.apiKey - b.apiKey,
      ),
      options.protocolFloor ?? "kafka-4.0",
    );
    return { port: spec.port, security, versions };
  });
}

function topicDefaultsOf(options: BrokerOptions): TopicConfig {
  return {
    retentionMs: options.retentionMs ?? DEFAULT_TOPIC_CONFIG.retentionMs,
    retentionBytes: options.retentionBytes ?? DEFAULT_TOPIC_CONFIG.retentionBytes,
    segmentBytes: options.segmentBytes ?? DEFAULT_TOPIC_CONFIG.segmentBytes,
    segmentMs: options.segmentMs ?? DEFAULT_TOPIC_CONFIG.segmentMs,
    maxMessageBytes: options.maxMessageBytes ?? DEFAULT_TOPIC_CONFIG.maxMessageBytes,
  };
}

/** Opens the stores, recovering the logs from the data directory when there is one. */
function openStores(
  options: BrokerOptions,
  dataDir: string | null,
  logger: Logger,
): BrokerStores & { truncatedBytesOnRecovery: number } {
  if (dataDir !== null) {
    mkdirSync(dataDir, { recursive: true });
  }
  const flusher = dataDir === null ? null : new Flusher();
  const topics = new TopicRegistry(dataDir, flusher, topicDefaultsOf(options));
  const truncatedBytesOnRecovery = topics.load();
  if (truncatedBytesOnRecovery > 0) {
    logger.warn("truncated torn log tails on recovery", { bytes: truncatedBytesOnRecovery });
  }
  const offsets = new OffsetsStore(dataDir, flusher);
  const coordinator = new GroupCoordinator(
    {
      minSessionTimeoutMs: options.minSessionTimeoutMs ?? 6000,
      maxSessionTimeoutMs: options.maxSessionTimeoutMs ?? 1_800_000,
      initialRebalanceDelayMs: options.initialRebalanceDelayMs ?? 0,
      logger,
    },
    offsets,
  );
  return {
    topics,
    offsets,
    coordinator,
    purgatory: new FetchPurgatory(),
    flusher,
    truncatedBytesOnRecovery,
  };
}

function closeStores(stores: BrokerStores): void {
  stores.coordinator.close();
  stores.offsets.close();
  stores.topics.close();
}

function emptyStats(truncatedBytesOnRecovery: number): BrokerStats {
  return {
    requestsByApiVersion: {},
    bytesIn: 0,
    bytesOut: 0,
    connectionsAccepted: 0,
    openConnections: 0,
    messagesAppended: 0,
    bytesAppended: 0,
    parkedFetches: 0,
    truncatedBytesOnRecovery,
    retentionBytesFreed: 0,
    commitsDuringRebalance: 0,
    failedAuthentications: 0,
  };
}

function settingsOf(options: BrokerOptions, host: string): BrokerContext["settings"] {
  return {
    nodeId: 0,
    clusterId: options.clusterId ?? "dev-broker",
    advertisedHost:
      options.advertisedHost ?? (host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host),
    advertisedPort: 0,
    autoCreateTopics: options.autoCreateTopics ?? false,
    defaultPartitions: options.defaultPartitions ?? 1,
    strictReplicationFactor: options.strictReplicationFactor ?? false,
  };
}

/** What every listener shares: the broker context, its open connections and the frame limit. */
interface ListenerShared {
  ctx: BrokerContext;
  host: string;
  connections: Set<Connection>;
  stats: BrokerStats;
  maxRequestBytes: number;
}

/** A plain socket server, or a TLS one that closes clients whose certificate is not trusted. */
function socketServer(
  spec: ListenerSpec,
  logger: Logger,
  accept: (socket: Socket, principal: string) => void,
): Server {
  if (spec.security.tls === null) {
    return createServer((socket: Socket) => accept(socket, "User:ANONYMOUS"));
  }
  const tlsServer = createTlsServer(spec.security.tls, (socket: TLSSocket) => {
    const principal = peerPrincipal(socket);
    if (principal === null) {
      logger.info("closing TLS connection: client certificate not trusted", {
        reason: String(socket.authorizationError),
      });
      socket.destroy();
      return;
    }
    // With SASL on top, the SASL user becomes the principal once authenticated.
    accept(socket, principal);
  });
  tlsServer.on("tlsClientError", (error) => {
    logger.info("TLS handshake failed", { error: error.message });
  });
  return tlsServer;
}

async function openListener(spec: ListenerSpec, shared: ListenerShared): Promise<OpenListener> {
  const { ctx, connections } = shared;
  const { security } = spec;
  // Each listener answers Metadata and FindCoordinator with its own address, as Kafka does.
  const listenerCtx: BrokerContext = {
    ...ctx,
    settings: { ...ctx.settings },
    versions: spec.versions,
  };
  const { stats } = shared;
  const accept = (socket: Socket, principal: string): void => {
    const connectionSecurity: ConnectionSecurity = {
      principal,
      sasl: security.sasl === null ? null : new SaslGate(security.sasl),
    };
    const connectionStats: ConnectionStats = stats;
    const connection = new Connection(
      socket,
      listenerCtx,
      connectionStats,
      shared.maxRequestBytes,
      connectionSecurity,
    );
    connections.add(connection);
    stats.connectionsAccepted++;
    stats.openConnections++;
    socket.on("close", () => {
      connections.delete(connection);
      stats.openConnections--;
    });
  };
  const server = socketServer(spec, ctx.logger, accept);
  await new Promise<void>((resolvePromise, reject) => {
    server.once("error", reject);
    server.listen(spec.port, shared.host, () => {
      server.off("error", reject);
      resolvePromise();
    });
  });
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  listenerCtx.settings.advertisedPort = port;
  return { server, port, protocol: security.protocol };
}

/** Opens every listener in order; on a failure (a port in use) closes what was opened. */
async function openListeners(
  specs: readonly ListenerSpec[],
  shared: ListenerShared,
  stores: BrokerStores,
): Promise<OpenListener[]> {
  const listeners: OpenListener[] = [];
  try {
    for (const spec of specs) {
      listeners.push(await openListener(spec, shared));
    }
    return listeners;
  } catch (error) {
    // Undo what was opened so the caller may retry or exit cleanly.
    await Promise.all(listeners.map((l) => new Promise((r) => l.server.close(r))));
    closeStores(stores);
    throw error;
  }
}

/** Retention on its interval and, with a data directory, background fsync on its own. */
function startHousekeeping(
  options: BrokerOptions,
  stores: BrokerStores,
  stats: BrokerStats,
  logger: Logger,
): { enforceRetention(): number; stop(): void } {
  const { topics, flusher } = stores;
  const enforceRetention = (): number => {
    let freed = 0;
    const now = Date.now();
    for (const topic of topics.topics.values()) {
      for (const partition of topic.partitions) {
        freed += partition.enforceRetention(now);
      }
    }
    stats.retentionBytesFreed += freed;
    return freed;
  };
  const retentionTimer = setInterval(enforceRetention, options.retentionCheckIntervalMs ?? 60_000);
  retentionTimer.unref();
  const flushTimer =
    flusher === null
      ? null
      : setInterval(() => {
          flusher.flush().catch((error: unknown) => {
            logger.error("background fsync failed", { error: String(error) });
          });
        }, options.flushIntervalMs ?? 1000);
  flushTimer?.unref();
  return {
    enforceRetention,
    stop() {
      clearInterval(retentionTimer);
      if (flushTimer !== null) {
        clearInterval(flushTimer);
      }
    },
  };
}

/** Stops taking connections, answers parked fetches, drops clients, then syncs and closes. */
async function stopBroker(
  listeners: readonly OpenListener[],
  connections: ReadonlySet<Connection>,
  stores: BrokerStores,
): Promise<void> {
  const closed = Promise.all(
    listeners.map((l) => new Promise<void>((r) => l.server.close(() => r()))),
  );
  stores.purgatory.completeWhere(() => true);
  for (const c of connections) {
    c.destroy();
  }
  await closed;
  stores.coordinator.close();
  await stores.flusher?.flush();
  stores.offsets.close();
  stores.topics.close();
}

export async function startBroker(options: BrokerOptions = {}): Promise<RunningBroker> {
  const logger = createLogger(options.logLevel ?? "warn");
  // Checked before anything touches the data directory, so a bad setting changes nothing.
  const listenerSpecs = listenerSpecsOf(options);
  const dataDir = options.dataDir === undefined ? null : resolve(options.dataDir);
  const { truncatedBytesOnRecovery, ...stores } = openStores(options, dataDir, logger);
  // Producer ids must never repeat across restarts: continue above anything found in the logs.
  let nextProducerId = Math.max(stores.topics.maxProducerIdSeen() + 1, 1000);
  const stats = emptyStats(truncatedBytesOnRecovery);
  const host = options.host ?? "127.0.0.1";
  const settings = settingsOf(options, host);
  const ctx: BrokerContext = {
    settings,
    versions: (listenerSpecs[0] as ListenerSpec).versions,
    onRequest: options.onRequest ?? null,
    produceAckDelayMs: options.produceAckDelayMs ?? null,
    ...stores,
    logger,
    allocateProducerId: () => nextProducerId++,
    stats,
  };
  const connections = new Set<Connection>();
  const maxRequestBytes = options.maxRequestBytes ?? 100 * 1024 * 1024;
  const listeners = await openListeners(
    listenerSpecs,
    { ctx, host, connections, stats, maxRequestBytes },
    stores,
  );
  const primary = listeners[0] as OpenListener;
  const port = primary.port;
  settings.advertisedPort = port;

  const housekeeping = startHousekeeping(options, stores, stats, logger);
  Object.defineProperty(stats, "commitsDuringRebalance", {
    enumerable: true,
    get: () => stores.coordinator.commitsDuringRebalance,
  });
  Object.defineProperty(stats, "parkedFetches", {
    enumerable: true,
    get: () => stores.purgatory.size,
  });

  logger.info("broker listening", {
    host,
    port,
    dataDir,
    securityProtocols: listeners.map((l) => `${l.protocol}:${l.port}`),
    protocolFloor: options.protocolFloor ?? "kafka-4.0",
  });

  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      housekeeping.stop();
      await stopBroker(listeners, connections, stores);
      logger.info("broker stopped");
    })();
    return stopping;
  };

  return {
    host: settings.advertisedHost,
    port,
    securityProtocol: primary.protocol,
    brokers: [`${settings.advertisedHost}:${port}`],
    listeners: listeners.map((l) => ({
      securityProtocol: l.protocol,
      port: l.port,
      brokers: [`${settings.advertisedHost}:${l.port}`],
    })),
    dataDir,
    stats,
    enforceRetention: housekeeping.enforceRetention,
    stop,
  };
}
