import { connect } from "node:net";

/** Whether something accepts TCP connections at `host:port` within `timeoutMs`. */
function accepts(hostPort: string, timeoutMs: number): Promise<boolean> {
  const separator = hostPort.lastIndexOf(":");
  const host = hostPort.slice(0, separator);
  const port = Number(hostPort.slice(separator + 1));
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

/**
 * Null when at least one of `brokers` accepts a connection, else a line saying so and what to
 * do. Commands run by hand check this first: the Kafka client would retry for about a minute and
 * log every attempt before giving up.
 */
export async function unreachableBrokers(
  brokers: readonly string[],
  timeoutMs = 2000,
): Promise<string | null> {
  const answers = await Promise.all(brokers.map((broker) => accepts(broker, timeoutMs)));
  return answers.includes(true)
    ? null
    : `no Kafka broker answers at ${brokers.join(", ")}: start the system with \`npm start\` (or the dev broker alone with \`npm run broker\`), or set KAFKA_BROKERS to your cluster`;
}
