export type { BrokerOptions, BrokerStats, RunningBroker } from "./broker.ts";
export { startBroker } from "./broker.ts";
export type { LogLevel } from "./logger.ts";
