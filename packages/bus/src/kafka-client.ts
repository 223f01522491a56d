import type { Logger } from "@th/telemetry";
import { Kafka, logLevel } from "kafkajs";
import type { ConnectionSecurity } from "./wire.ts";

const KAFKA_TO_PINO = {
  [logLevel.ERROR]: "error",
  [logLevel.WARN]: "warn",
  [logLevel.INFO]: "info",
  [logLevel.DEBUG]: "debug",
  [logLevel.NOTHING]: "silent",
} as const;

/** kafkajs's client for these brokers and settings, logging through `logger`. */
export function kafkaClient(
  options: ConnectionSecurity & {
    clientId: string;
    brokers: readonly string[];
    retries?: number | undefined;
  },
  logger: Logger,
): Kafka {
  const { tls, sasl } = options;
  return new Kafka({
    clientId: options.clientId,
    brokers: [...options.brokers],
    ...(tls
      ? {
          ssl: {
            rejectUnauthorized: true,
            ...(tls.ca ? { ca: [tls.ca] } : {}),
            ...(tls.cert ? { cert: tls.cert } : {}),
            ...(tls.key ? { key: tls.key } : {}),
            ...(tls.servername ? { servername: tls.servername } : {}),
          },
          // A TLS handshake on a busy node can outlast kafkajs's one-second default.
          connectionTimeout: 5000,
        }
      : {}),
    ...(sasl
      ? {
          sasl:
            sasl.mechanism === "plain"
              ? { mechanism: "plain" as const, username: sasl.username, password: sasl.password }
              : sasl.mechanism === "scram-sha-256"
                ? {
                    mechanism: "scram-sha-256" as const,
                    username: sasl.username,
                    password: sasl.password,
                  }
                : {
                    mechanism: "scram-sha-512" as const,
                    username: sasl.username,
                    password: sasl.password,
                  },
        }
      : {}),
    logLevel: logLevel.WARN,
    retry: { initialRetryTime: 200, retries: options.retries ?? 8 },
    logCreator:
      () =>
      ({ level, log }) => {
        const { message, ...extra } = log;
        const method = KAFKA_TO_PINO[level as keyof typeof KAFKA_TO_PINO] ?? "info";
        if (method !== "silent") {
          logger[method]({ kafka: extra }, message);
        }
      },
  });
}
