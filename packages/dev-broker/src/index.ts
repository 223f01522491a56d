export type { RequestLogEntry } from "./apis/types.ts";
export type { BrokerOptions, BrokerStats, RunningBroker } from "./broker.ts";
export { startBroker } from "./broker.ts";
export type { LogLevel } from "./logger.ts";
export { ApiKey } from "./protocol/api-keys.ts";
export { KAFKA_4_0_MIN_VERSIONS, type ProtocolFloor } from "./protocol/floor.ts";
export type {
  ClientAuth,
  SaslListenerOptions,
  SecurityProtocol,
  TlsListenerOptions,
} from "./security/listener.ts";
export type { SaslMechanism } from "./security/sasl.ts";
