import {
  BrokerConnectionError,
  Connection,
  type ConnectionSecurity,
  KafkaSecurityError,
} from "./wire.ts";

/** What `checkKafka` found wrong: the setting to fix and why, ready to print as one line. */
export interface KafkaProblem {
  setting: string;
  reason: string;
  /** True when waiting may mend it (nothing answered yet); false for a refusal. */
  retriable: boolean;
  line: string;
}

const METADATA = 3;
const METADATA_VERSION = 4;

function problem(setting: string, reason: string, retriable: boolean): KafkaProblem {
  return { setting, reason, retriable, line: `Kafka connection failed: ${setting}: ${reason}` };
}

/**
 * Opens one connection the way every client of the process will (TLS, SASL) to the bootstrap
 * brokers in turn and asks for metadata; null when one answered. Run at start-up so a wrong
 * password, an untrusted certificate or a plaintext/TLS mix-up stops the process in one line
 * naming the setting, instead of the Kafka client retrying it for a minute with stack traces.
 */
export async function checkKafka(
  connection: { brokers: readonly string[] } & ConnectionSecurity,
  options: { clientId: string; timeoutMs?: number },
): Promise<KafkaProblem | null> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const security: ConnectionSecurity = {
    ...(connection.tls ? { tls: connection.tls } : {}),
    ...(connection.sasl ? { sasl: connection.sasl } : {}),
  };
  // The broker took the connection (and TLS) and then hung up: it wants something else of us.
  const closedEarly = (broker: string) => {
    const said = `${broker} accepted the connection but closed it without answering`;
    if (!connection.tls) {
      return problem(
        "KAFKA_TLS",
        `${said}: is it a TLS listener (KAFKA_TLS=true) or a SASL one (KAFKA_SASL_MECHANISM)?`,
        false,
      );
    }
    if (connection.tls.cert) {
      return problem(
        "KAFKA_TLS_CERT_FILE",
        `${said}: does it trust this client certificate${connection.sasl ? "" : " (or does it want SASL: KAFKA_SASL_MECHANISM)"}?`,
        false,
      );
    }
    return connection.sasl
      ? problem("KAFKA_BROKERS", `${said}: is it a SASL_SSL listener?`, false)
      : problem(
          "KAFKA_SASL_MECHANISM",
          `${said}: does it want SASL (KAFKA_SASL_MECHANISM) or a client certificate (KAFKA_TLS_CERT_FILE)?`,
          false,
        );
  };
  const unreachable: string[] = [];
  for (const broker of connection.brokers) {
    const separator = broker.lastIndexOf(":");
    const host = broker.slice(0, separator);
    const port = Number(broker.slice(separator + 1));
    let open: Connection | undefined;
    try {
      open = await Connection.open(host, port, options.clientId, security, timeoutMs);
      // No topics: the answer is just the brokers, enough to prove the session works.
      const body = Buffer.alloc(5);
      body.writeInt32BE(0, 0);
      await open.request(METADATA, METADATA_VERSION, [body], timeoutMs);
      return null;
    } catch (error) {
      if (error instanceof KafkaSecurityError) {
        return problem(error.setting, error.message, false);
      }
      if (open || (error instanceof BrokerConnectionError && error.afterConnect)) {
        return closedEarly(broker);
      }
      unreachable.push(
        `${broker} (${(error as Error).message.replace(/^cannot connect to \S+: /, "")})`,
      );
    } finally {
      open?.close();
    }
  }
  return problem(
    "KAFKA_BROKERS",
    `no Kafka broker answers at ${unreachable.join(", ")}: start the system with \`npm start\` (or the dev broker alone with \`npm run broker\`), or set KAFKA_BROKERS to your cluster`,
    true,
  );
}

/**
 * `checkKafka` again while nothing answers, up to `waitMs` (a broker starting with the system);
 * a refusal returns at once. Null once the connection works.
 */
export async function awaitKafka(
  connection: { brokers: readonly string[] } & ConnectionSecurity,
  options: { clientId: string; waitMs: number; onWait?: (problem: KafkaProblem) => void },
): Promise<KafkaProblem | null> {
  const deadline = Date.now() + options.waitMs;
  for (;;) {
    const found = await checkKafka(connection, { clientId: options.clientId });
    if (!found?.retriable || Date.now() >= deadline) {
      return found;
    }
    options.onWait?.(found);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}
